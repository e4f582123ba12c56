"""Context managers of any class are inlined under ``fullgraph=True`` (issue 46 item 2).

Each case runs eagerly, through ember with a counting backend (one graph, no fallback warning)
and, where it counts graphs, through torch.compile: ember compiles no more graphs. Covered: user
classes with ``__enter__``/``__exit__``, ``@contextlib.contextmanager`` generators (module-level,
made inside the function, entered by hand), ``contextlib.nullcontext``/``suppress``, locks, the
grad-mode switches in every form (call, context, decorator, wrapper) and exceptions crossing
``__exit__`` (suppressed or re-raised, as Python does).
"""
from __future__ import annotations

import contextlib
import threading

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback

LOG: list[str] = []


class GradSwitch:
    def __init__(self, mode: bool) -> None:
        self.prev = torch.is_grad_enabled()
        self.mode = mode

    def __enter__(self) -> "GradSwitch":
        torch._C._set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc: object) -> None:
        torch._C._set_grad_enabled(self.prev)


class Swallow:
    def __enter__(self) -> int:
        return 3

    def __exit__(self, kind: type | None, value: object, tb: object) -> bool:
        return kind is ValueError


@contextlib.contextmanager
def grad_switch(mode: bool):
    prev = torch.is_grad_enabled()
    try:
        yield torch._C._set_grad_enabled(mode)
    finally:
        torch._C._set_grad_enabled(prev)


@contextlib.contextmanager
def scaled(x: torch.Tensor):
    try:
        yield x * 2
    except KeyError:
        pass


LOCK = threading.Lock()


def class_manager(x):
    with GradSwitch(False) as g:
        y = x * 2
    return y, y.requires_grad, g.mode


def class_manager_swallows(x):
    with Swallow() as n:
        x = x + n
        raise ValueError("gone")
    return x * 2


def generator_manager(x):
    with grad_switch(False):
        y = x.sin()
    return y + 1, y.requires_grad


def generator_manager_suppresses(x):
    with scaled(x) as y:
        z = y + 1
        raise KeyError("gone")
    return z


def generator_manager_reraises(x):
    try:
        with scaled(x) as y:
            raise ValueError("kept")
    except ValueError:
        y = y - 1
    return y


def local_contextmanager(x):
    @contextlib.contextmanager
    def plus(v):
        yield v + 1

    with plus(x) as q:
        return q * 2


def manual_enter_exit(x):
    cm = scaled(x)
    y = cm.__enter__()
    cm.__exit__(None, None, None)
    return y


def stdlib_managers(x):
    with contextlib.nullcontext(2) as n:
        y = x * n
    with contextlib.suppress(IndexError):
        y = y + 1
        raise IndexError
    with LOCK:
        y = y - 1
    return y


def grad_decorators(x):
    @torch.no_grad()
    def off(v):
        return v * 2

    on = torch.enable_grad(lambda v: v * 3)
    with torch.no_grad():
        b = on(x)

    @torch.set_grad_enabled(False)
    def off2(v):
        return v + 1

    return off(x), b, off2(x), torch.is_grad_enabled()


def set_grad_enabled_call(x):
    torch.set_grad_enabled(False)
    y = x * 2
    torch.set_grad_enabled(True)
    return y, y.requires_grad


CASES = [class_manager, class_manager_swallows, generator_manager, generator_manager_suppresses,
         generator_manager_reraises, local_contextmanager, manual_enter_exit, stdlib_managers, grad_decorators,
         set_grad_enabled_call]


def _same(a, b) -> None:
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b)
        assert a.requires_grad == b.requires_grad
    else:
        assert a == b


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_captured_in_one_graph(fn) -> None:
    x = torch.randn(3, requires_grad=True)
    expected = fn(x)
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=backend, fullgraph=True)(x)
    _same(got, expected)
    assert backend.count == 1
    assert torch.is_grad_enabled()


def test_break_inside_inlined_block_enters_it_in_python() -> None:
    """A break inside an inlined block: the capture starts again with that block entered in
    Python (its __exit__ runs once, where Python runs it)."""
    def fn(x):
        y = x.sin()
        with grad_switch(False):
            y = y * 2
            LOG.append("in")  # a list append is captured; print breaks
            print("", end="")
            z = y + 1
        return z, z.requires_grad, torch.is_grad_enabled()

    x = torch.randn(3, requires_grad=True)
    LOG.clear()
    expected = fn(x)
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=backend)(x)
    _same(got, expected)
    assert LOG == ["in", "in"]
    # before the block, inside it up to the break, after it (torch.compile runs this frame eagerly)
    assert backend.count == 3


def test_exception_leaving_the_function_passes_through_exit() -> None:
    def fn(x):
        with GradSwitch(False):
            raise RuntimeError("out")

    with pytest.raises(RuntimeError, match="out"):
        ember.compile(fn, backend=CountingBackend())(torch.ones(2))
    assert torch.is_grad_enabled()
