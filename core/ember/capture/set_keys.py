"""Elements of sets the captured code builds: Python values as themselves, anything else by identity.

A tensor (or an object the capture built) hashes by identity in Python, so a set of tensors
(``memo = set(); memo.add(p)`` in ``Module.named_parameters``) holds an :class:`Identity` key: two
keys are equal when they stand for the same object (the same graph node for tensors, as ``is``
compares them; ``ops.is_same``). Inputs read from two sources are guarded to stay distinct objects
when a set tells them apart, as ``is`` does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .constants import NotConstant, lift, python_value
from .values import ConstVar, Identity, SetVar, TensorVar, Var

if TYPE_CHECKING:
    from .frame import Frame


def key(frame: "Frame", var: Var) -> Any:
    """The element of a set standing for ``var``."""
    try:
        return python_value(var)
    except NotConstant:
        return Identity(var)


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


__all__ = ["Identity", "element", "has_identities", "keep_distinct", "key", "keys_of", "make"]
