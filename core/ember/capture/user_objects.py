"""Instances of plain Python classes created inside captured code (HF's ``DynamicCache``).

Calling a user class whose ``__init__`` is Python code makes a :class:`UserObjectVar`: an object
that exists only in the capture, its instance attributes held as Vars in ``items`` (so the
capture's undo log can restore them). ``__init__`` and methods are inlined, attribute stores
update ``items`` (the object is new, so nothing is replayed), and the runner builds the real
object after the graph from its recorded attributes (``cls.__new__`` plus its ``__dict__``).
Its truth, ``len`` and iteration follow Python's protocols (``__bool__``/``__len__``, ``__iter__`` or
``__getitem__`` from 0 until IndexError), inlined.
Slots that name attributes are held as any other attribute (torch's OrderedSet, whose module is
the one of torch inlined). Classes with custom ``__new__``/``__setattr__``/``__getattribute__``, other
slots or abstract methods are refused (the call breaks the graph instead). Context managers are built like any other object
(``inlined_contexts.py`` inlines their ``__enter__``/``__exit__``).
"""
from __future__ import annotations

import abc
import inspect
import types
from typing import TYPE_CHECKING, Any

import torch

from .constants import as_const, lift
from .dispatch import (
    call, each_item, handles_attr, handles_call, handles_iter, handles_len, handles_next, handles_store, handles_truth,
    iterate,
)
from .exceptions import Raised, stop_value, throw
from .functions import class_function
from .inline import call_dunder, class_member, inline_call
from .side_effects import DELETED
from .values import ConstVar, InstanceDictVar, Var

if TYPE_CHECKING:
    from .frame import Frame
    from .output import OutputBuilder


class UserObjectVar(Var):
    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.items: dict[str, Var] = {}
        self.stand_in: Any = None  # what an object built over fake tensors holds in its place
        self.rebuilding = False  # its rebuild expression is being written (a cycle reaches it again)
        self.result: Var = ConstVar(None)  # an iterator's: the value of the StopIteration that ended it

    def python_type(self) -> type:
        return self.cls

    @property
    def lazy(self) -> bool:
        """An iterator (a Python ``__next__``): read one item at a time (dispatch.is_lazy)."""
        return isinstance(inspect.getattr_static(self.cls, "__next__", None), types.FunctionType)

    def __repr__(self) -> str:
        return f"UserObjectVar({self.cls.__name__})"


_MISSING = object()
_SKIPPED_ROOTS = ("torch", "builtins", "collections", "typing", "enum", "abc", "threading", "logging")
#: torch's own plain Python classes that the capture builds and inlines, as torch.compile does
_INLINED_TORCH_MODULES = frozenset({"torch.utils._ordered_set"})


def can_construct(cls: Any) -> bool:
    """A plain Python class the capture can build: Python ``__init__`` (or none), the default
    ``__new__``, ``__setattr__`` and ``__getattribute__``, a ``__dict__`` and no abstract methods."""
    if not isinstance(cls, type) or type(cls) not in (type, abc.ABCMeta):
        return False
    skipped = cls.__module__.split(".")[0] in _SKIPPED_ROOTS and cls.__module__ not in _INLINED_TORCH_MODULES
    if skipped or issubclass(cls, (torch.nn.Module, BaseException)):
        return False
    if any(base.__module__ == "builtins" and base is not object for base in cls.__mro__):
        return False  # a subclass of dict, list, tuple...: not a plain object
    if getattr(cls, "__abstractmethods__", None) or not _plain_slots(cls):
        return False
    if cls.__new__ is not object.__new__ or cls.__setattr__ is not object.__setattr__ \
            or cls.__getattribute__ is not object.__getattribute__:
        return False
    return cls.__init__ is object.__init__ or isinstance(inspect.getattr_static(cls, "__init__"), types.FunctionType)


def _plain_slots(cls: type) -> bool:
    """``__slots__`` that only name attributes (torch's OrderedSet): held in ``items`` as any other."""
    for klass in cls.__mro__[:-1]:
        slots = klass.__dict__.get("__slots__", ())
        slots = (slots,) if isinstance(slots, str) else tuple(slots)
        if any(name in ("__dict__", "__weakref__") or name.startswith("__") for name in slots):
            return False
    return True


def _is_slot(cls: type, name: str) -> bool:
    return isinstance(inspect.getattr_static(cls, name, None), types.MemberDescriptorType)


