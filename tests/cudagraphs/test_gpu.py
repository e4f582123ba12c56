"""GPU tests (H100): CUDA graphs give eager's results, keep outputs, accumulate gradients, free memory.

Run on the GPU machine: ``python -m pytest -q tests/cudagraphs``. Without CUDA they skip with the
backend's reason.
"""
from __future__ import annotations

import copy
import gc
import logging
import os
from typing import Callable
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import ember
from ember_cudagraphs import CudaGraphed, live_graphs, release_memory, wrap
from ember_cudagraphs.plugin import _cuda_check

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(bool(_cuda_check()), reason=_cuda_check() or "-")]
LOG = "ember.cudagraphs"
TOL = dict(rtol=2e-3, atol=2e-3)


@pytest.fixture(autouse=True)
def _no_tf32():
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _mlp(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor]:
    return (torch.relu(x @ w + b).sin(),)


def _resnet(train: bool) -> torch.nn.Module:
    try:
        from torchvision.models import resnet18
        model = resnet18()
    except ImportError:
        from benchmarks.models import ResNet18
        model = ResNet18(num_classes=1000)
    torch.manual_seed(0)
    return model.cuda().train(train)


def test_wrap_records_once_and_matches_eager():
    w = torch.nn.Parameter(torch.randn(64, 32, device="cuda"))
    b = torch.randn(32, device="cuda")
    f = wrap(_mlp, [torch.randn(8, 64, device="cuda"), w, b])
    assert isinstance(f, CudaGraphed)
    with torch.no_grad():
        for _ in range(6):
            x = torch.randn(8, 64, device="cuda")
            torch.testing.assert_close(f(x, w, b)[0], _mlp(x, w, b)[0])
    assert f.stats["captures"] == 1 and f.stats["replays"] == 5
    (rec,) = [r for s in f._states.values() for r in s.recordings]
    assert 1 in rec.inputs.stable and 2 in rec.inputs.stable  # parameter and unmoved buffer not copied


def test_kept_outputs_survive_later_calls():
    w, b = torch.randn(64, 32, device="cuda"), torch.randn(32, device="cuda")
    f = wrap(_mlp)
    xs = [torch.randn(8, 64, device="cuda") for _ in range(5)]
    with torch.no_grad():
        outs = [f(x, w, b)[0] for x in xs]
        for x, out in zip(xs, outs):
            torch.testing.assert_close(out, _mlp(x, w, b)[0])


def test_host_sync_falls_back_with_one_reason(caplog):
    def masked(x: torch.Tensor) -> tuple[torch.Tensor]:
        return (x[x > 0].sum(),)  # boolean indexing synchronizes with the host
    f = wrap(masked)
    with torch.no_grad(), caplog.at_level(logging.WARNING, LOG):
        for _ in range(4):
            x = torch.randn(100, device="cuda")
            torch.testing.assert_close(f(x)[0], masked(x)[0])
    msgs = [r.getMessage() for r in caplog.records if r.name == LOG]
    assert len(msgs) == 1 and "recording failed" in msgs[0]
    x = torch.randn(100, device="cuda")
    torch.testing.assert_close((x * 2).sum(), x.sum() * 2)  # the device is still usable


def test_cpu_inputs_and_input_mutation_fall_back(caplog):
    with caplog.at_level(logging.WARNING, LOG):
        cpu = wrap(_mlp, [torch.randn(8, 64), torch.randn(64, 32), torch.randn(32)])

        def bump(x: torch.Tensor) -> tuple[torch.Tensor]:
            x.add_(1)
            return (x * 2,)
        f = wrap(bump)
        x = torch.zeros(4, device="cuda")
        with torch.no_grad():
            for _ in range(3):
                f(x)
    assert cpu is _mlp and "cpu tensor" in caplog.text and "writes into input 0" in caplog.text
    torch.testing.assert_close(x, torch.full((4,), 3.0, device="cuda"))


