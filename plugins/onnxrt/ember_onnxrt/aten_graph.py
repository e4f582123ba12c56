"""Lower ember's torch-level fx graph to a functional aten graph for the ONNX converter.

The lowering traces the graph with ``make_fx`` under fake tensors, through
``torch.func.functionalize`` (in-place ops become out-of-place ones; writes to graph inputs
become trailing ``aten.copy_`` nodes that the partitioner leaves to PyTorch, so the caller
still sees them). Decompositions are the ones of ``torch._decomp`` for the operators torch_lib
has no function for: an op torch_lib knows (layer_norm, softmax, scaled dot-product attention,
...) reaches ONNX whole, where onnxruntime has fused kernels for it.

This is the stand-in for ``ember_aot``'s inference graph: the compiler interface
(:func:`ember_onnxrt.backend.compile_aten`) is the ``inference_compiler`` contract of
``ember_aot.aot_autograd``.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from . import torchlib_bridge as bridge

DecompTable = dict[torch._ops.OperatorBase, Callable[..., Any]]


@functools.lru_cache(maxsize=4)
def decompositions(opset: int) -> DecompTable:
    """``torch._decomp``'s table, minus the operators torch_lib converts directly."""
    registry = bridge.registry(opset)
    return {
        op: fn
        for op, fn in torch._decomp.decomposition_table.items()
        if not registry.is_registered(op)
    }


def to_aten(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], decomposition_table: DecompTable
) -> torch.fx.GraphModule:
    """Trace ``gm`` into an aten-level functional graph with ``meta["val"]`` fake tensors.

    Shapes are static (the shapes of ``example_inputs``); Python scalars among the inputs are
    specialised to their values.
    """

    def run(*args: Any) -> Any:
        return torch.fx.Interpreter(gm).run(*args)

    functional = torch.func.functionalize(run, remove="mutations")
    with torch.no_grad():
        return make_fx(functional, decomposition_table=decomposition_table, tracing_mode="fake")(
            *example_inputs
        )
