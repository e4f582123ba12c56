"""Instances of Python subclasses of dict, set and frozenset (and OrderedDict, defaultdict), as
torch.compile's UserDefinedDictVariable / UserDefinedSetVariable model them.

Such an instance is the builtin container's value plus its own attributes
(:class:`~.values.UserDictVar`, :class:`~.values.UserSetVar`): every path that reads a dict or a
set reads its items, and what its class writes in Python comes first. ``d[k]``, ``d[k] = v``,
``del d[k]``, ``k in d``, ``iter``, ``len``, truth and the operators inline the class's
``__getitem__``, ``__setitem__``, ``__contains__``, ``__iter__``, ``__or__``, ``__eq__``... when it
writes them (a dict subclass's ``__missing__`` too), and are the builtin's otherwise; ``d.name``
is an instance attribute, a Python method, property or class attribute of the class, or the
builtin container's method (``containers.ContainerMethod``, on the items, never through the
class's overrides, as ``super().update(...)`` is).

Made by the captured code (``Cache(k=3)``: the builtin's ``__new__``, then the class's Python
``__init__`` inlined, or the builtin's), it is rebuilt after the graph without running its class's
code (``cls.__new__``, the builtin's own update, then its ``__dict__``). Read from the frame
(``builder``), it is guarded on its type and its keys read through the builtin's own methods;
its items and attributes are read through sources, and its mutations are replayed on it after
the graph through the builtin's methods.
"""
from __future__ import annotations

import collections
import inspect
import types
from typing import TYPE_CHECKING, Any

from . import py_operators, set_keys
from .builder import wrap
from .constants import as_const, lift
from .container_dunders import builtin_init, call_dunder_method, calls_back, getitem
from .container_types import base_of, is_data_descriptor, is_subclass_instance_type, python_attr, python_method
from .containers import ContainerMethod
from .dispatch import call, handles_attr, handles_iter, handles_len, handles_operator, handles_store, handles_truth, \
    iterate
from .exceptions import throw
from .functions import class_function
from .inline import call_dunder, class_member, inline_call
from .side_effects import DELETED
from .sources import AttrSource
from .ops import mutable_dict
from .values import ConstVar, DictVar, InstanceDictVar, ListVar, SetVar, UserDictVar, UserSetVar, Var

if TYPE_CHECKING:
    from .frame import Frame
    from .output import OutputBuilder

UserContainer = UserDictVar | UserSetVar
_MISSING = object()
_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType, types.ClassMethodDescriptorType,
            types.BuiltinMethodType)


def can_construct(cls: Any) -> bool:
    return is_subclass_instance_type(cls)


