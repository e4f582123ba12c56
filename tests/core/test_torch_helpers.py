"""torch's checks and no-ops, disabled functions and the standard library inside captured code:
understood or called, never traced, never a whole function run eagerly."""
from __future__ import annotations

import io
import logging
import traceback
import warnings

import pytest
import torch
import torch.nn.functional as F

import ember
from core_helpers import CountingBackend, no_fallback


def _torch_compile_count(fn, *args) -> int:
    import torch._dynamo

    torch._dynamo.reset()
    backend = CountingBackend()
    torch.compile(fn, backend=backend)(*args)
    return backend.count


def _ember_count(fn, *args):
    backend = CountingBackend()
    with no_fallback():
        out = ember.compile(fn, backend=backend)(*args)
    return backend, out


def helpers(x):
    torch._assert(x.shape[0] == 4, "batch of 4")
    torch._assert(x.sum() > -1e9, "finite sum")
    torch._check(x.shape[-1] == 3, lambda: "three features")
    torch._check_index(x.dim() == 2, lambda: "a matrix")
    torch._C._log_api_usage_once("ember.test")
    if torch.jit.is_scripting() or torch.jit.is_tracing():
        return x - 1
    if not torch.compiler.is_compiling():
        return x - 2
    return x.relu() + 1


def test_checks_and_noops_are_captured_in_one_graph():
    x = torch.randn(4, 3)
    backend, out = _ember_count(helpers, x)
    torch.testing.assert_close(out, x.relu() + 1)  # is_compiling() is True inside ember
    assert backend.count == 1 <= _torch_compile_count(helpers, x)
    assert "_assert_async" in backend.ops()  # the tensor condition is checked when the graph runs


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_tensor_assert_fires_when_the_graph_runs(backend):
    options = {"eager_fallback": False} if backend == "inductor" else None  # the compiled code, every call
    compiled = ember.compile(helpers, backend=backend, options=options)
    for _ in range(2):
        torch.testing.assert_close(compiled(torch.ones(4, 3)), torch.full((4, 3), 2.0))
        with pytest.raises(RuntimeError, match="finite sum"):
            compiled(torch.full((4, 3), -1e10))


def test_a_false_shape_assert_raises_as_in_eager():
    def f(x):
        torch._assert(x.shape[0] % 2 == 0, "even batch")
        return x * 2

    compiled = ember.compile(f, backend="eager")
    torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match="even batch"):
            compiled(torch.ones(3))


def test_a_false_assert_under_a_default_device_raises_as_in_eager():
    """torch.set_default_device pushes a torch-function mode, through which torch._assert (a Python
    function of the top-level torch module) calls itself again: at the break it runs as it is."""
    def f(x):
        torch._assert(x.shape[0] % 2 == 0, "even batch")
        return x * 2

    torch.set_default_device("cpu")
    try:
        compiled = ember.compile(f, backend="eager")
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 2.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(AssertionError, match="even batch"):
                compiled(torch.ones(3))
    finally:
        torch.set_default_device(None)


def _log_api_usage_once(obj) -> None:
    """torchvision.utils._log_api_usage_once, as torchvision writes it."""
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if callable(obj) and hasattr(obj, "__name__"):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def stochastic_depth(x, p: float, mode: str, training: bool = True):
    """torchvision.ops.stochastic_depth's pattern: logs its use from forward."""
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        _log_api_usage_once(stochastic_depth)
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    survival = 1.0 - p
    size = [x.shape[0]] + [1] * (x.ndim - 1) if mode == "row" else [1] * x.ndim
    noise = torch.empty(size, dtype=x.dtype, device=x.device).bernoulli_(survival)
    return x * noise.div_(survival)


