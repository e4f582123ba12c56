"""What capture reads from a Python function it inlines, and the guards that keep it true.

A function reached through a class (a method, a property's getter, ``forward``, a special
method) is read from the class at capture: :func:`class_function` guards that the class still
gives it, so that a class patched after compiling (``Attention.forward = patched``) recompiles.
The defaults an inlined call uses are read from the function's ``__defaults__`` and
``__kwdefaults__`` through a source (:func:`default`): replaced defaults recompile, a tensor
default is a graph input read at each call (an in-place change reaches the default itself), a
list default is the one list.
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from .builder import wrap
from .sources import AttrSource, ItemSource, Source, constant_source
from .values import ConstVar

if TYPE_CHECKING:
    from .frame import Frame
    from .state import CaptureState


def class_function(state: "CaptureState", cls: type, name: str, static: Any) -> ConstVar:
    """The Python function that ``static`` (what ``inspect.getattr_static`` found on ``cls`` or its
    bases: a function, a static or class method, a property) holds (a property: its getter), with
    its source and a guard that ``getattr(cls, name)`` still stands for it."""
    source = AttrSource(constant_source(cls), name)
    if isinstance(static, (staticmethod, classmethod)):
        func = static.__func__
        if isinstance(static, classmethod):  # a new bound method at each read: its function
            source = AttrSource(source, "__func__")
        state.guards.identity(source, func)  # a static method: the class gives the function itself
        return ConstVar(func, source)
    state.guards.identity(source, static)
    if isinstance(static, property):
        return ConstVar(static.fget, AttrSource(source, "fget"))
    return ConstVar(static, source)


def function_source(func: types.FunctionType, source: Source | None) -> Source:
    """Where guards read ``func`` from: its own source, else the function object itself."""
    return source if source is not None else constant_source(func)


def default(frame: "Frame", func: types.FunctionType, source: Source, key: int | str) -> Any:
    """The default of a parameter the call left out: ``__defaults__[key]`` (an index counted from
    the end, as Python aligns defaults with the last parameters) or ``__kwdefaults__[key]``."""
    state = frame.state
    if isinstance(key, int):
        table, table_source = func.__defaults__, AttrSource(source, "__defaults__")
        state.guards.length(table_source, table)  # which parameters have defaults
        index = len(table) + key
    else:
        table, table_source = func.__kwdefaults__, AttrSource(source, "__kwdefaults__")
        state.guards.dict_keys(table_source, table)
        index = key
    return wrap(state, table[index], ItemSource(table_source, index))


__all__ = ["class_function", "default", "function_source"]
