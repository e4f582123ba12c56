"""Wrapping real Python values read from the frame into symbolic values, with their guards.

This is the only place where a value enters the capture from outside; it decides the guard:
tensors on metadata (sizes the shape policy makes dynamic excepted), primitives on value
(ints the policy makes symbolic on type), flat tuples of primitives (a convolution's stride) as
one constant, other containers on type and length (their items are wrapped one by one),
``os.environ`` as an EnvironVar (its reads guarded one by one),
modules and user objects on their class (:mod:`.instances`), anything else (functions, classes,
modules of Python) on identity.
"""
from __future__ import annotations

import collections
import enum
import os
import types
from typing import TYPE_CHECKING, Any

import torch

from .container_types import base_of, is_subclass_instance_type
from .instances import ArrayVar, InstanceVar, by_type
from .sources import AttrSource, ConstantSource, ItemSource, LocalSource, MethodCallSource, Source
from .values import ConstVar, DictVar, EnvironVar, Identity, ListVar, TupleVar, UserDictVar, UserSetVar, Var, is_numpy_scalar

if TYPE_CHECKING:
    from .state import CaptureState

_PRIMITIVES = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), type(NotImplemented),
               slice, frozenset, set, range)
_TORCH_VALUES = (torch.dtype, torch.device, torch.memory_format, torch.layout)
_FLAT = (bool, int, float, str, type(None))  # tuples of these (no NaN) are guarded as one constant


_PLAIN_DICTS = (dict, collections.OrderedDict, collections.defaultdict)


def is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def wrap(state: "CaptureState", value: Any, source: Source | None, object_attr: bool = False) -> Var:
    """Turn ``value`` read from ``source`` into a Var, recording guards. ``object_attr``: read
    from an attribute of a plain object (not a module or a class), see ``ShapePolicy``."""
    guards = state.guards
    if source is not None and _made_in_capture(state, source):
        source = None  # read from an object this capture made (a deepcopy of a config): a constant
    if isinstance(value, torch.Tensor):
        if source is None:
            raise_unsupported(f"a tensor with no source ({type(value).__name__}) cannot enter the graph")
        existing = state.graph.input_for(value)
        if existing is not None:
            guards.same_object(source, existing.source)
            return existing
        dims = state.policy.tensor_dims(source, value) if state.policy is not None else frozenset()
        var = state.graph.add_input(source, value, dims)
        guards.tensor(source, value, var.fake)
        return var
    if type(value) is int and source is not None and state.policy is not None \
            and state.policy.int_is_dynamic(source, value, object_attr):
        var = state.graph.add_symint_input(source, value)
        if isinstance(var, ConstVar):  # 0 and 1 stay specialised
            guards.equals(source, value)
        else:  # its value is guarded by the relations the ShapeEnv records
            guards.type_match(source, value)
        return var
    if source is not None and is_subclass_instance_type(type(value)):
        made = _user_container(state, value, source)
        if made is not None:
            return made
    if isinstance(value, _PRIMITIVES) or isinstance(value, _TORCH_VALUES) or is_numpy_scalar(value):
        if source is not None:
            guards.equals(source, value)
        return ConstVar(value, source)
    if isinstance(value, torch.Size):
        if source is not None:
            guards.equals(source, value)
        return ConstVar(value, source)
    if value is os.environ and source is not None:  # its reads are guarded one by one (environ.py)
        guards.identity(source, value)
        return EnvironVar(source)
    if source is not None and isinstance(value, (list, *_PLAIN_DICTS)):
        seen = state.containers.get(id(value))
        if seen is not None and seen[0] is value:
            guards.same_object(source, seen[1].source)
            return seen[1]
    if type(value) is tuple and source is not None and all(type(v) in _FLAT and v == v for v in value):
        guards.constant_tuple(source, value)  # covers the items: they get no guards of their own
        return TupleVar([ConstVar(v, ItemSource(source, i)) for i, v in enumerate(value)], source, tuple)
    if isinstance(value, (tuple, list)):
        if source is not None:
            guards.length(source, value)
        items = [wrap(state, v, ItemSource(source, i) if source else None) for i, v in enumerate(value)]
        if isinstance(value, list):
            return _one_var(state, value, ListVar(items, source))
        return TupleVar(items, source, type(value))
    if type(value) in _PLAIN_DICTS:
        by_identity = [not _is_key(k) for k in value]
        if any(by_identity) and (source is None or not all(map(_is_identity_key, value))):
            return _opaque(state, value, source)
        if source is not None:
            guards.dict_keys(source, value, by_identity)
        items = {_key_of(state, k, source, i): wrap(state, v, _value_source(source, k, i))
                 for i, (k, v) in enumerate(value.items())}
        var = DictVar(items, source, type(value))
        if isinstance(value, collections.defaultdict):
            var.default_factory = wrap(state, value.default_factory, AttrSource(source, "default_factory") if source else None)
        return _one_var(state, value, var)
    return _opaque(state, value, source)


