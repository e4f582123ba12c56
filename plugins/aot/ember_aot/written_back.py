"""Runs the user's torch-level graph with the in-place clamps written as a clamp and a ``copy_``.

Functionalizing ``x[1:].clamp_(min=0)`` (an in-place clamp of a view) with symbolic sizes runs
torch's Python reference for the in-place op, which broadcasts with a non-symbolic ``expand``
and fails ("SymIntArrayRef expected to contain only concrete integers"): such a graph ran
eagerly under dynamic shapes. ``y = x.clamp(...); x.copy_(y)`` is the same program and traces.
Where autograd records it, the clamp reads a clone of ``x``: the clamp's backward reads its
input, which the ``copy_`` then overwrites (eager's in-place clamp saves what it needs itself).
A result of another dtype than ``x`` (eager refuses that cast in place) is left to the
in-place op itself.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx

#: In-place method -> its functional twin.
WRITTEN_BACK = {"clamp_": "clamp", "clamp_min_": "clamp_min", "clamp_max_": "clamp_max"}
#: The same ops called as functions (``torch.clamp_(x, ...)``, ``torch.Tensor.clamp_(x, ...)``).
_FUNCTIONS: dict[Callable, str] = {
    fn: name for name in WRITTEN_BACK for fn in (getattr(torch, name, None), getattr(torch.Tensor, name)) if fn
}


def _written_back(name: str, args: tuple, kwargs: dict) -> Any:
    """``args[0].<functional>(...)`` copied into ``args[0]``; NotImplemented where that differs."""
    target = args[0] if args else None
    if not isinstance(target, torch.Tensor):
        return NotImplemented
    source = target.clone() if target.requires_grad and torch.is_grad_enabled() else target
    out = getattr(source, WRITTEN_BACK[name])(*args[1:], **kwargs)
    return target.copy_(out) if out.dtype == target.dtype else NotImplemented


class WrittenBackInterpreter(torch.fx.Interpreter):
    """``torch.fx.Interpreter`` with the in-place clamps of ``WRITTEN_BACK`` rewritten; the values
    of the nodes named in ``keep`` stay in ``kept`` after the run."""

    def __init__(self, gm: torch.fx.GraphModule, keep: frozenset[str] = frozenset()) -> None:
        super().__init__(gm)
        self.keep = keep
        self.kept: dict[str, Any] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        result = super().run_node(n)
        if n.name in self.keep:
            self.kept[n.name] = result
        return result

    def call_method(self, target: Any, args: tuple, kwargs: dict) -> Any:
        if target in WRITTEN_BACK:
            out = _written_back(target, args, kwargs)
            if out is not NotImplemented:
                return out
        return super().call_method(target, args, kwargs)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        name = _FUNCTIONS.get(target) if callable(target) else None
        if name is not None:
            out = _written_back(name, args, kwargs)
            if out is not NotImplemented:
                return out
        return super().call_function(target, args, kwargs)