def test_backend_inference_and_kept_outputs():
    model = _resnet(False)
    compiled = ember.compile(model, backend="cudagraphs")
    with torch.no_grad():
        xs = [torch.randn(4, 3, 64, 64, device="cuda") for _ in range(4)]
        outs = [compiled(x) for x in xs]
        for x, out in zip(xs, outs):
            torch.testing.assert_close(out, model(x), **TOL)


def _accumulate(model: torch.nn.Module, run: Callable, x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    """Five backward passes of ``run`` (``model`` or a compiled form of it) adding into ``.grad``,
    the first a warm-up followed by ``zero_grad(set_to_none=True)``; the losses."""
    losses = []
    for k in range(5):
        loss = F.cross_entropy(run(x.to(next(model.parameters()).dtype)), y)
        loss.backward()
        losses.append(loss.detach())
        if k == 0:  # after the warm-up .grad is None: the next backward's outputs become .grad
            model.zero_grad(set_to_none=True)
    return losses


@pytest.mark.parametrize("backend,mode", [("cudagraphs", None), ("inductor", None), ("inductor", "reduce-overhead")])
def test_training_with_gradient_accumulation_matches_eager(backend, mode):
    """Five backward passes add into ``.grad`` (the first after ``zero_grad(set_to_none=True)``,
    where autograd takes the backward's outputs over as ``.grad``). One batch for all steps: with
    a new random batch each step, batch norm over resnet18's 2x2 maps makes single steps differ
    from eager's by percents for any change of rounding (a ReLU flipping at 0), for torch.compile
    too; the same batch keeps what is tested to the accumulation.

    Where a gradient differs from eager's, a float64 run decides, and where ember's is further from
    it than eager's, torch.compile's float32 run on the same draw too: a draw where torch.compile is
    as far is ill-conditioned, not ember's error. (In the whole suite the draw is the same in every
    run: test modules seed torch's generators when collected. The H200 suite failed here three
    times with conv1.weight 0.0255 from float64 against eager's 3.5e-5; never alone, unseeded.)"""
    ref = _resnet(True)
    initial = copy.deepcopy(ref)
    ours = copy.deepcopy(ref)
    exact = copy.deepcopy(ref).double()  # the referee: rounding of float32 sums differs by order
    x = torch.randn(4, 3, 64, 64, device="cuda")
    y = torch.randint(0, 1000, (4,), device="cuda")
    eager_losses = _accumulate(ref, ref, x, y)
    ours_losses = _accumulate(ours, ember.compile(ours, backend=backend, mode=mode), x, y)
    _accumulate(exact, exact, x, y)
    torch.testing.assert_close(ours_losses, eager_losses, **TOL)
    theirs = None
    for (name, p), q, e in zip(ref.named_parameters(), ours.parameters(), exact.parameters()):
        try:
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-2, atol=1e-3)
            continue
        except AssertionError:  # batch norm over 2x2 maps: eager float32 itself may be far off
            ours_off, eager_off = (q.grad.double() - e.grad).abs().max(), (p.grad.double() - e.grad).abs().max()
        if ours_off <= 4 * eager_off + 1e-3:
            continue
        if theirs is None:
            theirs = copy.deepcopy(initial)
            _accumulate(theirs, torch.compile(theirs), x, y)
        their_off = (dict(theirs.named_parameters())[name].grad.double() - e.grad).abs().max()
        assert ours_off <= 4 * max(eager_off, their_off) + 1e-3, (
            f"{name}: {ours_off:.3g} from float64, eager {eager_off:.3g}, torch.compile {their_off:.3g}")


