"""The backend's ember_aot path on CPU with a fake recorder: training, gradient accumulation, release."""
from __future__ import annotations

import gc

import torch

import ember
from ember_cudagraphs import live_graphs
from ember_cudagraphs.backend import aot_backend
from fake_recorder import FakeRecorder


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 4))


def _step(model, x, y) -> torch.Tensor:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return loss


def test_gradient_accumulation_without_zero_grad_matches_eager():
    rec = FakeRecorder()
    ref, ours = _model(), _model()
    compiled = ember.compile(ours, backend=aot_backend(rec))
    batches = [(torch.randn(6, 8), torch.randint(0, 4, (6,))) for _ in range(5)]
    for k, (x, y) in enumerate(batches):
        torch.testing.assert_close(_step(compiled, x, y), _step(ref, x, y))
        if k == 0:  # after the warm-up: .grad is None, so the backward's output becomes .grad
            for model in (ref, ours):
                model.zero_grad(set_to_none=True)
    for p, q in zip(ref.parameters(), ours.parameters()):
        torch.testing.assert_close(q.grad, p.grad)
    torch.testing.assert_close(ours[1].running_mean, ref[1].running_mean)
    assert rec.replays >= 6  # forward and backward both replayed
    assert rec.captures == 3  # forward; backward twice: the first replica's output became .grad


def test_training_loop_with_optimizer_matches_eager():
    rec = FakeRecorder()
    ref, ours = _model(), _model()
    compiled = ember.compile(ours, backend=aot_backend(rec))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, ours)]
    for _ in range(5):
        x, y = torch.randn(6, 8), torch.randint(0, 4, (6,))
        for model, opt in ((ref, opts[0]), (compiled, opts[1])):
            opt.zero_grad(True)
            _step(model, x, y)
            opt.step()
    for p, q in zip(ref.parameters(), ours.parameters()):
        torch.testing.assert_close(q, p)


def test_kept_outputs_of_earlier_calls_survive():
    rec = FakeRecorder()
    model = _model().eval()
    compiled = ember.compile(model, backend=aot_backend(rec))
    xs = [torch.randn(6, 8) for _ in range(4)]
    with torch.no_grad():
        outs = [compiled(x) for x in xs]
        for x, out in zip(xs, outs):
            torch.testing.assert_close(out, model(x))


def test_graphs_released_when_entries_are_dropped():
    rec = FakeRecorder()
    model = _model().eval()
    compiled = ember.compile(model, backend=aot_backend(rec))
    gc.collect()
    before = live_graphs()
    with torch.no_grad():
        for _ in range(3):
            compiled(torch.randn(6, 8))
    assert live_graphs() == before + 1
    ember.reset()
    gc.collect()
    assert live_graphs() == before
