"""An ember-compiled function called from code that torch.compile traces (transformers' generate
compiles the model's call by itself on CUDA with a static cache): torch's tracer sees the user's
code, the result is eager's, and nothing of ember's runtime ends up in torch's graph."""
from __future__ import annotations

import torch

import ember


def test_torch_compile_traces_the_user_code_under_an_ember_function() -> None:
    graphs: list[torch.fx.GraphModule] = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(gm)
        return gm.forward

    inner = ember.compile(lambda x: torch.sin(x) * 2, backend="eager")
    outer = torch.compile(lambda x: inner(x) + 1, backend=counting, fullgraph=True)
    x = torch.randn(5)
    torch.testing.assert_close(outer(x), torch.sin(x) * 2 + 1)
    assert len(graphs) == 1
    targets = {n.target for n in graphs[0].graph.nodes if n.op == "call_function"}
    assert torch.sin in targets


def test_an_ember_module_inside_torch_compile() -> None:
    module = torch.nn.Linear(4, 3)
    compiled = ember.compile(module, backend="eager")
    x = torch.randn(2, 4)
    compiled(x)  # ember compiled it first; torch.compile then traces through it
    outer = torch.compile(lambda t: compiled(t).relu(), backend="eager", fullgraph=True)
    torch.testing.assert_close(outer(x), module(x).relu())
