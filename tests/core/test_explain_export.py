"""ember.explain reports graphs, breaks and guards; ember.export returns one runnable graph."""
from __future__ import annotations

import pytest
import torch

import ember


def bar(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def test_explain_reports_graphs_breaks_ops_and_guards():
    out = ember.explain(bar)(torch.randn(10), torch.randn(10))
    assert out.graph_count == 2 and out.graph_break_count == 1
    reason = out.break_reasons[0]
    assert "data-dependent branch" in reason.reason
    assert reason.location == f"{__file__}:{bar.__code__.co_firstlineno + 2}"
    assert [getattr(op, "__name__", op) for op in out.ops_per_graph[0]] == ["abs", "add", "truediv", "sum", "lt"]
    assert any("L['a']" in g for g in out.out_guards[0])
    text = str(out)
    assert "Graph Count: 2" in text and "Graph Break Count: 1" in text and "if b.sum() < 0:" in text


def test_explain_legacy_tuple_form():
    explanation, out_guards, graphs, ops_per_graph, break_reasons, verbose = ember.explain(
        bar, torch.randn(10), torch.randn(10))
    assert "2 graphs" in explanation and len(graphs) == 2 and len(break_reasons) == 1
    assert "Break Reason 1" in verbose


def test_explain_shows_the_user_stack_of_inlined_calls():
    def helper(t):
        print("hello")
        return t

    def outer(t):
        return helper(t) + 1

    out = ember.explain(outer)(torch.randn(2))
    stack = out.break_reasons[0].user_stack
    assert [frame[2] for frame in stack][:2] == ["outer", "helper"]


def test_export_returns_a_graph_module_that_matches_eager():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    gm, guards = ember.export(model, torch.randn(2, 3, 8, 8))
    assert isinstance(gm, torch.fx.GraphModule) and guards
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(gm(x), model(x))

    def f(a, b):
        return a.sin() + b, a * 2

    gm2, _ = ember.export(f, torch.randn(3), torch.randn(3))
    a, b = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(gm2(a, b), f(a, b))


def test_export_fails_naming_the_break():
    with pytest.raises(ember.Unsupported, match="if b.sum"):
        ember.export(bar, torch.randn(10), torch.randn(10))


def test_explain_counts_tensor_ops_in_graphs_and_outside():
    out = ember.explain(bar)(torch.randn(10), torch.ones(10))  # b.sum() >= 0: `b * -1` does not run
    assert (out.ops_in_graphs, out.ops_outside_graphs) == (6, 0) and out.graph_op_share == 1.0
    assert "Tensor Ops Run In Graphs: 100% (6 in graphs, 0 eagerly)" in str(out)

    def through_numpy(x):
        y = x.sin()
        z = x.numpy().sum()  # numpy traced as torch ops: in the graph
        return y + torch.tensor(z)

    out = ember.explain(through_numpy)(torch.randn(3))
    assert (out.graph_count, out.ops_in_graphs, out.ops_outside_graphs) == (1, 4, 0), str(out)


def test_explain_counts_the_ops_of_a_function_that_ran_eagerly():
    def handler_breaks(x):
        try:
            raise ValueError
        except ValueError:
            print("in the handler")  # no break possible inside a handler: the function runs eagerly
            y = x.cos()
        return y.sin()

    with pytest.warns(UserWarning, match="runs eagerly"):
        out = ember.explain(handler_breaks)(torch.randn(3))
    assert out.fallbacks and out.graph_count == 0
    assert (out.ops_in_graphs, out.ops_outside_graphs) == (0, 2) and out.graph_op_share == 0.0
