"""Real Python values known at capture time (:class:`~.values.ConstVar`): their truth,
``len`` and iteration.

A value whose class answers ``bool``/``len``/``iter`` in Python (a ModuleList's ``__len__``) has
that code inlined; otherwise the value is asked for real and pinned (guarded on its identity),
since the answer is read now and not through a source. Their attributes are in ``attrs``,
their calls in ``calls``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .constants import as_const, kind_name, lift
from .dispatch import handles_iter, handles_len, handles_next, handles_truth, iterate
from .exceptions import throw
from .inline import call_dunder
from .instances import answers_truth, pin
from .values import ConstVar, Var

if TYPE_CHECKING:
    from .frame import Frame


@handles_truth(ConstVar)
def _const_truth(frame: "Frame", var: ConstVar) -> bool:
    if answers_truth(type(var.value)):
        for name in ("__bool__", "__len__"):  # Python code (a ModuleList's len): inlined
            result = call_dunder(frame, var, name, [])
            if result is not None:
                return bool(as_const(frame, result, f"{name}()"))
        pin(var)
    return bool(var.value)


@handles_len(ConstVar)
def _const_len(frame: "Frame", var: ConstVar) -> Var:
    result = call_dunder(frame, var, "__len__", [])
    if result is not None:
        return result
    pin(var)
    return ConstVar(len(var.value))


@handles_next(ConstVar)
def _const_next(frame: "Frame", var: ConstVar, sent: Var | None) -> Var | None:
    frame.fail("next() of a real iterator (passed in, or made before a graph break): Python reads it")
    raise AssertionError


@handles_iter(ConstVar)
def _iterate_const(frame: "Frame", var: ConstVar) -> list[Var]:
    result = call_dunder(frame, var, "__iter__", [])
    if result is not None:
        return iterate(frame, result)
    value = var.value
    is_iterator = hasattr(value, "__next__") and type(value).__module__ == "builtins"
    if is_iterator and var.source is not None:
        # reading it would use it up: what runs after the graph (a break's native step, or the
        # next call) would find it empty, so Python iterates over it
        frame.fail("iteration over an iterator made outside the captured code (a generator passed in)")
    if isinstance(value, (str, bytes, range, tuple, list, dict, set, frozenset, torch.Size)) or is_iterator:
        pin(var)  # a dict or list subclass: its items are read now, not through sources
        items = list(value)
        if any(isinstance(i, torch.Tensor) for i in items):
            frame.fail("iteration over a constant holding tensors")
        return [lift(i) for i in items]
    if isinstance(value, (int, float, complex, type(None))):  # what Python raises
        throw(TypeError(f"{type(value).__name__!r} object is not iterable"))
    frame.fail(f"iteration over a {kind_name(var)} is not supported")
    raise AssertionError
