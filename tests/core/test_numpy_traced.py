"""numpy in compiled code is traced as torch ops (through ``torch._numpy``), as torch.compile
traces it: ``Tensor.numpy()``, numpy's functions, array methods, attributes and operators are
graph nodes on every backend (the inductor's C++ included); an array argument is a graph input
sharing its memory, so a new array of the same shape reuses the graph (it used to be folded and
guarded on its elements: one recompilation per new value) and an in-place change reaches the
caller's array; what needs an array's data in Python breaks the graph.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from core_helpers import CountingBackend, assert_captured_like_torch, no_fallback

BACKENDS = ("eager", "aot_eager", "inductor")


def _same(got, want) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert type(got) is type(want) or isinstance(want, np.generic), (type(got), type(want))
    if isinstance(want, (np.ndarray, np.generic)):
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    elif isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want)
    else:
        assert got == want


def _tensor_numpy(x):
    a = x.numpy()
    return np.mean(a, 0) + a.T.sum() * 2, a.shape, a.dtype


def _arrays_in(a, b):
    return np.sqrt(a * a + 1) @ b.T, (a > 0.5).astype(np.float32)


def _mixed(x, a):
    return x * torch.from_numpy(np.exp(a)) + a.sum()


def _int_division(y):
    ny = y.numpy()
    return ny[0][0] / 68, ny.sum()


def _constants_make_arrays(x):
    return torch.from_numpy(np.arange(4, dtype=np.float32)) + x + float(np.prod(x.shape))


CASES = [
    (_tensor_numpy, lambda: (torch.randn(3, 4),)),
    (_arrays_in, lambda: (np.random.rand(3, 4), np.random.rand(5, 4))),
    (_mixed, lambda: (torch.randn(2, 3), np.random.rand(2, 3))),
    (_int_division, lambda: (torch.ones(2, 2, dtype=torch.int64),)),
    (_constants_make_arrays, lambda: (torch.randn(4),)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_numpy_code_runs_in_one_graph_with_eager_results(fn, make, backend):
    np.random.seed(0)
    args = make()
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    counting = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=counting, fullgraph=True)(*args)
        _same(got, want)
        _same(ember.compile(fn, backend=backend, fullgraph=True)(*args), want)
    assert counting.count == 1


def test_a_new_array_reuses_the_graph_and_in_place_changes_reach_the_caller():
    def f(a, b):
        a += b  # the caller's array changes, as in eager
        return a * 2

    counting = CountingBackend()
    compiled = ember.compile(f, backend=counting, fullgraph=True)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        a, b = rng.random(5), rng.random(5)
        a0 = a.copy()
        out = compiled(a, b)
        np.testing.assert_allclose(a, a0 + b)
        np.testing.assert_allclose(out, (a0 + b) * 2)
    assert counting.count == 1  # one graph for every value of the arrays


def test_an_array_returned_unchanged_is_the_callers_array():
    def f(a, x):
        return a, x + 1

    a = np.ones(3)
    got, _ = ember.compile(f, backend="eager")(a, torch.ones(3))
    assert got is a


def test_what_needs_an_arrays_data_breaks_and_is_right():
    def f(x):
        a = x.numpy() * 2
        if a.sum() > 0:  # truth of an array: a break, then Python decides
            return torch.from_numpy(a) + 1
        return torch.from_numpy(a) - 1

    counting = CountingBackend()
    compiled = ember.compile(f, backend=counting)
    for x in (torch.ones(3), -torch.ones(3)):
        torch.testing.assert_close(compiled(x), f(x))
    assert counting.count >= 2


def test_numpy_on_tensors_is_captured_like_torch_compile():
    def f(x, y):
        a = x.numpy()
        a[0] = 7.0  # writes x, as in eager
        return torch.from_numpy(np.where(a > 0, a, np.zeros_like(a))) + y

    assert_captured_like_torch(f, lambda: (torch.linspace(-1, 1, 12).reshape(3, 4), torch.ones(3, 4)))


def test_a_tensor_that_requires_grad_raises_as_in_eager():
    def f(x):
        return x.numpy() + 1

    with pytest.raises(RuntimeError, match="requires grad"):
        ember.compile(f, backend="eager")(torch.ones(2, requires_grad=True))


def test_a_read_only_array_is_never_written():
    """An array numpy refuses to change (read-only) is not traced: ``a += 1`` raises as in eager,
    also after the graph was made for a writable array of the same shape."""
    def f(a):
        a += 1
        return a * 2

    compiled = ember.compile(f, backend="eager")
    np.testing.assert_allclose(compiled(np.zeros(3)), np.full(3, 2.0))
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        compiled(frozen)
    assert not frozen.any()
