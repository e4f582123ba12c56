"""Data-dependent scalars and sizes (``ember.config.capture_scalar_outputs`` and
``capture_dynamic_output_shape_ops``): with the settings on, ``item()``, ``tolist()``, ``nonzero``,
``unique``, ``masked_select`` and ``x[mask]`` stay in one graph, as many graphs as torch.compile
with the same settings, and every backend gives eager's results (the inductor compiling the graph,
its wrapper reading the sizes the data decides); with them off, these break the graph as before."""
from __future__ import annotations

import contextlib
import logging
import warnings
from typing import Any, Callable, Iterator

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback

FLAGS = {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}


def item_in_arithmetic(x, y):
    return x * y.item() + 1


def item_as_size(x, y):
    n = y.item()
    torch._check(n >= 0)
    return torch.zeros(n) + x.sum(), torch.arange(n) * n


def nonzero_then_index(x):
    idx = x.nonzero()
    return idx * 2, x[idx[:, 0]] + 1


def masked_sum(x):
    return x[x > 0].sum()


def unique_plus_one(x):
    return torch.unique(x) + 1


def masked_select_twice(x):
    return torch.masked_select(x, x > 0) * 2


def tolist_sizes(x, y):
    a, b = y.tolist()
    return x * a + b, torch.ones(max(a, 1))


def int_of_tensor(x, y):
    return x * int(y) + float(y.float())


def returns_item(x):
    return x.int().sum().item() * 2, x.nonzero().size(0)


# (fn, argument sets: the second call brings other data, so other unbacked values)
CASES = {
    "item_in_arithmetic": (item_in_arithmetic, [(torch.randn(4), torch.tensor(3)), (torch.randn(4), torch.tensor(7))]),
    "item_as_size": (item_as_size, [(torch.randn(4), torch.tensor(3)), (torch.randn(4), torch.tensor(5))]),
    "nonzero_then_index": (nonzero_then_index, [(torch.tensor([0., 1, 0, 2]),), (torch.tensor([3., 0, 1, 2]),)]),
    "masked_sum": (masked_sum, [(torch.randn(8),), (torch.randn(8),)]),
    "unique": (unique_plus_one, [(torch.tensor([3, 1, 3, 2]),), (torch.tensor([5, 5, 5, 0]),)]),
    "masked_select": (masked_select_twice, [(torch.randn(8),), (torch.randn(8),)]),
    "tolist": (tolist_sizes, [(torch.randn(4), torch.tensor([2, 5])), (torch.randn(4), torch.tensor([0, 3]))]),
    "int_of_tensor": (int_of_tensor, [(torch.randn(4), torch.tensor(3)), (torch.randn(4), torch.tensor(6))]),
    "returns_item": (returns_item, [(torch.ones(3),), (torch.tensor([0., 1, 2]),)]),
}
# the inductor compiles these itself; the others hold a float read from data, run by aten there
INDUCTOR_COMPILES = {"item_in_arithmetic", "item_as_size", "nonzero_then_index", "masked_sum", "unique", "masked_select", "tolist",
                     "returns_item"}


def _torch_graphs(fn: Callable[..., Any], args: tuple) -> int:
    import torch._dynamo

    counting = CountingBackend()
    torch._dynamo.reset()
    with torch._dynamo.config.patch(**FLAGS):
        torch.compile(fn, backend=counting)(*args)
    torch._dynamo.reset()
    return counting.count


@contextlib.contextmanager
def _no_backend_fallback(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    with caplog.at_level(logging.WARNING):
        yield
    fallbacks = [r.getMessage() for r in caplog.records if "running it" in r.getMessage()
                 or "cannot compile" in r.getMessage()]
    caplog.clear()
    assert not fallbacks, fallbacks


@pytest.mark.parametrize("name", list(CASES))
def test_one_graph_like_torch_compile_and_eager_results(name: str, caplog: pytest.LogCaptureFixture) -> None:
    fn, arg_sets = CASES[name]
    expected = [fn(*args) for args in arg_sets]
    counting = CountingBackend()
    with ember.config.patch(**FLAGS), no_fallback():
        compiled = ember.compile(fn, backend=counting)
        for args, want in zip(arg_sets, expected):
            torch.testing.assert_close(compiled(*args), want)
    assert counting.count == 1 == _torch_graphs(fn, arg_sets[0])
    for backend in ("aot_eager", "inductor"):
        checked = _no_backend_fallback(caplog) if backend == "aot_eager" or name in INDUCTOR_COMPILES \
            else contextlib.nullcontext()
        # a float read from data: that graph runs with aten (the inductor's log, or the core's warning
        # when the inductor raised: the same outcome), never the whole function eagerly
        graph_runs_with_aten = backend == "inductor" and name not in INDUCTOR_COMPILES
        with ember.config.patch(**FLAGS), warnings.catch_warnings(record=True) as caught, checked:
            warnings.simplefilter("always")
            compiled = ember.compile(fn, backend=backend)
            for args, want in zip(arg_sets, expected):
                torch.testing.assert_close(compiled(*args), want)
        fell_back = [str(w.message) for w in caught if str(w.message).startswith("ember:")
                     and not (graph_runs_with_aten and "failed to compile a graph" in str(w.message))]
        assert not fell_back, fell_back


@pytest.mark.parametrize("name", ["item_in_arithmetic", "nonzero_then_index", "tolist"])
def test_settings_off_break_as_before(name: str) -> None:
    fn, arg_sets = CASES[name]
    counting = CountingBackend()
    torch.testing.assert_close(ember.compile(fn, backend=counting)(*arg_sets[0]), fn(*arg_sets[0]))
    targets = {getattr(n.target, "__name__", n.target) for g in counting.graphs for n in g.graph.nodes}
    assert counting.count >= 1 and not targets & {"item", "tolist", "nonzero"}


def test_branch_on_item_breaks_and_check_failure_raises() -> None:
    def branch(x, y):
        if y.item() > 2:
            return x + 1
        return x - 1

    counting = CountingBackend()
    with ember.config.patch(**FLAGS):
        compiled = ember.compile(branch, backend=counting)
        for v in (1, 5):
            torch.testing.assert_close(compiled(torch.ones(2), torch.tensor(v)), branch(torch.ones(2), torch.tensor(v)))
        with pytest.raises(RuntimeError):
            ember.compile(item_as_size, backend="inductor")(torch.randn(4), torch.tensor(-1))
    assert counting.count >= 2  # the graph up to the branch, then each branch's own


def test_patch_restores_and_refuses_unknown_names() -> None:
    with ember.config.patch(capture_scalar_outputs=True):
        assert ember.config.capture_scalar_outputs
    assert not ember.config.capture_scalar_outputs
    with pytest.raises(AttributeError):
        with ember.config.patch(no_such_setting=1):
            pass
