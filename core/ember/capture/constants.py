"""Constants: the Python value of a symbolic value that holds no tensor, and back.

:func:`python_value` reads a Var that is fully known at capture time (a ConstVar, or a
container of them) as the Python value it stands for; :func:`lift` wraps a value computed
during capture as a Var. Every other module of capture builds on these two.
"""
from __future__ import annotations

import collections
import types
from typing import TYPE_CHECKING, Any

from .instances import pin
from .symbolic import SliceVar, SymVar
from .values import (
    BoundMethodVar, ConstVar, DictVar, DictViewVar, Identity, ListVar, SetVar, TensorVar, TupleVar, UserDictVar, UserSetVar,
    Var,
)

if TYPE_CHECKING:
    from .frame import Frame


class NotConstant(Exception):
    pass


#: builtin containers whose methods in READ_ONLY_METHODS are evaluated on a real instance
READ_ONLY_OWNERS = (dict, list, tuple, str, set, frozenset)
READ_ONLY_METHODS = frozenset({"get", "keys", "values", "items", "__getitem__", "__contains__", "__len__", "index",
                               "count", "copy"})


def python_value(var: Var, specialize: bool = True) -> Any:
    """The Python value of a fully constant Var; raises NotConstant otherwise. The value goes
    to real Python code: an object guarded on its class is now guarded on its identity. A
    symbolic size is specialised to its value (the ShapeEnv guards it), unless ``specialize`` is
    False."""
    if isinstance(var, ConstVar):
        pin(var)
        return var.value
    if isinstance(var, SymVar):
        if not specialize:
            raise NotConstant("a symbolic size")
        return var.concrete()
    if isinstance(var, SliceVar):
        return slice(*(python_value(v, specialize) for v in (var.start, var.stop, var.step)))
    if isinstance(var, TupleVar):
        items = [python_value(v, specialize) for v in var.items]
        if var.tuple_type is tuple:
            return tuple(items)
        if hasattr(var.tuple_type, "_fields"):
            return var.tuple_type(*items)
        return var.tuple_type(items)
    if isinstance(var, ListVar):
        return [python_value(v, specialize) for v in var.items]
    if isinstance(var, (UserDictVar, UserSetVar)):  # its class's Python code must not run for real
        raise NotConstant("an instance of a subclass of a builtin container")
    if isinstance(var, DictVar):
        if any(isinstance(k, Identity) for k in var.items):
            raise NotConstant("a dict keyed by tensors or objects")
        items = {k: python_value(v, specialize) for k, v in var.items.items()}
        if var.dict_type is dict:
            return items
        if issubclass(var.dict_type, collections.defaultdict):
            factory = var.default_factory
            return var.dict_type(None if factory is None else python_value(factory, specialize), items)
        return var.dict_type(items)  # an OrderedDict (its order compared), a Counter
    if isinstance(var, SetVar):
        if any(isinstance(i, Identity) for i in var.items):
            raise NotConstant("a set holding tensors")
        return var.set_type(var.items)
    if isinstance(var, DictViewVar) and isinstance(var.mapping, DictVar) \
            and not any(isinstance(k, Identity) for k in var.mapping.items):  # a view of a copy, read now
        if var.kind == "keys":  # the keys alone, whatever the values are
            return dict.fromkeys(var.mapping.items).keys()
        return getattr({k: python_value(v, specialize) for k, v in var.mapping.items.items()}, var.kind)()
    if isinstance(var, BoundMethodVar):
        return types.MethodType(python_value(var.func, specialize), python_value(var.self_var, specialize))
    raise NotConstant(type(var).__name__)


def as_const(frame: "Frame", var: Var, what: str) -> Any:
    try:
        return python_value(var)
    except NotConstant:
        frame.fail(f"{what} needs a Python value, got a {kind_name(var)}")


def kind_name(var: Var) -> str:
    if isinstance(var, TensorVar):
        return "tensor"
    if isinstance(var, ConstVar):
        return f"{type(var.value).__name__} value"
    return type(var).__name__


def lift(value: Any) -> Var:
    """A Python value made during capture (no source) as a Var, containers structurally."""
    if isinstance(value, list):
        return ListVar([lift(v) for v in value])
    if isinstance(value, tuple) and type(value) is tuple:
        return TupleVar([lift(v) for v in value])
    return ConstVar(value)


__all__ = ["READ_ONLY_METHODS", "READ_ONLY_OWNERS", "NotConstant", "as_const", "kind_name", "lift", "python_value"]
