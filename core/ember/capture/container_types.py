"""Which classes capture models as a builtin container: dict, set and frozenset, OrderedDict and
defaultdict, and the Python subclasses of these (``class Cache(dict)``, ``class Tags(set)``).

An instance of such a subclass is the builtin container's value plus the instance's attributes
(``values.UserDictVar``, ``values.UserSetVar``); what its class writes in Python (``__getitem__``,
``add``, a new method) is inlined, the rest is the builtin's (``user_containers``). This module
only answers questions about classes, so the builder, the operators and the containers may all
ask it without an import circle.
"""
from __future__ import annotations

import abc
import collections
import inspect
import types
from typing import Any

from .values import ConstVar, Var

#: the builtin containers a Python class may subclass and still be modelled, nearest first
BUILTIN_BASES: tuple[type, ...] = (collections.OrderedDict, collections.defaultdict, dict, frozenset, set)
_BUILTIN_ROOTS = frozenset({*BUILTIN_BASES, object})
#: hooks that would run Python code on every attribute access or store: such a class is not modelled
_ATTRIBUTE_HOOKS = ("__setattr__", "__delattr__", "__getattribute__")


def base_of(cls: Any) -> type | None:
    """The builtin container ``cls`` is (or derives from), or None."""
    if not isinstance(cls, type):
        return None
    return next((b for b in cls.__mro__ if b in BUILTIN_BASES), None)


def is_subclass_instance_type(cls: Any) -> bool:
    """A Python subclass of a builtin container whose instances capture models (see the module doc):
    no attribute hooks or slots written in Python, not a Counter (whose methods call C helpers)."""
    base = base_of(cls)
    if base is None or cls in BUILTIN_BASES or type(cls) not in (type, abc.ABCMeta):
        return False
    if issubclass(cls, collections.Counter) or not cls.__flags__ & (1 << 9):  # a heap type: written in Python
        return False
    python_classes = [k for k in cls.__mro__ if k not in _BUILTIN_ROOTS]
    if any("__slots__" in k.__dict__ for k in python_classes):
        return False
    return not any(python_attr(cls, name) is not None for name in _ATTRIBUTE_HOOKS)


def python_attr(cls: type, name: str) -> Any:
    """What ``name`` is on ``cls`` when a class written in Python defines it (a function, property,
    class attribute...), else None: absent, or the builtin container's own."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return None if klass in _BUILTIN_ROOTS else klass.__dict__[name]
    return None


def type_of(var: Var) -> type:
    """The Python type of what a Var stands for (``object`` for a capture-only value)."""
    if isinstance(var, ConstVar):
        return type(var.value)
    try:
        return var.python_type()
    except NotImplementedError:
        return object


def is_data_descriptor(value: Any) -> bool:
    """A property or another descriptor that a store to an instance's attribute goes through."""
    return value is not None and (hasattr(type(value), "__set__") or hasattr(type(value), "__delete__"))


def read_through_descriptor(value: Any) -> bool:
    """A data descriptor that a read of an instance's attribute goes through, before the
    instance's ``__dict__``: one with ``__get__`` too (one without is passed over, as CPython does)."""
    return is_data_descriptor(value) and hasattr(type(value), "__get__")


def python_method(cls: type, name: str) -> types.FunctionType | None:
    """The Python function ``cls`` defines as ``name`` (through any class of its MRO), or None."""
    found = inspect.getattr_static(cls, name, None)
    return found if isinstance(found, types.FunctionType) else None


__all__ = ["BUILTIN_BASES", "base_of", "is_data_descriptor", "is_subclass_instance_type", "python_attr", "read_through_descriptor",
           "python_method", "type_of"]
