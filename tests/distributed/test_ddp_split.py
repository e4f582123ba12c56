"""ember.ddp_split on its own (one process): where a graph is cut, and that the cut changes nothing.

Four linear layers of 1 KB of parameters each, with a bucket cap of 1 KB, are four pieces in
forward order; outputs and gradients (None for a frozen weight) equal the uncut graph's.
"""
from __future__ import annotations

import types

import torch
import torch.nn as nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from ember.ddp_split import assign_buckets, compile_by_buckets


class Chain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16, bias=False) for _ in range(4))

    def forward(self, x: torch.Tensor, *weights: torch.Tensor) -> torch.Tensor:
        for w in weights:
            x = torch.tanh(x @ w.t())
        return x.sum()


def _graph() -> tuple[torch.fx.GraphModule, list[torch.Tensor], Chain]:
    torch.manual_seed(0)
    model = Chain()
    model.layers[1].weight.requires_grad_(False)
    inputs = [torch.randn(3, 16), *(layer.weight for layer in model.layers)]
    gm = torch.fx.symbolic_trace(lambda x, w0, w1, w2, w3: model.forward(x, w0, w1, w2, w3))
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    FakeTensorProp(gm, mode).propagate(*[mode.from_tensor(t) for t in inputs])
    return gm, inputs, model


def _ddp_like(model: Chain, cap: int) -> types.SimpleNamespace:
    return types.SimpleNamespace(module=model, bucket_bytes_cap=cap, parameters_to_ignore=set())


def test_pieces_follow_the_parameters_in_forward_order() -> None:
    gm, inputs, _ = _graph()
    sizes = {id(t): 1024 for t in inputs[1:]}
    pieces = assign_buckets(gm, inputs, sizes, first_cap=1024, cap=1024)
    order = [pieces[n] for n in gm.graph.nodes if n in pieces]
    assert order == sorted(order) and len(set(order)) == 4, order
    # DDP's first bucket (the last layer's gradient) may be smaller than the others
    assert len(set(assign_buckets(gm, inputs, sizes, first_cap=1024, cap=1 << 20).values())) == 2
    assert set(assign_buckets(gm, inputs, sizes, first_cap=1 << 20, cap=1 << 20).values()) == {0}


def test_split_graph_computes_the_same_values_and_gradients() -> None:
    gm, inputs, model = _graph()
    compiled_pieces = []

    def backend(piece: torch.fx.GraphModule, example_inputs: list) -> object:
        compiled_pieces.append(piece)
        return piece.forward

    # the frozen weight is not DDP's: three buckets of parameters
    split = compile_by_buckets(gm, inputs, backend, _ddp_like(model, cap=1024))
    assert len(compiled_pieces) == 3
    expected = gm(*inputs)
    expected.backward()
    grads = [w.grad for w in inputs[1:]]
    for w in inputs[1:]:
        w.grad = None
    got = split(*inputs)
    got.backward()
    torch.testing.assert_close(got, expected)
    for w, g in zip(inputs[1:], grads):
        assert (w.grad is None) == (g is None)
        if g is not None:
            torch.testing.assert_close(w.grad, g)


def test_one_bucket_compiles_the_graph_whole() -> None:
    gm, inputs, model = _graph()
    seen = []
    compile_by_buckets(gm, inputs, lambda g, ex: seen.append(g) or g.forward, _ddp_like(model, cap=1 << 20))
    assert seen == [gm]
