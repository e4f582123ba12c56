"""Objects built inside captured code (dataclasses such as HuggingFace's ModelOutput).

The object is really constructed at capture time, over fake tensors: a *shadow*. Reads of its
attributes, items and builtin methods run on the shadow, and the fake tensors they return are
mapped back to the graph values they stand for. The runner rebuilds the real object by calling
the constructor again with the real values, so the object is never mutated after construction
inside the capture (a mutation is refused, which breaks the graph instead). Its truth is the
shadow's; iteration inlines a Python ``__iter__`` or lists the shadow.
"""
from __future__ import annotations

import dataclasses
import inspect
import types
from typing import TYPE_CHECKING, Any

import torch

from .dispatch import handles_attr, handles_call, handles_iter, handles_len, handles_truth, iterate
from .exceptions import evaluate
from .inline import call_dunder, inline_call
from .user_objects import UserObjectVar
from .values import BoundMethodVar, ConstVar, DictVar, ListVar, TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


#: values a constant stands for by value (equal ones may share an id): never mapped to a source
_BY_VALUE = (bool, int, float, complex, str, bytes, type(None))


class ObjectVar(Var):
    def __init__(self, shadow: Any, cls: type, args: list[Var], kwargs: dict[str, Var]) -> None:
        self.shadow = shadow
        self.cls = cls
        self.args = args
        self.kwargs = kwargs

    def python_type(self) -> type:
        return type(self.shadow)


class ShadowMethod(Var):
    """A builtin method of a shadow object (``OrderedDict.keys``), called for real on it."""

    def __init__(self, owner: ObjectVar, method: Any) -> None:
        self.owner = owner
        self.method = method


def constructible(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls) and not issubclass(cls, torch.nn.Module)


def to_shadow(frame: "Frame", var: Var) -> Any:
    if isinstance(var, TensorVar):
        return var.fake
    if isinstance(var, ConstVar):
        if var.source is not None and type(var.value) not in _BY_VALUE:
            # an input object (a KV cache passed in) stored in the new object: mapped back to its
            # source by from_shadow, or the runner would return this call's object on every call
            frame.state.shadows.setdefault(id(var.value), var)
        return var.value
    if isinstance(var, ObjectVar):
        return var.shadow
    if isinstance(var, UserObjectVar):  # an empty stand-in of its class, mapped back by from_shadow
        if var.stand_in is None:
            var.stand_in = var.cls.__new__(var.cls)
            frame.state.shadows[id(var.stand_in)] = var
        return var.stand_in
    if isinstance(var, (TupleVar, ListVar)):
        items = [to_shadow(frame, v) for v in var.items]
        if isinstance(var, ListVar):
            return items
        return var.tuple_type(*items) if hasattr(var.tuple_type, "_fields") else var.tuple_type(items)
    if isinstance(var, DictVar):
        return var.dict_type({k: to_shadow(frame, v) for k, v in var.items.items()})
    frame.fail(f"a {type(var).__name__} cannot be stored in an object built in captured code")
    raise AssertionError


def from_shadow(frame: "Frame", value: Any) -> Var:
    if isinstance(value, torch.Tensor):
        var = frame.state.graph.var_of_fake(value)
        if var is None:
            frame.fail("an object built in captured code made a new tensor")
        return var
    shadow_var = frame.state.shadows.get(id(value))
    if shadow_var is not None:
        return shadow_var
    if isinstance(value, list):
        return ListVar([from_shadow(frame, v) for v in value])
    if isinstance(value, tuple):
        return TupleVar([from_shadow(frame, v) for v in value], tuple_type=type(value))
    if type(value) is dict:
        return DictVar({k: from_shadow(frame, v) for k, v in value.items()})
    return ConstVar(value)


def construct(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> ObjectVar:
    with frame.state.graph.fake_mode:
        try:
            shadow = cls(*[to_shadow(frame, a) for a in args], **{k: to_shadow(frame, v) for k, v in kwargs.items()})
        except Exception as exc:
            frame.fail(f"constructing {cls.__name__} raised {type(exc).__name__}: {exc}")
    var = ObjectVar(shadow, cls, list(args), dict(kwargs))
    frame.state.shadows[id(shadow)] = var
    return var


@handles_attr(ObjectVar)
def load_attr(frame: "Frame", obj: ObjectVar, name: str) -> Var:
    static = inspect.getattr_static(obj.shadow, name, None)
    if isinstance(static, types.FunctionType):
        return BoundMethodVar(ConstVar(static), obj)
    if isinstance(static, property):
        return inline_call(frame, ConstVar(static.fget), [obj], {})
    try:
        value = getattr(obj.shadow, name)
    except AttributeError:
        frame.fail(f"{type(obj.shadow).__name__} object has no attribute {name!r}")
    if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)):
        return ShadowMethod(obj, value)
    return from_shadow(frame, value)


@handles_call(ShadowMethod)
def call_method(frame: "Frame", method: ShadowMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    name = getattr(method.method, "__name__", "")
    if name not in _READ_ONLY:
        frame.fail(f"{type(method.owner.shadow).__name__}.{name}() would mutate an object built in captured code")
    result = method.method(*[to_shadow(frame, a) for a in args], **{k: to_shadow(frame, v) for k, v in kwargs.items()})
    return from_shadow(frame, list(result) if name in ("keys", "values", "items") else result)


@handles_iter(ObjectVar)
def _iterate(frame: "Frame", var: ObjectVar) -> list[Var]:
    """A dataclass built over fake tensors (a ModelOutput): its Python ``__iter__``, or the shadow's items."""
    result = call_dunder(frame, var, "__iter__", [])
    if result is not None:
        return iterate(frame, result)
    return [from_shadow(frame, item) for item in evaluate(list, var.shadow)]


@handles_len(ObjectVar)
def _len(frame: "Frame", var: ObjectVar) -> Var:
    result = call_dunder(frame, var, "__len__", [])
    return result if result is not None else ConstVar(evaluate(len, var.shadow))


@handles_truth(ObjectVar)
def _truth(frame: "Frame", var: ObjectVar) -> bool:
    return bool(var.shadow)


def super_method(frame: "Frame", owner: ObjectVar, attr: Any) -> Var:
    """``super().name`` resolved to a builtin descriptor (``OrderedDict.__getitem__``)."""
    return ShadowMethod(owner, attr.__get__(owner.shadow))


_READ_ONLY = {"keys", "values", "items", "get", "__getitem__", "__contains__", "__len__", "__iter__", "copy",
              "__eq__", "__ne__", "__repr__", "__str__"}


def rebuild_expr(out: Any, var: ObjectVar) -> str:
    args = [out.expr(a) for a in var.args] + [f"{k}={out.expr(v)}" for k, v in var.kwargs.items()]
    return f"{out.consts.name(var.cls, 'cls')}({', '.join(args)})"
