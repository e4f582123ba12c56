"""Objects guarded on their class, not their identity: modules and user objects as inputs.

A module or a user object read from the frame (``L['model']``, ``L['self'].config``) is guarded
on its class, as torch.compile guards the nn modules it inlines: every fact the capture reads
from it (an attribute, a parameter, ``training``) is read through its source and guarded on its
own, so another instance of the same class with the same structure reuses the compiled code,
its parameters and buffers read as graph inputs at each call.

The identity of the object is guarded only when the capture depends on it: when the object
itself is handed to real Python code evaluated now (``python_value``), compared by identity
with another object, or asked a question that its class does not answer (its truth, its
length). :meth:`InstanceVar.pin` adds that guard.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any

import torch

from ..guards import GuardSet
from .values import ConstVar

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class written in Python


def by_type(value: Any) -> bool:
    """Whether ``value`` is guarded on its class: an nn.Module, or an instance of a class
    written in Python (not a class, a function, an enum member or a torch C object)."""
    if isinstance(value, torch.nn.Module):
        return True
    cls = type(value)
    return bool(cls.__flags__ & _HEAP_TYPE) and not isinstance(value, (type, enum.Enum))


@dataclasses.dataclass(eq=False)
class InstanceVar(ConstVar):
    """A :class:`ConstVar` guarded on its class; :meth:`pin` guards its identity too."""

    guards: GuardSet | None = dataclasses.field(default=None, repr=False)

    def pin(self) -> None:
        if self.guards is not None and self.source is not None:
            self.guards.identity(self.source, self.value)
            self.guards = None  # once is enough

    def __repr__(self) -> str:
        return f"InstanceVar({type(self.value).__name__})"


@dataclasses.dataclass(eq=False)
class ArrayVar(ConstVar):
    """A numpy array read from the frame, guarded on its type. Handed to ``torch.from_numpy`` /
    ``torch.tensor`` it is a graph input (its elements are data); :meth:`pin` guards its dtype,
    shape and elements once anything reads them at capture (``a + b`` of two arrays, ``a.sum()``,
    its truth or length), so that the folded result cannot go stale."""

    guards: GuardSet | None = dataclasses.field(default=None, repr=False)

    def pin(self) -> None:
        if self.guards is not None and self.source is not None:
            self.guards.array_content(self.source, self.value)
            self.guards = None

    def __repr__(self) -> str:
        return f"ArrayVar({self.value.dtype}{list(self.value.shape)})"


def pin(*vars: Any) -> None:
    """Guard what each of ``vars`` stands for where capture reads it now: the identity of an
    :class:`InstanceVar`, the elements of an :class:`ArrayVar`."""
    for var in vars:
        if isinstance(var, (InstanceVar, ArrayVar)):
            var.pin()


def answers_truth(cls: type) -> bool:
    """Whether an instance's truth value depends on the instance (``__bool__`` or ``__len__``)."""
    return getattr(cls, "__bool__", None) is not None or getattr(cls, "__len__", None) is not None


__all__ = ["ArrayVar", "InstanceVar", "answers_truth", "by_type", "pin"]
