"""Elements of sets the captured code builds: Python values as themselves, anything else by identity.

A tensor (or an object the capture built) hashes by identity in Python, so a set of tensors
(``memo = set(); memo.add(p)`` in ``Module.named_parameters``) holds an :class:`Identity` key: two
keys are equal when they stand for the same object (the same graph node for tensors, as ``is``
compares them; ``ops.is_same``). Inputs read from two sources are guarded to stay distinct objects
when a set tells them apart, as ``is`` does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .constants import NotConstant, as_const, lift, python_value
from .exceptions import evaluate, throw
from .values import ConstVar, DictVar, Identity, ListVar, SetVar, TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class written in Python


def key(frame: "Frame", var: Var) -> Any:
    """The element of a set (or the key looked up) standing for ``var``: its Python value, or its
    identity for an object hashed by identity; an unhashable value raises Python's TypeError, an
    object whose class writes its own ``__hash__``/``__eq__`` breaks the graph."""
    try:
        return python_value(var)
    except NotConstant:
        pass
    if isinstance(var, (ListVar, DictVar)) or isinstance(var, SetVar) and not issubclass(var.set_type, frozenset):
        throw(TypeError(f"unhashable type: {var.python_type().__name__!r}"))
    if isinstance(var, SetVar):  # a frozenset holding tensors, or a frozenset subclass's instance
        frame.fail(f"a {var.set_type.__name__} as a set element or dict key (hashed by value)")
    try:
        cls = var.python_type()
    except NotImplementedError:  # a capture-only value
        return Identity(var)
    if isinstance(cls, type) and cls.__flags__ & _HEAP_TYPE and not isinstance(var, TensorVar):
        if cls.__hash__ is None:
            throw(TypeError(f"unhashable type: {cls.__name__!r}"))
        if cls.__hash__ is not object.__hash__ or cls.__eq__ is not object.__eq__:
            frame.fail(f"a {cls.__name__} as a set element or dict key (its class writes __hash__ or __eq__)")
    return Identity(var)


def dict_key(frame: "Frame", var: Var) -> Any:
    """A dict key: a Python value (an unhashable one raises Python's TypeError in the captured code),
    or a tensor or object hashed by identity, as :func:`key`; a tuple holding one breaks the graph."""
    if isinstance(var, TupleVar):
        value = as_const(frame, var, "a dict key")
    else:
        value = key(frame, var)
    evaluate(hash, value)
    if isinstance(value, Identity) and value not in frame.state.dict_identities:
        frame.state.dict_identities[value] = None
        keep_distinct(frame, frame.state.dict_identities)
    return value


def key_var(item: Any) -> Var:
    """The Var a dict key stands for (a constant, or what an identity key was made from)."""
    return item.var if isinstance(item, Identity) else ConstVar(item)


def lookup(frame: "Frame", var: Var) -> Any:
    """What finds ``var`` in a set (``in``, ``discard``): :func:`key`, except that a set or frozenset
    subclass's instance with no hashing of its own is found as the frozenset of its elements (a
    frozenset's hashes and compares so; a set's is retried so by CPython)."""
    if isinstance(var, SetVar) and var.set_type not in (set, frozenset) and not has_identities(var.items):
        kind = var.set_type
        if issubclass(kind, set) and kind.__hash__ is None:  # unhashable: CPython retries it as a frozenset
            return frozenset(var.items)
        if issubclass(kind, frozenset) and kind.__hash__ is frozenset.__hash__ and kind.__eq__ is frozenset.__eq__:
            return frozenset(var.items)
    return key(frame, var)


def keep_distinct(frame: "Frame", keys: Any) -> None:
    """Inputs told apart by a set must stay distinct objects on later calls."""
    sources = [k.var.source for k in keys if isinstance(k, Identity) and isinstance(k.var, TensorVar)
               and k.var.source is not None and k.var.node.op == "placeholder"]
    if len(sources) > 1:
        frame.state.guards.distinct(sources)


def element(item: Any) -> Var:
    """The Var an element of a captured set stands for."""
    return item.var if isinstance(item, Identity) else lift(item)


def has_identities(items: Any) -> bool:
    return any(isinstance(i, Identity) for i in items)


def keys_of(frame: "Frame", var: Var) -> Any:
    """The elements of a set Var: a captured set's keys, or a real set's values."""
    if isinstance(var, SetVar):
        return var.items
    if isinstance(var, ConstVar) and isinstance(var.value, (set, frozenset)):
        return var.value
    from .dispatch import iterate

    return {key(frame, v) for v in iterate(frame, var)}


def make(frame: "Frame", items: Any, set_type: type = set) -> Var:
    """A set result: captured when it holds identities or is a mutable set, else a constant."""
    if set_type is set or has_identities(items):
        keep_distinct(frame, items)
        return SetVar(set(items), set_type=set_type)
    return ConstVar(frozenset(items) if set_type is frozenset else set_type(items))


__all__ = ["Identity", "dict_key", "key_var", "element", "has_identities", "keep_distinct", "key", "keys_of", "lookup", "make"]
