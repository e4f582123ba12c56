"""``copy.deepcopy``, ``copy.copy`` and ``object.__new__`` inside captured code.

HF's caches deep-copy the model's config (``DynamicCache(config=...)`` through
``get_text_config``): an object that holds no tensor. Such a copy is a constant computation: it
runs now, at capture, on the real object, and the copy is a constant of the graph's code (its
plain dicts and lists, new, are containers the captured code may change). Its
argument's attributes are guarded (the copy is only as current as they are), and the copy is
refused, so the call is inlined instead, when it reaches a tensor or an object whose stores the
capture has recorded but not yet replayed (the real object does not hold them yet). The copied
objects are the capture's own: its code may store constants into them (``get_text_config``
renames the copy's attributes), applied at once, as every call would apply them to its copy.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import torch

from .builder import wrap
from .builtin_calls import handles
from .constants import NotConstant, as_const, lift, python_value
from .dispatch import load_attr
from .exceptions import evaluate
from .inline import inline_call
from .sources import AttrSource
from .user_objects import UserObjectVar, can_construct
from .values import ConstVar, DictVar, ListVar, SetVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


@handles(copy.deepcopy)
def _deepcopy(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    if len(args) == 1 and not kwargs:
        try:
            value = python_value(args[0])
        except NotConstant:
            value = NotConstant
        if value is not NotConstant:
            memo: dict[int, Any] = {}
            result = evaluate(copy.deepcopy, value, memo)
            if _is_constant_copy(frame, memo):
                _guard_attributes(frame, args[0])
                for made in memo.values():  # the copies (and deepcopy's list of originals, harmless)
                    frame.state.made[id(made)] = made
                return _fresh(result)
    return inline_call(frame, ConstVar(copy.deepcopy), args, kwargs)


@handles(copy.copy)
def _copy(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``copy.copy``: a container's copy holds the same items; a plain object's copy (default
    ``__reduce_ex__``, no ``__copy__``) is a new object built by the capture with the same
    attributes (what ``object.__new__`` plus a ``__dict__`` update makes in Python)."""
    if len(args) == 1 and not kwargs:
        obj = args[0]
        if isinstance(obj, ListVar):
            return ListVar(list(obj.items))
        if isinstance(obj, DictVar):
            return DictVar(dict(obj.items), dict_type=obj.dict_type, default_factory=obj.default_factory)
        if isinstance(obj, SetVar):
            return SetVar(set(obj.items), set_type=obj.set_type)
        if isinstance(obj, TupleVar) and obj.tuple_type is tuple:
            return obj
        cls = obj.cls if isinstance(obj, UserObjectVar) else type(obj.value) if isinstance(obj, ConstVar) else None
        if cls is not None and _plain_copy(cls):
            new = UserObjectVar(cls)
            if isinstance(obj, UserObjectVar):
                new.items = dict(obj.items)
            else:
                _guard_attributes(frame, obj)
                new.items = {name: load_attr(frame, obj, name) for name in vars(obj.value)}
            return new
    return inline_call(frame, ConstVar(copy.copy), args, kwargs)


def _plain_copy(cls: Any) -> bool:
    return can_construct(cls) and not hasattr(cls, "__copy__") and cls.__reduce_ex__ is object.__reduce_ex__ \
        and cls.__reduce__ is object.__reduce__ and getattr(cls, "__getstate__", None) is getattr(object, "__getstate__", None)


@handles(object.__new__)
def _object_new(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``object.__new__(cls)`` of a plain class: an object with no attributes yet."""
    cls = as_const(frame, args[0], "object.__new__'s class") if args else None
    if len(args) != 1 or kwargs or not can_construct(cls):
        frame.fail("object.__new__ of a class the capture cannot build")
    return UserObjectVar(cls)


def _is_constant_copy(frame: "Frame", memo: dict[int, Any]) -> bool:
    """No tensor was copied, nor an object with stores still to be replayed."""
    originals = memo.get(id(memo), [])  # deepcopy keeps every copied original alive here
    pending = {key[0] for key in frame.state.side_effects.attrs}
    pending |= {id(real) for real, var in frame.state.containers.values()
                if id(var) in frame.state.side_effects.containers}
    return not any(isinstance(obj, torch.Tensor) or id(obj) in pending for obj in originals)


def _fresh(value: Any) -> Var:
    """The copy as a Var: its plain lists and dicts are containers the captured code may change
    (they are new); anything else is a constant."""
    if type(value) is dict:
        return DictVar({k: _fresh(v) for k, v in value.items()})
    if type(value) is list:
        return ListVar([_fresh(v) for v in value])
    return lift(value)


def _guard_attributes(frame: "Frame", arg: Var) -> None:
    """Guard what the copy read: the argument's own attributes (read from the frame)."""
    if isinstance(arg, ConstVar) and arg.source is not None and isinstance(getattr(arg.value, "__dict__", None), dict):
        wrap(frame.state, arg.value.__dict__, AttrSource(arg.source, "__dict__"))


__all__: list[str] = []
