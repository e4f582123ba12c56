"""ember.compile on functions, decorators, methods, lambdas and modules; optimize; reset."""
from __future__ import annotations

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback


def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(x)
    return a + b


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(100, 10)

    def forward(self, x):
        return torch.nn.functional.relu(self.lin(x))


def test_compile_function_call_form():
    backend = CountingBackend()
    opt = ember.compile(foo, backend=backend)
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    with no_fallback():
        torch.testing.assert_close(opt(x, y), foo(x, y))
        torch.testing.assert_close(opt(x, y), foo(x, y))
    assert backend.count == 1
    assert backend.ops() == ["sin", "cos", "add"]
    assert opt.__name__ == "foo" and opt.__wrapped__ is foo


def test_decorator_with_and_without_arguments():
    @ember.compile
    def plain(x):
        return x * 2

    backend = CountingBackend()

    @ember.compile(backend=backend)
    def with_args(x):
        return x - 1

    x = torch.randn(3)
    torch.testing.assert_close(with_args(x), x - 1)
    assert backend.count == 1
    assert callable(plain)


def test_optimize_is_the_older_spelling():
    backend = CountingBackend()

    @ember.optimize(backend)
    def opt_foo2(x, y):
        return torch.sin(x) + torch.cos(x)

    x = torch.randn(10, 10)
    torch.testing.assert_close(opt_foo2(x, x), foo(x, x))
    assert backend.count == 1


def test_lambda_and_bound_method():
    backend = CountingBackend()
    f = ember.compile(lambda t: t.exp().sum(0), backend=backend)
    x = torch.randn(4, 3)
    torch.testing.assert_close(f(x), x.exp().sum(0))

    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, t):
            return t * self.k

    s = Scaler(3.0)
    g = ember.compile(s.apply, backend=backend)
    torch.testing.assert_close(g(x), x * 3.0)
    s.k = 4.0  # attribute read by the capture: guarded, so this recompiles
    torch.testing.assert_close(g(x), x * 4.0)
    assert backend.count == 3


def test_module_wrapper_passes_through():
    backend = CountingBackend()
    mod = MyModule()
    opt_mod = ember.compile(mod, backend=backend)
    assert isinstance(opt_mod, ember.OptimizedModule)
    assert opt_mod._orig_mod is mod
    assert opt_mod.lin is mod.lin
    assert set(opt_mod.state_dict()) == {"_orig_mod.lin.weight", "_orig_mod.lin.bias"}
    x = torch.randn(10, 100)
    with no_fallback():
        torch.testing.assert_close(opt_mod(x), mod(x))
    opt_mod.eval()
    assert not mod.training
    opt_mod.train()
    assert mod.training
    assert backend.count == 1
    # parameters are graph inputs: an in-place update is seen without recompiling
    with torch.no_grad():
        mod.lin.weight.add_(1.0)
    torch.testing.assert_close(opt_mod(x), mod(x))
    assert backend.count == 1


def test_module_training_flag_is_guarded():
    backend = CountingBackend()
    mod = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    opt = ember.compile(mod, backend=backend)
    x = torch.randn(2, 4)
    mod.eval()
    torch.testing.assert_close(opt(x), mod(x))
    mod.train()
    torch.manual_seed(0)
    expected = mod(x)
    torch.manual_seed(0)
    torch.testing.assert_close(opt(x), expected)
    assert backend.count == 2


def test_disable_returns_the_function():
    assert ember.compile(foo, disable=True) is foo


def test_reset_drops_compilations():
    backend = CountingBackend()
    f = ember.compile(foo, backend=backend)
    x = torch.randn(3)
    f(x, x)
    ember.reset()
    f(x, x)
    assert backend.count == 2


def test_compiled_function_called_inside_another_is_inlined():
    backend = CountingBackend()
    inner = ember.compile(lambda t: t + 1, backend="eager")

    def outer(t):
        return inner(t) * 2

    f = ember.compile(outer, backend=backend)
    x = torch.randn(3)
    with no_fallback():
        torch.testing.assert_close(f(x), (x + 1) * 2)
    assert backend.count == 1


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="expects a callable"):
        ember.compile(42, backend="eager")


def test_two_threads_compile_once():
    import threading

    backend = CountingBackend()
    f = ember.compile(lambda t: t.sin() + 1, backend=backend)
    x = torch.randn(8)
    results = []
    barrier = threading.Barrier(4)

    def worker():
        barrier.wait()
        results.append(f(x))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert backend.count == 1 and len(results) == 4
    for r in results:
        torch.testing.assert_close(r, x.sin() + 1)


def test_module_hooks_are_honoured():
    mod = torch.nn.Linear(3, 3)
    calls = []
    mod.register_forward_hook(lambda m, inp, out: calls.append(out.shape) or out * 2)
    opt = ember.compile(mod, backend="eager")
    x = torch.randn(2, 3)
    torch.testing.assert_close(opt(x), mod(x))
    assert len(calls) == 2
