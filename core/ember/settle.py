"""Layers of a compiled call that step aside once they only pass calls on.

A compiled graph is reached through several callables, each with a job on the first calls: the
first-call check (``first_call``), the inductor's choice between compiled and eager by timing,
the wait for kernels still building. Once that job is done some of them only forward each call,
unchanged, to one target; each such frame still costs a Python call on every call, a large share
of a small graph's whole compiled call (``benchmarks/overhead.py`` measures it).

The protocol: whoever holds a callable ``fn`` (the runner of a guard entry, ember_aot's dispatch)
calls ``settle(fn, setter)``. If ``fn`` takes part (it has a ``settle`` method), it calls
``setter(target)`` when all its later calls would be ``target(*same args)``, and the holder
calls ``target`` from then on. ``Settling`` passes the setter on to the target, so a chain of
such layers collapses to the innermost one that still has work on each call. A callable that does
not take part is simply kept.

The holders are ember's guard entries, and a guard entry's calls all agree on grad mode and on
which inputs require grad (both are guarded, as torch.compile guards them for its backends). A
layer that chooses per call by those (ember_aot's plan for the grad state, the inductor's
"compiled unless the call needs grad") settles for the first call's choice.
"""
from __future__ import annotations

from typing import Any, Callable

Setter = Callable[[Callable[..., Any]], None]


def settle(fn: Any, setter: Setter) -> None:
    """Ask ``fn`` to report, through ``setter``, the callable its calls can go to directly."""
    hook = getattr(fn, "settle", None)
    if hook is not None:
        hook(setter)


class Settling:
    """The holders of one layer and the target they now call (the layer's ``settle`` method is
    ``self.<Settling>.add``; it calls ``done(target)`` when it settles, and again if it later
    settles deeper)."""

    def __init__(self) -> None:
        self.setters: list[Setter] = []
        self.target: Callable[..., Any] | None = None

    def add(self, setter: Setter) -> None:
        self.setters.append(setter)
        if self.target is not None:
            _hand_over(setter, self.target)

    def done(self, target: Callable[..., Any]) -> None:
        self.target = target
        for setter in self.setters:
            _hand_over(setter, target)


def _hand_over(setter: Setter, target: Callable[..., Any]) -> None:
    setter(target)
    settle(target, setter)  # the target may step aside in turn


__all__ = ["Setter", "Settling", "settle"]