def _made_in_capture(state: "CaptureState", source: Source) -> bool:
    """Whether ``source`` reads from an object the capture itself made (``state.made``): such an
    object is made anew on every call, so no guard on it could hold from one call to the next
    (its own stores, replayed, changed it by the time the guards were checked)."""
    root = source
    while getattr(root, "base", None) is not None:
        root = root.base
    made = state.made.get(id(root.value)) if isinstance(root, ConstantSource) else None
    return made is not None and made is root.value


def _user_container(state: "CaptureState", value: Any, source: Source) -> Var | None:
    """An instance of a Python subclass of dict or set passed in: guarded on its type and its keys
    (elements), read through the builtin's own methods so that no override of its class runs in
    the guard; a dict's items are read the same way, through sources. None when its keys are not
    constants the guard can compare."""
    seen = state.containers.get(id(value))
    if seen is not None and seen[0] is value:
        state.guards.same_object(source, seen[1].source)
        return seen[1]
    base = base_of(type(value))
    reader = base.keys if issubclass(base, dict) else base.__iter__
    keys = list(reader(value))
    if not all(_is_key(k) for k in keys):
        return None
    state.guards.container_keys(source, value, reader)
    if not issubclass(base, dict):
        return _one_var(state, value, UserSetVar(set(keys), set_type=type(value), source=source, real=value))
    getter = base.__getitem__
    items = {k: wrap(state, getter(value, k), MethodCallSource(source, getter, (k,), "__getitem__")) for k in keys}
    var = UserDictVar(items, source, type(value), real=value)
    if isinstance(value, collections.defaultdict):
        var.default_factory = wrap(state, value.default_factory, AttrSource(source, "default_factory"))
    return _one_var(state, value, var)


def _one_var(state: "CaptureState", value: Any, var: Var) -> Var:
    if var.source is not None:
        state.containers[id(value)] = (value, var)
    return var


def _is_identity_key(key: Any) -> bool:
    """Dict keys hashed and compared by identity: tensors, and objects of classes that write neither
    ``__hash__`` nor ``__eq__`` (a module, a plain object), or value keys (:func:`_is_key`)."""
    cls = type(key)
    return isinstance(key, torch.Tensor) or _is_key(key) or \
        (cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__ and not isinstance(key, type))


def key_at(mapping: dict, index: int) -> Any:
    """The ``index``-th key of a dict, read through ``dict.keys`` (a guard source's reader)."""
    return list(dict.keys(mapping))[index]


def value_at(mapping: dict, index: int) -> Any:
    """The ``index``-th value of a dict, read through ``dict.values``."""
    return list(dict.values(mapping))[index]


def _value_source(source: Source | None, key: Any, index: int) -> Source | None:
    """Where a dict's value is read from: ``d[key]``, or by its place for a key that is no constant
    (a source compares and prints its key)."""
    if source is None:
        return None
    return ItemSource(source, key) if _is_key(key) else MethodCallSource(source, value_at, (index,), "values()")


def _key_of(state: "CaptureState", key: Any, source: Source | None, index: int) -> Any:
    """A dict key read from outside: its value, or the object itself (hashed by identity), or for a
    tensor the identity of its graph input, read from its place among the keys (pinned by the keys
    guard)."""
    if not isinstance(key, torch.Tensor):
        return key
    return Identity(wrap(state, key, MethodCallSource(source, key_at, (index,), "keys()")))


def _is_key(key: Any) -> bool:
    """Dict keys the guards can compare by value."""
    if isinstance(key, tuple):
        return all(_is_key(k) for k in key)
    return isinstance(key, (str, int, float, bool, type(None), bytes, enum.Enum))


def _opaque(state: "CaptureState", value: Any, source: Source | None) -> Var:
    """Other objects: modules and user objects on their class (an object reached through two
    sources must stay one object), anything else on identity, so every fact read stays true."""
    if source is None:
        return ConstVar(value, source)
    if by_type(value):
        seen = state.instances.get(id(value))
        if seen is not None and seen[0] is value:
            state.guards.same_object(source, seen[1])
        else:
            state.instances[id(value)] = (value, source)
            state.guards.type_match(source, value)
        return InstanceVar(value, source, state.guards)
    if type(value).__name__ == "ndarray" and type(value).__module__ == "numpy":
        state.guards.type_match(source, value)  # its elements once capture reads them (ArrayVar.pin)
        return ArrayVar(value, source, state.guards)
    if closure_read_through(value, source):  # made anew on each call: guarded on its code
        state.guards.identity(AttrSource(source, "__code__"), value.__code__)
        return ConstVar(value, source)
    state.guards.identity(source, value)
    return ConstVar(value, source)


def closure_read_through(value: Any, source: Source | None) -> bool:
    """A closure held in a local (as a resume function gets the closures made before its
    break): guarded on its code, its cells read through ``source`` (``inline.closure_cells``)."""
    return isinstance(value, types.FunctionType) and bool(value.__closure__) and isinstance(source, LocalSource)


def raise_unsupported(reason: str) -> None:
    from ..errors import Unsupported

    raise Unsupported(reason)
