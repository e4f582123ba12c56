"""ember_onnxrt: backend "onnxrt" — runs ember graphs in onnxruntime.

The pipeline (one module per step):

* ``ember_aot``           torch-level fx graph -> functional aten inference graph
* :mod:`.decompositions`  which aten ops ember_aot decomposes for ONNX
* :mod:`.torchlib_bridge` aten node -> ONNX IR nodes through onnxscript's torch_lib functions
* :mod:`.converter`       aten (sub)graph -> ONNX model; which nodes it can convert
* :mod:`.partition`       split the graph into onnxruntime pieces and PyTorch eager pieces
* :mod:`.session`         one InferenceSession per piece, zero-copy IO binding
* :mod:`.cache`           optional on-disk cache of converted models
* :mod:`.options`         the ``options=`` dict the backend accepts
* :mod:`.backend`         the compiler entry point ``onnxrt(gm, example_inputs, ...)``

Nothing heavy (onnxruntime, onnx, onnxscript) is imported by this package's ``__init__``.
"""
