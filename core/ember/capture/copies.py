"""``copy.deepcopy`` inside captured code.

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
from .constants import NotConstant, lift, python_value
from .exceptions import evaluate
from .inline import inline_call
from .sources import AttrSource
from .values import ConstVar, DictVar, ListVar, Var

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
