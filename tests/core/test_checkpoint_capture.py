"""``torch.utils.checkpoint.checkpoint`` inside captured code: one graph, as under torch.compile,
gradients equal to eager's on every backend, and the backward recomputes the checkpointed function."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint

import ember
from core_helpers import assert_captured_like_torch

torch.manual_seed(0)


class Blocks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def block(self, x):
        return self.b(torch.sin(self.a(x)).cos())

    def forward(self, x, use_checkpoint=True):
        h = checkpoint(self.block, x, use_reentrant=False) if use_checkpoint else self.block(x)
        return h.relu().sum()


MODEL = Blocks()


def _args():
    return (torch.randn(4, 8, generator=torch.Generator().manual_seed(3), requires_grad=True),)


def test_training_step_one_graph_gradients_equal():
    def forward(x):
        return MODEL(x)

    for p in MODEL.parameters():
        p.grad = None
    assert_captured_like_torch(forward, _args, grad=True)


class _Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


def _backward_sines(compiled, use_checkpoint: bool) -> int:
    (x,) = _args()
    loss = compiled(x, use_checkpoint)
    with _Ops() as ops:
        loss.backward()
    return sum(name.startswith("sin") for name in ops.names)


def test_backward_recomputes_the_checkpointed_function():
    compiled = ember.compile(MODEL, backend="eager")
    assert _backward_sines(compiled, True) > _backward_sines(compiled, False)
