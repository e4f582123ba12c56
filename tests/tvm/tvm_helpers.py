"""Helpers of the tvm backend tests: graphs shaped like the ones ember's core hands over."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx as fx


class _ThroughModules(fx.Tracer):
    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return False


def lifted(module: torch.nn.Module) -> tuple[fx.GraphModule, list[torch.Tensor]]:
    """Trace ``module`` to torch-level ops with its parameters and buffers lifted to inputs.

    Returns the graph (inputs: the module's inputs, then its tensors) and the module's tensors
    (the live objects, so in-place changes are seen by later calls).
    """
    graph = _ThroughModules().trace(module)
    gm = fx.GraphModule(module, graph)
    tensors: list[torch.Tensor] = []
    last = [n for n in gm.graph.nodes if n.op == "placeholder"][-1]
    for node in list(gm.graph.nodes):
        if node.op != "get_attr":
            continue
        value: Any = module
        for part in str(node.target).split("."):
            value = getattr(value, part)
        with gm.graph.inserting_after(last):
            last = gm.graph.placeholder(f"p_{str(node.target).replace('.', '_')}")
        node.replace_all_uses_with(last)
        gm.graph.erase_node(node)
        tensors.append(value)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    if not isinstance(output.args[0], (tuple, list)):
        output.args = ((output.args[0],),)
    gm.recompile()
    return gm, tensors


def traced(fn: Callable[..., Any]) -> fx.GraphModule:
    """``torch.fx.symbolic_trace`` of a function taking its weights as arguments."""
    return fx.symbolic_trace(fn)


def assert_matches(got: Any, want: Any, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    """Outputs (tensor or sequence of tensors) equal eager's in structure, dtype and value."""
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol)
