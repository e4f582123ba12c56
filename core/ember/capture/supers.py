"""``super()`` inside captured methods.

``super()`` (3.11's spelling, before its attribute is read) is a :class:`SuperProxy`; reading
an attribute through it walks the object's MRO past the class, as Python does.
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING

from . import objects, user_objects
from .constants import lift, python_value
from .dispatch import handles_attr, handles_call
from .inline import inline_call
from .values import BoundMethodVar, CellVar, ConstVar, UserDictVar, UserSetVar, Var, contains_tensor

if TYPE_CHECKING:
    from .frame import Frame


class SuperProxy(Var):
    """``super()`` inside a method, before its attribute is read (3.11 spelling)."""

    def __init__(self, cls: type, self_var: Var) -> None:
        self.cls = cls
        self.self_var = self_var


@handles_call(SuperProxy)
def _call_super(frame: "Frame", fn: Var, args: list[Var], kwargs: dict[str, Var]) -> Var:
    frame.fail("calling super() directly")
    raise AssertionError


@handles_attr(SuperProxy)
def _proxy_attr(frame: "Frame", obj: SuperProxy, name: str) -> Var:
    return super_attr(frame, ConstVar(obj.cls), obj.self_var, name)


def super_attr(frame: "Frame", cls_var: Var, self_var: Var, name: str) -> Var:
    cls = python_value(cls_var) if not isinstance(cls_var, CellVar) else python_value(cls_var.contents)
    obj_type = self_var.value if isinstance(self_var, ConstVar) and isinstance(self_var.value, type) else None
    if obj_type is None and isinstance(self_var, objects.ShadowVar):
        obj_type = type(self_var.value)
    if obj_type is None and isinstance(self_var, user_objects.UserObjectVar):
        obj_type = self_var.cls
    if obj_type is None:
        obj_type = type(self_var.value) if isinstance(self_var, ConstVar) else None
    if obj_type is None and isinstance(self_var, (UserDictVar, UserSetVar)):  # a dict or set subclass's instance
        obj_type = self_var.python_type()
    if obj_type is None:
        frame.fail("super() on a value that is not a Python object")
    mro = obj_type.__mro__
    for klass in mro[mro.index(cls) + 1:]:
        if name in klass.__dict__:
            attr = klass.__dict__[name]
            if isinstance(attr, types.FunctionType):
                return BoundMethodVar(ConstVar(attr), self_var)
            if isinstance(attr, property):
                return inline_call(frame, ConstVar(attr.fget), [self_var], {})
            if isinstance(attr, classmethod):
                return BoundMethodVar(ConstVar(attr.__func__), ConstVar(obj_type))
            if isinstance(attr, staticmethod):
                return ConstVar(attr.__func__)
            if isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType)):
                if isinstance(self_var, objects.ShadowVar):
                    return objects.super_method(frame, self_var, attr)
                return BoundMethodVar(ConstVar(attr), self_var)
            return lift(attr) if not contains_tensor(lift(attr)) else frame.fail("super attribute tensor")
    frame.fail(f"super() has no attribute {name!r}")
    raise AssertionError


__all__ = ["SuperProxy", "super_attr"]
