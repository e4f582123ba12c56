"""Regional compilation: each block of a ``ModuleList`` compiled on its own (``ember.compile(block)``
per layer, the recipe for cutting cold start on a deep model). Blocks of one class share one
compiled function that takes the block as an argument, so the six blocks below compile as many
graphs as torch.compile's (counted with a counting backend), not one graph per block; results,
gradients and later changes to one block (its weights, an attribute, eval mode) stay each
block's own."""
from __future__ import annotations

import torch
from torch import nn

import ember
from core_helpers import CountingBackend, no_fallback


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.norm(self.linear(x)).relu()


class Stack(nn.Module):
    def __init__(self, n: int = 6) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _regional(compile_block) -> tuple[Stack, Stack]:
    torch.manual_seed(0)
    model, ref = Stack(), Stack()
    ref.load_state_dict(model.state_dict())
    for i, layer in enumerate(model.layers):
        model.layers[i] = compile_block(layer)
    return model, ref


def _torch_compile_graphs() -> int:
    import torch._dynamo

    count = CountingBackend()
    torch._dynamo.reset()
    try:
        model, _ = _regional(lambda layer: torch.compile(layer, backend=count))
        x = torch.randn(2, 8)
        model(x).sum().backward()
        model(x)
    finally:
        torch._dynamo.reset()
    return count.count


def test_blocks_of_one_class_share_their_graphs() -> None:
    count = CountingBackend()
    model, ref = _regional(lambda layer: ember.compile(layer, backend=count))
    x = torch.randn(2, 8)
    with no_fallback():
        out = model(x)
        out.sum().backward()
        torch.testing.assert_close(model(x), ref(x))
    ref(x).sum().backward()
    torch.testing.assert_close(out, ref(x))
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    assert count.count <= _torch_compile_graphs() < 6


def test_changes_to_one_block_stay_its_own() -> None:
    count = CountingBackend()
    model, ref = _regional(lambda layer: ember.compile(layer, backend=count))
    x = torch.randn(2, 8)
    with torch.no_grad():
        for m in (model, ref):
            m.layers[2].linear.weight.mul_(2)
            m.layers[4].norm.eps = 0.5
        torch.testing.assert_close(model(x), ref(x))
        model.eval(), ref.eval()
        model.layers[1].train()
        ref.layers[1].train()
        torch.testing.assert_close(model(x), ref(x))


def test_another_backend_or_mode_is_not_shared() -> None:
    first, second = CountingBackend(), CountingBackend()
    block_a, block_b = Block(), Block()
    a, b = ember.compile(block_a, backend=first), ember.compile(block_b, backend=second)
    x = torch.randn(2, 8)
    torch.testing.assert_close(a(x), block_a(x))
    torch.testing.assert_close(b(x), block_b(x))
    assert first.count == 1 and second.count == 1
