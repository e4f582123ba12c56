"""A plain callable backend on calls whose sizes change (issue 49 item 6): torch.compile hands it a
specialised graph, then one symbolic graph; ember does the same for a callable that declares
``dynamic = True``, and compiles any other once per shape (docs/design/shapes.md: ember cannot tell
whether such a backend's output is specialised to the example's sizes)."""
from __future__ import annotations

import torch
import torch._dynamo

import ember
from ember.shapes import is_dynamic


def _graphs(compile_fn, dynamic_attribute: bool) -> list[torch.fx.GraphModule]:
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    if dynamic_attribute:
        backend.dynamic = True
    compiled = compile_fn(lambda x: x.sin() * 2, backend=backend)
    for n in (2, 3, 4, 5):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), x.sin() * 2)
    return graphs


def test_a_declared_dynamic_callable_gets_torch_compile_s_graphs() -> None:
    torch._dynamo.reset()
    expected = _graphs(torch.compile, dynamic_attribute=False)
    graphs = _graphs(ember.compile, dynamic_attribute=True)
    assert len(graphs) == len(expected) == 2
    assert not is_dynamic(graphs[0]) and is_dynamic(graphs[1])


def test_another_callable_is_compiled_per_shape() -> None:
    graphs = _graphs(ember.compile, dynamic_attribute=False)
    assert len(graphs) == 4 and not any(is_dynamic(gm) for gm in graphs)