def construct(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> UserObjectVar:
    var = UserObjectVar(cls)
    init = inspect.getattr_static(cls, "__init__")
    if isinstance(init, types.FunctionType):
        result = inline_call(frame, ConstVar(init), [var, *args], kwargs)
        if not (isinstance(result, ConstVar) and result.value is None):
            frame.fail(f"{cls.__name__}.__init__ returned a value")
    elif args or kwargs:
        frame.fail(f"{cls.__name__}() takes no arguments")
    return var


@handles_attr(UserObjectVar)
def load_attr(frame: "Frame", obj: UserObjectVar, name: str) -> Var:
    if name == "__class__":
        return ConstVar(obj.cls)
    if name == "__dict__":
        if all("__slots__" in k.__dict__ for k in obj.cls.__mro__[:-1]):
            throw(AttributeError(f"{obj.cls.__name__!r} object has no attribute '__dict__'"))
        return InstanceDictVar(obj, "items")  # its attribute table itself
    static = inspect.getattr_static(obj.cls, name, _MISSING)
    if isinstance(static, property):  # data descriptors win over the instance dict
        return class_member(frame, obj, obj.cls, name, static) or frame.fail(f"property {name!r} with no getter")
    if name in obj.items:
        return obj.items[name]
    member = class_member(frame, obj, obj.cls, name, static)
    if member is not None:
        return member
    if _is_slot(obj.cls, name):  # a slot not set
        throw(AttributeError(f"{obj.cls.__name__!r} object has no attribute {name!r}"))
    if static is not _MISSING:
        if hasattr(type(static), "__get__"):
            frame.fail(f"descriptor {name!r} of {obj.cls.__name__}")
        return lift(static)
    fallback = inspect.getattr_static(obj.cls, "__getattr__", None)
    if isinstance(fallback, types.FunctionType):
        return call(frame, ConstVar(fallback), [obj, ConstVar(name)], {})
    throw(AttributeError(f"{obj.cls.__name__!r} object has no attribute {name!r}"))
    raise AssertionError


@handles_store(UserObjectVar)
def store_attr(frame: "Frame", obj: UserObjectVar, name: str, value: Any, default: bool = False) -> None:
    """``obj.name = value`` (a Var) or ``del obj.name`` (``value`` is side_effects.DELETED); built
    by the capture, so nothing is replayed (``default``, Python's own store, is the same here)."""
    if isinstance(inspect.getattr_static(obj.cls, name, None), property):
        frame.fail(f"assignment to property {name!r} of {obj.cls.__name__}")
    if not _is_slot(obj.cls, name) and all("__slots__" in k.__dict__ for k in obj.cls.__mro__[:-1]):
        throw(AttributeError(f"{obj.cls.__name__!r} object has no attribute {name!r}"))  # no __dict__
    frame.state.remember(obj)
    if value is DELETED:
        if name not in obj.items:
            throw(AttributeError(name))
        del obj.items[name]
    else:
        obj.items[name] = value


@handles_call(UserObjectVar)
def _call(frame: "Frame", var: UserObjectVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``obj(...)``: its class's ``__call__``, inlined where it is Python code."""
    method = next((c.__dict__["__call__"] for c in var.cls.__mro__ if "__call__" in c.__dict__), None)
    if method is None:
        throw(TypeError(f"{var.cls.__name__!r} object is not callable"))
    if not isinstance(method, types.FunctionType):
        frame.fail(f"calling a {var.cls.__name__} (its __call__ is not Python code)")
    return inline_call(frame, class_function(frame.state, var.cls, "__call__", method), [var, *args], kwargs)


@handles_truth(UserObjectVar)
def _truth(frame: "Frame", var: UserObjectVar) -> bool:
    for name in ("__bool__", "__len__"):
        result = call_dunder(frame, var, name, [])
        if result is not None:
            return bool(as_const(frame, result, f"{name}()"))
    return True


@handles_len(UserObjectVar)
def _len(frame: "Frame", var: UserObjectVar) -> Var:
    result = call_dunder(frame, var, "__len__", [])
    if result is None:
        throw(TypeError(f"object of type {var.cls.__name__!r} has no len()"))
    return result


@handles_iter(UserObjectVar)
def _iterate(frame: "Frame", var: UserObjectVar) -> list[Var]:
    result = call_dunder(frame, var, "__iter__", [])
    if result is var and var.lazy:  # its own iterator: its __next__ until StopIteration
        return list(each_item(frame, var))
    if result is not None:
        return iterate(frame, result)
    return _iterate_by_index(frame, var)


@handles_next(UserObjectVar)
def _next(frame: "Frame", var: UserObjectVar, sent: Var | None) -> Var | None:
    """``__next__`` (``send(value)`` for a value sent through ``yield from``); None at StopIteration,
    whose value is then the object's ``result``."""
    try:
        if sent is None or isinstance(sent, ConstVar) and sent.value is None:
            item = call_dunder(frame, var, "__next__", [])
        else:
            item = call(frame, load_attr(frame, var, "send"), [sent], {})
    except Raised as raised:
        if isinstance(raised.value.value, StopIteration):
            var.result = stop_value(raised.value)
            return None
        raise
    if item is None:
        frame.fail(f"next() of a {var.cls.__name__} (no Python __next__)")
    return item


def _iterate_by_index(frame: "Frame", var: UserObjectVar) -> list[Var]:
    """The old sequence protocol: ``obj[0]``, ``obj[1]``... until ``__getitem__`` raises IndexError."""

    items: list[Var] = []
    while len(items) < 100_000:
        try:
            item = call_dunder(frame, var, "__getitem__", [ConstVar(len(items))])
        except Raised as raised:
            if isinstance(raised.value.value, IndexError):
                return items
            raise
        if item is None:
            frame.fail(f"iteration over a {var.cls.__name__} (no Python __iter__ or __getitem__)")
        items.append(item)
    frame.fail(f"iteration over a {var.cls.__name__} does not end")
    raise AssertionError


def _rebuild(cls: type, attrs: dict) -> Any:
    obj = cls.__new__(cls)
    for name, value in attrs.items():
        if _is_slot(cls, name):
            object.__setattr__(obj, name, value)
        else:
            obj.__dict__[name] = value  # past a property of the class, as the capture stored it
    return obj


def rebuild_expr(out: "OutputBuilder", var: UserObjectVar) -> str:
    from ..errors import Unsupported

    if var.rebuilding:
        raise Unsupported(f"returning a {var.cls.__name__} that refers to itself is not supported yet")
    var.rebuilding = True
    try:
        body = ", ".join(f"{name!r}: {out.expr(value)}" for name, value in var.items.items())
    finally:
        var.rebuilding = False
    return f"{out.consts.name(_rebuild, 'mk')}({out.consts.name(var.cls, 'cls')}, {{{body}}})"

