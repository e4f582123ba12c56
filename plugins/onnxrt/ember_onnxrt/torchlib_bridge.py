"""Translate one aten fx node into ONNX IR nodes with onnxscript's torch_lib.

torch_lib (``onnxscript.function_libs.torch_lib``) holds one ONNX Script function per aten
overload; the glue that matches an fx node to its function and records the ONNX nodes the
function emits (``ONNXRegistry``, ``dispatch``, ``OpRecorder``) ships with torch's ONNX exporter
in ``torch.onnx._internal.exporter``. Those are private modules, so this file is the only one
that imports them: if a torch release moves them, this is the file to change. None of them
runs torch's graph exporter (the export API ember must not use), and neither does the
type-promotion pass of ``torch.onnx._internal.fx.passes``.
"""
from __future__ import annotations

import functools
import logging
import operator
from typing import Any, Sequence

import onnx_ir as ir
import onnxscript
import onnxscript.evaluator
import torch
import torch.fx
from torch.onnx._internal.exporter import _building, _dispatching, _registration, _tensors
from torch.onnx._internal.fx import passes as _fx_passes

#: The ONNX value (or values, for multi-output aten ops) each fx node produced.
ValueMap = dict[str, "ir.Value | Sequence[ir.Value]"]

_TORCH_TO_ONNX: dict[torch.dtype, ir.DataType] = {
    torch.float32: ir.DataType.FLOAT,
    torch.float64: ir.DataType.DOUBLE,
    torch.float16: ir.DataType.FLOAT16,
    torch.bfloat16: ir.DataType.BFLOAT16,
    torch.int8: ir.DataType.INT8,
    torch.int16: ir.DataType.INT16,
    torch.int32: ir.DataType.INT32,
    torch.int64: ir.DataType.INT64,
    torch.uint8: ir.DataType.UINT8,
    torch.bool: ir.DataType.BOOL,
}


def onnx_dtype(dtype: torch.dtype) -> ir.DataType:
    """The ONNX element type of a torch dtype (KeyError for dtypes ONNX cannot hold)."""
    return _TORCH_TO_ONNX[dtype]


def supported_dtypes() -> frozenset[torch.dtype]:
    return frozenset(_TORCH_TO_ONNX)


@functools.lru_cache(maxsize=4)
def registry(opset_version: int = 18) -> _registration.ONNXRegistry:
    """The aten -> torch_lib function registry for ``opset_version`` (built once: it is slow to build)."""
    reg_log = logging.getLogger(_registration.__name__)
    level = reg_log.level
    reg_log.setLevel(logging.ERROR)  # silence "torchvision is not installed" notes
    try:
        return _registration.ONNXRegistry.from_torchlib(opset_version)
    finally:
        reg_log.setLevel(level)


def insert_type_promotion(gm: torch.fx.GraphModule) -> None:
    """Make PyTorch's implicit type promotion explicit (in place): aten ops accept mixed
    dtypes (float * int64, sum of int32 -> int64), ONNX ops do not, so casts are inserted as
    ``prims.convert_element_type`` nodes."""
    _fx_passes.InsertTypePromotion(gm).run()


def new_input(name: str, meta: torch.Tensor, opset_version: int) -> ir.Value:
    """A graph input value typed like the fake tensor ``meta``."""
    value = _tensors.SymbolicTensor(onnxscript.values.Opset("", opset_version), name=name)
    set_type(value, meta)
    return value


def set_type(value: ir.Value, meta: Any) -> None:
    """Give ``value`` the dtype and static shape of ``meta`` (a tensor, or a Python scalar)."""
    if isinstance(meta, torch.Tensor):
        if value.dtype is None:
            value.dtype = onnx_dtype(meta.dtype)
        value.shape = ir.Shape([int(d) for d in meta.shape])
    elif isinstance(meta, bool):
        value.dtype, value.shape = ir.DataType.BOOL, ir.Shape([])
    elif isinstance(meta, int):
        value.dtype, value.shape = ir.DataType.INT64, ir.Shape([])
    elif isinstance(meta, float):
        value.dtype, value.shape = ir.DataType.FLOAT, ir.Shape([])


