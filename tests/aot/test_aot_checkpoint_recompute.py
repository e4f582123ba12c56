"""``torch.utils.checkpoint`` through ember_aot: the min-cut follows torch's recompute tags, so the
forward hands the backward only the checkpointed region's inputs (fewer saved tensors than
without checkpoint), two consecutive regions save their boundary, and gradients equal eager's."""
from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

import ember
from ember_aot import aot_autograd, min_cut_partition


class Blocks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def block(self, x):
        return self.b(torch.sin(self.a(x)).cos())

    def forward(self, x, regions=1):
        if regions == 0:
            h = self.block(x)
        else:
            h = checkpoint(self.block, x, use_reentrant=False)
            if regions == 2:
                h = checkpoint(self.block, h, use_reentrant=False)
        return h.relu().sum()


class SavedActivations:
    """A partition_fn keeping how many activations (tensors other than the inputs) the forward saves."""

    def __init__(self) -> None:
        self.saved: list[str] = []

    def __call__(self, joint, joint_inputs, *, num_fwd_outputs):
        fw, bw = min_cut_partition(joint, joint_inputs, num_fwd_outputs=num_fwd_outputs)
        output = next(n for n in reversed(fw.graph.nodes) if n.op == "output")
        self.saved = [str(n) for n in output.args[0][num_fwd_outputs:] if n.op != "placeholder"]
        return fw, bw


def _step(model, regions):
    torch.manual_seed(0)
    x = torch.randn(4, 8, requires_grad=True)
    recorder = SavedActivations()
    compiled = ember.compile(model, backend=aot_autograd(lambda gm, example_inputs: gm.forward,
                                                         partition_fn=recorder))
    compiled(x, regions).backward()
    grads = [x.grad] + [p.grad for p in model.parameters()]
    model.zero_grad()
    x.grad = None
    model(x, regions).backward()
    torch.testing.assert_close(grads, [x.grad] + [p.grad for p in model.parameters()])
    model.zero_grad()
    return recorder.saved


def test_checkpointed_region_saves_only_its_inputs():
    model = Blocks()
    without = _step(model, 0)
    assert len(without) >= 1  # the first linear's output, at least
    assert _step(model, 1) == []


def test_consecutive_regions_save_their_boundary():
    saved = _step(Blocks(), 2)
    assert len(saved) == 1