def construct(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``cls(*args, **kwargs)``: the class's Python ``__new__`` inlined, else the builtin's (a
    frozenset's takes the elements); then, on an instance of ``cls``, the class's Python
    ``__init__`` inlined, else the builtin's."""
    new = python_method(cls, "__new__") or python_attr(cls, "__new__")
    if new is None:
        var = _new_instance(frame, cls, args, kwargs)
    else:
        made = inline_call(frame, class_function(frame.state, cls, "__new__", inspect.getattr_static(cls, "__new__")),
                           [ConstVar(cls), *args], kwargs)
        if not (isinstance(made, (UserDictVar, UserSetVar)) and issubclass(made.python_type(), cls)):
            return made  # not an instance of cls: Python calls no __init__
        var = made
    init = python_method(cls, "__init__")
    if init is None:
        if base_of(cls) is not frozenset:
            calls_back(frame, var, "__init__")
            builtin_init(frame, var, args, kwargs)
        return var
    method = class_function(frame.state, cls, "__init__", inspect.getattr_static(cls, "__init__"))
    result = inline_call(frame, method, [var, *args], kwargs)
    if not (isinstance(result, ConstVar) and result.value is None):
        throw(TypeError(f"__init__() should return None, not '{result.python_type().__name__}'"))
    return var


def is_builtin_new(value: Any) -> bool:
    """``dict.__new__``, ``set.__new__``, ``frozenset.__new__``, ``list.__new__`` (what
    ``super().__new__`` reaches)."""
    return isinstance(value, types.BuiltinMethodType) and value.__name__ == "__new__" \
        and value.__self__ in (dict, set, frozenset, list)


def builtin_new(frame: "Frame", owner: type, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``owner.__new__(cls, *args)``: an empty container of ``cls`` (a frozenset's holds ``args[0]``)."""
    if not args:
        throw(TypeError(f"{owner.__name__}.__new__(): not enough arguments"))
    cls = as_const(frame, args[0], "the class given to __new__")
    if not isinstance(cls, type) or not issubclass(cls, owner):
        throw(TypeError(f"{owner.__name__}.__new__(X): X is not a subtype of {owner.__name__}"))
    if cls in (dict, collections.OrderedDict, collections.defaultdict):
        return DictVar({}, dict_type=cls, default_factory=ConstVar(None) if cls is collections.defaultdict else None)
    if cls in (set, frozenset):
        elements = set_keys.keys_of(frame, args[1]) if cls is frozenset and len(args) > 1 else ()
        return set_keys.make(frame, set(elements), cls)
    if cls is list:  # empty whatever the other arguments (list.__init__ fills it)
        return ListVar([])
    if not is_subclass_instance_type(cls):
        frame.fail(f"{owner.__name__}.__new__ of {cls.__name__}, a class capture does not model")
    return _new_instance(frame, cls, args[1:], kwargs)


def _new_instance(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> UserContainer:
    """The builtin's ``__new__`` of a subclass: empty (a frozenset's holds its elements)."""
    base = base_of(cls)
    var: UserContainer
    if issubclass(base, (set, frozenset)):
        var = UserSetVar(set(), set_type=cls)
        if base is frozenset:
            if kwargs and python_method(cls, "__init__") is None:
                throw(TypeError(f"{cls.__name__}() takes no keyword arguments"))
            if len(args) > 1:
                throw(TypeError(f"{cls.__name__} expected at most 1 argument, got {len(args)}"))
            if args:
                var.items = set(set_keys.keys_of(frame, args[0]))
                set_keys.keep_distinct(frame, var.items)
    else:
        factory = ConstVar(None) if issubclass(base, collections.defaultdict) else None
        var = UserDictVar({}, dict_type=cls, default_factory=factory)
    return var


# -- attributes ------------------------------------------------------------------------------------
@handles_attr(UserDictVar, UserSetVar)
def load_attr(frame: "Frame", var: UserContainer, name: str) -> Var:
    cls = var.python_type()
    if name == "__class__":
        return ConstVar(cls)
    if name == "__dict__":
        return _instance_dict(frame, var, create=True)
    written = python_attr(cls, name)
    if isinstance(written, property) or is_data_descriptor(written):
        return class_member(frame, var, cls, name, written) or frame.fail(f"descriptor {name!r} of {cls.__name__}")
    own = _own_attr(frame, var, name)
    if own is not None:
        return own
    if written is not None:
        member = class_member(frame, var, cls, name, written)
        if member is not None:
            return member
        if hasattr(type(written), "__get__"):
            frame.fail(f"descriptor {name!r} of {cls.__name__}")
        return lift(written)
    builtin = inspect.getattr_static(cls, name, _MISSING)
    if name == "default_factory" and isinstance(var, UserDictVar) and var.default_factory is not None:
        return var.default_factory
    if isinstance(builtin, types.ClassMethodDescriptorType):  # dict.fromkeys: bound to the class
        return ConstVar(getattr(cls, name))
    if isinstance(builtin, _METHODS):
        return ContainerMethod(var, name)
    if builtin is not _MISSING and not hasattr(type(builtin), "__get__"):
        return lift(builtin)  # __doc__, __hash__ = None...
    fallback = python_attr(cls, "__getattr__")  # a Python function, or ``__getattr__ = dict.__getitem__``
    if fallback is not None:
        return call(frame, ConstVar(fallback), [var, ConstVar(name)], {})
    if var.real is not None and frame.state.side_effects.lookup_attr(var.real, name) is None:
        frame.state.guards.lacks(var.source, name)  # another object passed in may have it
    throw(AttributeError(f"{cls.__name__!r} object has no attribute {name!r}"))
    raise AssertionError


def _instance_dict(frame: "Frame", var: UserContainer, create: bool) -> Var | None:
    """``var.__dict__``: the table of its attributes (one made by the captured code), or (an input)
    its real ``__dict__`` wrapped as a dict read from ``var.__dict__`` (its changes replayed), once
    the code asked for it (``create``); None when it has not."""
    if var.real is None:
        return InstanceDictVar(var, "attrs")
    real_dict = var.real.__dict__
    seen = frame.state.containers.get(id(real_dict))
    if seen is not None and seen[0] is real_dict:
        return seen[1]
    if not create:
        return None
    if any(key[0] == id(var.real) for key in frame.state.side_effects.attrs):
        frame.fail(f"reading __dict__ of a {type(var.real).__name__} with stores not yet replayed")
    table = wrap(frame.state, real_dict, AttrSource(var.source, "__dict__"))
    if not isinstance(table, DictVar):
        frame.fail(f"the __dict__ of a {type(var.real).__name__} has keys that are not strings")
    return table


def _own_attr(frame: "Frame", var: UserContainer, name: str) -> Var | None:
    """An instance attribute: stored by the captured code, or (an input) read through its source
    (through its ``__dict__`` once the code holds that)."""
    table = _instance_dict(frame, var, create=False)
    if table is not None:
        return table.items.get(name)
    value = frame.state.side_effects.lookup_attr(var.real, name)
    if value is None and name in var.real.__dict__:
        return wrap(frame.state, var.real.__dict__[name], AttrSource(var.source, name), object_attr=True)
    return None if value is DELETED else value


@handles_store(UserDictVar, UserSetVar)
def store_attr(frame: "Frame", var: UserContainer, name: str, value: Any, default: bool = False) -> None:
    """``obj.name = value`` (or ``del``): a property's setter inlined, else an instance attribute
    (an input's replayed after the graph)."""
    cls = var.python_type()
    written = python_attr(cls, name)
    if isinstance(written, property):
        if value is DELETED or not isinstance(written.fset, types.FunctionType):
            frame.fail(f"assignment to property {name!r} of {cls.__name__}")
        call(frame, ConstVar(written.fset), [var, value], {})
        return
    if is_data_descriptor(written) or name == "__class__":
        frame.fail(f"assignment to {name!r} of a {cls.__name__}")
    if name == "default_factory" and isinstance(var, UserDictVar) and var.default_factory is not None:
        if var.real is not None:
            frame.fail("assignment to default_factory of a defaultdict passed in")
        frame.state.remember(var)
        var.default_factory = ConstVar(None) if value is DELETED else value
        return
    if written is None and inspect.getattr_static(cls, name, _MISSING) is not _MISSING:
        throw(AttributeError(f"{cls.__name__!r} object attribute {name!r} is read-only"))
    if value is DELETED and _own_attr(frame, var, name) is None:
        throw(AttributeError(name))
    table = _instance_dict(frame, var, create=False)
    if table is None:  # an input whose __dict__ the code has not read: replayed as attribute stores
        frame.state.side_effects.store_attr(var, var.real, name, value)
        return
    items = mutable_dict(frame, table).items
    if value is DELETED:
        del items[name]
    else:
        items[name] = value


# -- protocols -----------------------------------------------------------------------------------
@handles_iter(UserDictVar, UserSetVar)
def _iterate(frame: "Frame", var: UserContainer) -> list[Var]:
    result = call_dunder(frame, var, "__iter__", [])
    if result is not None:
        return iterate(frame, result)
    if isinstance(var, SetVar):
        return [set_keys.element(k) for k in var.items]
    return [set_keys.key_var(k) for k in var.items]


@handles_len(UserDictVar, UserSetVar)
def _len(frame: "Frame", var: UserContainer) -> Var:
    result = call_dunder(frame, var, "__len__", [])
    return result if result is not None else ConstVar(len(var.items))


@handles_truth(UserDictVar, UserSetVar)
def _truth(frame: "Frame", var: UserContainer) -> bool:
    for name in ("__bool__", "__len__"):
        result = call_dunder(frame, var, name, [])
        if result is not None:
            return bool(as_const(frame, result, f"{name}()"))
    return len(var.items) > 0


#: a subscript or membership test: the special method it calls, and its builtin form
_ITEM_OPERATORS = {"[]": "__getitem__", "[]=": "__setitem__", "del []": "__delitem__", "in": "__contains__"}


@handles_operator(UserDictVar, UserSetVar)
def _operator(frame: "Frame", name: str, operands: list[Var]) -> Var | None:
    if py_operators.methods(name) is not None:
        return py_operators.apply(frame, name, operands[0], operands[1])
    var, rest = operands[0], operands[1:]
    if not isinstance(var, (UserDictVar, UserSetVar)):  # the second operand of a binary operator
        return None
    dunder = _ITEM_OPERATORS[name]
    written = call_dunder(frame, var, dunder, rest)
    if written is not None:
        return written
    cls = var.python_type()
    if isinstance(var, UserSetVar) and dunder != "__contains__":
        verb = {"[]": "is not subscriptable", "[]=": "does not support item assignment",
                "del []": "does not support item deletion"}[name]
        throw(TypeError(f"{cls.__name__!r} object {verb}"))
    if dunder == "__getitem__":
        return getitem(frame, var, rest)
    return call_dunder_method(frame, var, dunder, rest, {})


# -- after the graph ----------------------------------------------------------------------------
def _rebuild_dict(cls: type, items: dict, attrs: dict, factory: Any = None) -> Any:
    obj = cls.__new__(cls)
    base = base_of(cls)
    if base is collections.defaultdict:
        obj.default_factory = factory
    for key, value in items.items():  # the builtin's own store: no override of the class runs
        base.__setitem__(obj, key, value)
    obj.__dict__.update(attrs)
    return obj


def _rebuild_set(cls: type, items: Any, attrs: dict) -> Any:
    base = base_of(cls)
    obj = base.__new__(cls, items) if base is frozenset else cls.__new__(cls)
    if base is not frozenset:
        set.update(obj, items)
    obj.__dict__.update(attrs)
    return obj


def rebuild_expr(out: "OutputBuilder", var: UserContainer) -> str:
    """A new instance of the class holding ``var``'s items and attributes, made without its code."""
    attrs = "{" + ", ".join(f"{k!r}: {out.expr(v)}" for k, v in var.attrs.items() if v is not DELETED) + "}"
    cls = out.consts.name(var.python_type(), "cls")
    if isinstance(var, UserSetVar):
        items = "(" + "".join(f"{out.key(k)}, " for k in var.items) + ")"
        return f"{out.consts.name(_rebuild_set, 'mkset')}({cls}, {items}, {attrs})"
    items = "{" + ", ".join(f"{out.key(k)}: {out.expr(v)}" for k, v in var.items.items()) + "}"
    factory = f", {out.expr(var.default_factory)}" if var.default_factory is not None else ""
    return f"{out.consts.name(_rebuild_dict, 'mkdict')}({cls}, {items}, {attrs}{factory})"


def parts(var: UserContainer) -> list[Var]:
    """The Vars a rebuild of ``var`` refers to (for OutputBuilder.share)."""
    if isinstance(var, UserSetVar):
        items = [k.var for k in var.items if isinstance(k, set_keys.Identity)]
    else:
        items = [*(k.var for k in var.items if isinstance(k, set_keys.Identity)), *var.items.values()]
    extra = [var.default_factory] if isinstance(var, UserDictVar) and var.default_factory is not None else []
    return [*items, *extra, *(v for v in var.attrs.values() if v is not DELETED)]


__all__ = ["builtin_new", "can_construct", "construct", "is_builtin_new", "load_attr", "parts", "rebuild_expr",
           "store_attr"]
