"""Inference tracing without ember_aot: a callable -> a functional aten graph with flat tensor outputs.

Used by the backend when ember_aot is not installed, and by tools that only want the aten
graph of a function (``codegen.triton_backend.generate_triton``, the layout tests).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .decompositions import decompositions


def trace_inference(gm: Callable, example_inputs: Sequence[Any]) -> tuple[torch.fx.GraphModule, Any]:
    """Functional aten graph of ``gm`` (flat tensor outputs) and the pytree spec of its output."""
    from torch.fx.experimental.proxy_tensor import make_fx
    spec: list[Any] = []

    def flat(*args: Any) -> list:
        out = gm(*args)
        leaves, s = pytree.tree_flatten(out)
        spec.append(s)
        return leaves
    with torch.no_grad():
        aten_gm = make_fx(torch.func.functionalize(flat, remove="mutations"),
                          decomposition_table=decompositions(), tracing_mode="fake")(*example_inputs)
    return aten_gm, spec[-1]


__all__ = ["trace_inference"]