def _to_onnx_arg(arg: Any, values: ValueMap) -> Any:
    """An fx argument as torch_lib expects it: nodes -> values, dtypes -> ONNX type ints."""
    if isinstance(arg, torch.fx.Node):
        return values[arg.name]
    if isinstance(arg, (list, tuple)):
        return [_to_onnx_arg(a, values) for a in arg]
    if isinstance(arg, (torch.device, torch.memory_format, torch.layout)):
        return str(arg)
    if isinstance(arg, torch.dtype):
        return onnx_dtype(arg)
    return arg


class NodeTranslator:
    """Emits the ONNX nodes of aten fx nodes into one ONNX graph under construction."""

    def __init__(self, model: ir.Model, opset_version: int) -> None:
        self.model = model
        self.opset_version = opset_version
        self.opset = onnxscript.values.Opset("", opset_version)
        self.registry = registry(opset_version)
        self.constant_farm: dict[Any, ir.Value] = {}

    def can_dispatch(self, node: torch.fx.Node) -> str:
        """"" when torch_lib has a function for ``node.target``, else why not."""
        if not self.registry.is_registered(node.target):
            return f"no torch_lib function for {node.target}"
        function, message = _dispatching.dispatch(node, self.registry)
        return "" if function is not None else message

    def translate(self, node: torch.fx.Node, values: ValueMap) -> list[ir.Node]:
        """Record ``node``'s ONNX nodes, store its output value(s) in ``values``, return the nodes."""
        if node.target is operator.getitem:
            source = values[node.args[0].name]  # type: ignore[union-attr]
            if isinstance(source, Sequence):  # a multi-output op: pick one of its values
                values[node.name] = source[node.args[1]]  # type: ignore[index]
                return []
            # else an ONNX tensor sequence (e.g. from split): torch_lib emits SequenceAt
        function, message = _dispatching.dispatch(node, self.registry)
        if function is None:
            raise NotImplementedError(f"{node.target}: {message}")
        args = [_to_onnx_arg(a, values) for a in node.args]
        kwargs = {k: _to_onnx_arg(v, values) for k, v in node.kwargs.items()}
        if kwargs.get("dtype", 0) is None:
            kwargs["dtype"] = -1  # torch_lib's spelling of "no dtype given"
        recorder = _building.OpRecorder(self.opset, self.constant_farm)
        with onnxscript.evaluator.default_as(recorder):
            outputs = function(*args, **kwargs)
        for identifier, fn in recorder.functions.items():
            if identifier not in self.model.functions:
                self.model.functions[identifier] = (
                    fn if isinstance(fn, ir.Function)
                    else ir.serde.deserialize_function(fn.to_function_proto())
                )
        nodes = list(recorder.nodes)
        meta = node.meta["val"]
        if isinstance(outputs, Sequence) and not isinstance(outputs, ir.Value):
            outs = [self._own(o, nodes) for o in outputs]
            for i, (out, m) in enumerate(zip(outs, meta)):
                out.name = f"{node.name}__{i}"
                set_type(out, m)
            values[node.name] = outs
        else:
            out = self._own(outputs, nodes)
            out.name = node.name
            set_type(out, meta)
            values[node.name] = out
        return nodes

    @staticmethod
    def _own(value: ir.Value, nodes: list[ir.Node]) -> ir.Value:
        """``value`` if one of ``nodes`` produced it, else a fresh Identity of it.

        Some torch_lib functions return their input unchanged (``contiguous``, no-op casts);
        the fx node still needs a value of its own, with its own name.
        """
        if value.producer() is not None and any(value.producer() is n for n in nodes):
            return value
        identity = ir.Node("", "Identity", [value], num_outputs=1)
        nodes.append(identity)
        return identity.outputs[0]
