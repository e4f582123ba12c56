"""Inference tracing without ember_aot: a callable -> a functional aten graph with flat tensor outputs.

Used by the backend when ember_aot is not installed, and by tools that only want the aten
graph of a function (``codegen.triton_backend.generate_triton``, the layout tests). A graph with
symbolic sizes (capture's fake inputs) is traced on those, so its aten graph keeps them.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .decompositions import decompositions
from .symbolic import shape_env_of


def trace_inference(gm: Callable, example_inputs: Sequence[Any]) -> tuple[torch.fx.GraphModule, Any]:
    """Functional aten graph of ``gm`` (flat tensor outputs) and the pytree spec of its output."""
    from torch.fx.experimental.proxy_tensor import make_fx
    spec: list[Any] = []

    def flat(*args: Any) -> list:
        out = gm(*args)
        leaves, s = pytree.tree_flatten(out)
        spec.append(s)
        return leaves
    fn = torch.func.functionalize(flat, remove="mutations")
    shape_env = shape_env_of(gm) if isinstance(gm, torch.fx.GraphModule) else None
    with torch.no_grad():
        if shape_env is None:
            aten_gm = make_fx(fn, decomposition_table=decompositions(), tracing_mode="fake")(*example_inputs)
        else:  # traced on the graph's own fake inputs: the aten graph keeps their symbolic sizes
            fakes = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
            fake_mode = next(v.fake_mode for v in fakes if isinstance(v, torch.Tensor))
            with fake_mode:
                aten_gm = make_fx(fn, decomposition_table=decompositions())(*fakes)
    return aten_gm, spec[-1]


__all__ = ["trace_inference"]