class PatchMerging(torch.nn.Module):
    """swin_t's patch merging: checks the shape with torch._assert."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        _log_api_usage_once(self)
        self.reduction = torch.nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = torch.nn.LayerNorm(4 * dim)

    def forward(self, x):
        H, W, _ = x.shape[-3:]
        torch._assert(H % 2 == 0 and W % 2 == 0, f"input size ({H}*{W}) are not even")
        x = torch.cat([x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :],
                       x[..., 1::2, 1::2, :]], -1)
        return self.reduction(self.norm(x))


class Block(torch.nn.Module):
    """efficientnet/convnext's pattern: conv, BatchNorm, squeeze-excitation, stochastic depth."""

    def __init__(self, c: int) -> None:
        super().__init__()
        _log_api_usage_once(self)
        self.conv = torch.nn.Conv2d(c, c, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(c)
        self.fc = torch.nn.Conv2d(c, c, 1)
        self.merge = PatchMerging(c)

    def forward(self, x):
        y = F.silu(self.bn(self.conv(x)))
        y = y * torch.sigmoid(self.fc(F.adaptive_avg_pool2d(y, 1)))
        y = stochastic_depth(y, 0.0, "row", self.training) + x
        return self.merge(y.permute(0, 2, 3, 1))


def test_torchvision_style_block_is_one_graph_with_matching_grads():
    torch.manual_seed(0)
    model = Block(4)
    x = torch.randn(2, 4, 8, 8)
    expected = model(x)
    expected.sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    backend = CountingBackend()
    with no_fallback():
        out = ember.compile(model, backend=backend)(x)
        out.sum().backward()
    torch.testing.assert_close(out, expected)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad, grads[name], msg=name)
    assert backend.count == 1 <= _torch_compile_count(model, x)


@pytest.mark.parametrize("disable", [torch.compiler.disable, ember.disable])
def test_a_disabled_function_runs_eagerly_at_a_break(disable):
    @disable
    def untraced(x):
        return torch.cos(x) * 2

    def f(x):
        return untraced(x + 1) - 1

    def f_torch(x):  # the same function as torch.compile knows it
        return torch.compiler.disable(untraced)(x + 1) - 1

    x = torch.randn(4)
    backend, out = _ember_count(f, x)
    torch.testing.assert_close(out, f(x))
    assert backend.count == 2 <= _torch_compile_count(f_torch, x)
    assert all("cos" not in backend.ops(i) for i in range(2))  # its body is in no graph


def test_print_stack_is_called_not_traced():
    stream = io.StringIO()

    def f(x):
        x = x + 1
        traceback.print_stack(file=stream)
        return x * 2

    x = torch.randn(4)
    backend, out = _ember_count(f, x)  # no warning about traceback's own code
    torch.testing.assert_close(out, (x + 1) * 2)
    assert "print_stack" in stream.getvalue()
    assert [backend.ops(i) for i in range(backend.count)] == [["add"], ["mul"]]
    assert backend.count <= _torch_compile_count(f, x)


def test_warnings_and_logging_run_at_every_call_and_the_tensor_work_is_captured(caplog):
    log = logging.getLogger("ember.test.user")

    def f(x):
        x = x.sin()
        warnings.warn("careful")
        log.warning("value %d", 3)
        return x.cos()

    backend = CountingBackend()
    compiled = ember.compile(f, backend=backend)
    x = torch.randn(4)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, "ember.test.user"):
        warnings.simplefilter("always")
        for _ in range(3):
            torch.testing.assert_close(compiled(x), x.sin().cos())
    assert [str(w.message) for w in caught] == ["careful"] * 3
    assert [r.getMessage() for r in caplog.records if r.name == "ember.test.user"] == ["value 3"] * 3
    assert sorted(op for i in range(backend.count) for op in backend.ops(i)) == ["cos", "sin"]


def test_a_profiler_range_is_a_no_op_to_capture():
    def f(x):
        with torch.autograd.profiler.record_function("block"):
            y = x.sin()
        with torch.profiler.record_function("second"):
            return y * 2

    x = torch.randn(4)
    backend, out = _ember_count(f, x)
    torch.testing.assert_close(out, x.sin() * 2)
    assert backend.count == 1 and backend.ops() == ["sin", "mul"]
