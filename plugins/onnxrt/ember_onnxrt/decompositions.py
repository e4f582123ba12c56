"""The decomposition table ember_aot uses when it lowers graphs for backend "onnxrt".

``torch._decomp``'s table minus every operator torch_lib has a function for: an op torch_lib
knows (layer_norm, softmax, scaled dot-product attention, ...) reaches ONNX whole, where
onnxruntime has fused kernels for it; anything else is decomposed into ops it knows.
(ember_aot adds the decompositions it needs for correctness, e.g. ``native_batch_norm``.)
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from . import torchlib_bridge as bridge

DecompTable = dict[torch._ops.OperatorBase, Callable[..., Any]]


@functools.lru_cache(maxsize=4)
def _table(opset: int) -> DecompTable:
    registry = bridge.registry(opset)
    return {
        op: fn
        for op, fn in torch._decomp.decomposition_table.items()
        if not registry.is_registered(op)
    }


def onnx_decompositions(opset: int) -> DecompTable:
    """A fresh copy of the table for ``opset`` (callers may edit it)."""
    return dict(_table(opset))