def test_tutorial_reduce_overhead_inference_loop():
    model = _resnet(False)
    model_opt = ember.compile(model, mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(10):
            inp = torch.randn(16, 3, 128, 128, device="cuda")
            torch.testing.assert_close(model_opt(inp), model(inp), **TOL)


def test_tutorial_reduce_overhead_training_loop():
    ref = _resnet(True)
    ours = copy.deepcopy(ref)
    opts = [torch.optim.Adam(m.parameters()) for m in (ref, ours)]

    def train(mod: torch.nn.Module, data: tuple) -> torch.Tensor:
        pred = mod(data[0])
        loss = torch.nn.CrossEntropyLoss()(pred, data[1])
        loss.backward()
        return loss

    train_opt = ember.compile(train, mode="reduce-overhead")
    for _ in range(6):
        data = (torch.randn(16, 3, 128, 128, device="cuda"), torch.randint(1000, (16,), device="cuda"))
        losses = []
        for fn, mod, opt in ((train, ref, opts[0]), (train_opt, ours, opts[1])):
            opt.zero_grad(True)
            losses.append(fn(mod, data))
            opt.step()
        torch.testing.assert_close(losses[1], losses[0], rtol=2e-2, atol=2e-2)


def test_one_graph_per_shape_and_reset_frees_memory():
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
    # a first graph gives the shared side stream its cuBLAS workspace (kept for the process,
    # like eager's per-stream workspaces); everything after it must be freed by reset()
    with torch.no_grad():
        ember.compile(model, backend="cudagraphs")(torch.randn(4, 256, device="cuda"))
    ember.reset()
    release_memory()
    gc.collect()
    graphs0, mem0 = live_graphs(), torch.cuda.memory_allocated()
    compiled = ember.compile(model, backend="cudagraphs")
    with torch.no_grad():
        for n in (8, 16, 8, 16, 8, 16):
            x = torch.randn(n, 256, device="cuda")
            torch.testing.assert_close(compiled(x), model(x), **TOL)
    del x
    assert live_graphs() == graphs0 + 2
    ember.reset()
    release_memory()
    assert live_graphs() == graphs0
    assert torch.cuda.memory_allocated() <= mem0 + (1 << 20)


def test_training_step_with_a_cpu_scalar_input_is_recorded(caplog):
    """A 0-dim CPU tensor input (a loss scale) and AdamW(capturable=False): recorded, and each
    replay reads the call's value (ran on an H100: forward and backward both recorded)."""
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).cuda()
    ours = copy.deepcopy(ref)
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-2, capturable=False) for m in (ref, ours)]

    def loss_of(model, x, y, scale):
        return F.mse_loss(model(x), y) * scale

    compiled = ember.compile(lambda x, y, scale: loss_of(ours, x, y, scale), mode="reduce-overhead")
    before = live_graphs()
    with caplog.at_level(logging.WARNING, LOG):
        for k in range(6):
            x, y = torch.randn(16, 32, device="cuda"), torch.randn(16, 8, device="cuda")
            scale = torch.tensor(1.0 + k / 4)  # a new CPU value every step
            losses = []
            for opt, step in ((opts[0], lambda: loss_of(ref, x, y, scale)), (opts[1], lambda: compiled(x, y, scale))):
                opt.zero_grad(set_to_none=True)
                loss = step()
                loss.backward()
                opt.step()
                losses.append(loss.detach())
            torch.testing.assert_close(losses[1], losses[0], **TOL)
    for p, q in zip(ref.parameters(), ours.parameters()):
        torch.testing.assert_close(q, p, **TOL)
    assert "without CUDA graphs" not in caplog.text
    assert live_graphs() >= before + 2  # the forward and the backward


@pytest.mark.parametrize("with_torch_compile", [False, True], ids=["alone", "beside-torch-compile"])
def test_recorded_matmuls_survive_cleared_cublas_workspaces(with_torch_compile):
    """The cuBLAS workspace baked into recorded matrix products is never memory of other tensors
    (in a fresh process: a failure here is an illegal memory access, which ends a process)."""
    case = os.path.join(os.path.dirname(__file__), "cublas_workspace_case.py")
    args = [sys.executable, case] + (["--with-torch-compile"] if with_torch_compile else [])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
