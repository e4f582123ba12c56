"""Python's operator protocol for classes that write their operators in Python.

``a | b``, ``a == b``, ``a |= b`` on an object whose class (or its operand's class) defines
``__or__``/``__ror__``/``__ior__``, ``__eq__``... in Python (torch's OrderedSet, a set subclass
overriding ``__eq__``) run as Python runs them: the in-place method first, then the left
operand's method, then the right's reflected one (first when the right operand's class is a
subclass of the left's that overrides it), each ``NotImplemented`` passing on to the next, and
``==``/``!=`` falling back to identity. A method written in Python is inlined; a builtin one
(``set.__or__``, ``object.__eq__``) is the builtin's (``container_dunders``). Registered for
plain objects built in captured code here, and for container subclasses by ``user_containers``;
``[]=``, ``del []`` and ``in`` of plain objects inline ``__setitem__``/``__delitem__``/``__contains__``.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from .builtin_calls import BUILTIN_HANDLERS
from .constants import NotConstant, kind_name, python_value
from .container_dunders import NOT_IMPLEMENTED, call_dunder_method, is_dict_like, is_set_like, plain, result_var
from .container_types import python_method, type_of
from .dispatch import handles_operator
from .exceptions import evaluate, throw
from .functions import class_function
from .inline import call_dunder, inline_call
from .instances import InstanceVar
from .ops import is_same, truthy
from .user_objects import UserObjectVar
from .values import ConstVar, DictVar, DictViewVar, TensorVar, Var

if TYPE_CHECKING:
    from .frame import Frame

_BINARY = {"+": "add", "-": "sub", "*": "mul", "@": "matmul", "/": "truediv", "//": "floordiv", "%": "mod",
           "**": "pow", "<<": "lshift", ">>": "rshift", "&": "and", "|": "or", "^": "xor"}
#: a comparison's method and its reflection (``a < b`` is also ``b > a``)
_COMPARE = {"==": ("__eq__", "__eq__"), "!=": ("__ne__", "__ne__"), "<": ("__lt__", "__gt__"),
            "<=": ("__le__", "__ge__"), ">": ("__gt__", "__lt__"), ">=": ("__ge__", "__le__")}
#: builtin values whose operators give NotImplemented for an object they do not know
_CLOSED = (bool, int, float, complex, str, bytes, type(None), set, frozenset, dict, list, tuple)


def methods(symbol: str) -> tuple[str, str, str | None] | None:
    """(method, reflected method, in-place method or None) of an operator symbol; None for others."""
    if symbol in _COMPARE:
        return (*_COMPARE[symbol], None)
    inplace = symbol.endswith("=")
    name = _BINARY.get(symbol[:-1] if inplace else symbol)
    if name is None:
        return None
    return f"__{name}__", f"__r{name}__", f"__i{name}__" if inplace else None


def written_in_python(symbol: str, a: Var, b: Var) -> bool:
    """Whether a class of the operands writes the operator (or, for ``!=``, ``__eq__``) in Python."""
    names = methods(symbol)
    if names is None:
        return False
    method, reflected, inplace = names
    wanted = [(a, method), (b, reflected), (a, inplace)]
    if symbol == "!=":  # object.__ne__ asks __eq__
        wanted += [(a, "__eq__"), (b, "__eq__")]
    return any(name and python_method(type_of(var), name) is not None for var, name in wanted)


def apply(frame: "Frame", symbol: str, a: Var, b: Var) -> Var:
    """``a <symbol> b`` by Python's protocol (see the module doc)."""
    names = methods(symbol)
    assert names is not None
    method, reflected, inplace = names
    ta, tb = type_of(a), type_of(b)
    if inplace is not None and hasattr(ta, inplace):
        result = slot(frame, a, inplace, b)
        if not _declined(result):
            return result
    order = [(a, method, b), (b, reflected, a)]
    if tb is not ta and issubclass(tb, ta) and _own(tb, reflected) is not _own(ta, reflected):
        order.reverse()  # the subclass's own reflected method first (a defaultdict's, a Python one)
    elif tb is ta and symbol not in _COMPARE:
        order = order[:1]  # one type: its reflected method is not tried
    for var, name, other in order:
        if hasattr(type_of(var), name):
            result = slot(frame, var, name, other)
            if not _declined(result):
                return result
    if symbol in ("==", "!="):
        return ConstVar(is_same(frame, a, b) == (symbol == "=="))
    if symbol in _COMPARE:
        throw(TypeError(f"'{symbol}' not supported between instances of '{ta.__name__}' and '{tb.__name__}'"))
    throw(TypeError(f"unsupported operand type(s) for {symbol}: '{ta.__name__}' and '{tb.__name__}'"))
    raise AssertionError


def _own(cls: type, name: str) -> Any:
    return inspect.getattr_static(cls, name, None)


def _declined(result: Var) -> bool:
    return isinstance(result, ConstVar) and result.value is NotImplemented


def slot(frame: "Frame", var: Var, name: str, other: Var) -> Var:
    """``type(var).<name>(var, other)``: inlined when written in Python, else the builtin's."""
    cls = type_of(var)
    if python_method(cls, name) is not None:
        method = class_function(frame.state, cls, name, inspect.getattr_static(cls, name))
        return inline_call(frame, method, [var, other], {})
    if is_set_like(var) or is_dict_like(var):
        return call_dunder_method(frame, var, name, [other], {})
    if isinstance(var, UserObjectVar):
        return _object_slot(frame, var, name, other)
    return _value_slot(frame, var, name, other)


def _object_slot(frame: "Frame", var: Var, name: str, other: Var) -> Var:
    """``object``'s own comparisons: ``__eq__`` is identity, ``__ne__`` the negation of ``__eq__``."""
    if name == "__eq__":
        return ConstVar(True) if is_same(frame, var, other) else NOT_IMPLEMENTED
    if name == "__ne__":
        equal = slot(frame, var, "__eq__", other)
        return equal if _declined(equal) else ConstVar(not truthy(frame, equal))
    if name in ("__lt__", "__le__", "__gt__", "__ge__"):
        return NOT_IMPLEMENTED
    frame.fail(f"{type_of(var).__name__}.{name} is not Python code to inline")
    raise AssertionError


def _value_slot(frame: "Frame", var: Var, name: str, other: Var) -> Var:
    """A builtin value's method, run for real on Python values (a user container's as its builtin
    container's value)."""
    if isinstance(var, TensorVar) or isinstance(other, TensorVar):
        frame.fail(f"operator {name} between a {kind_name(var)} and a {kind_name(other)}")
    try:
        value = python_value(var)
    except NotConstant:
        frame.fail(f"operator {name} of a {kind_name(var)}")
        raise
    try:
        other_value = python_value(plain(other))
    except NotConstant:
        if isinstance(value, _CLOSED) or isinstance(var, DictViewVar) and name in ("__eq__", "__ne__", "__lt__",
                                                                                 "__le__", "__gt__", "__ge__"):
            return NOT_IMPLEMENTED  # its C code only knows its own kinds
        frame.fail(f"operator {name} between a {kind_name(var)} and a {kind_name(other)}")
        raise
    if isinstance(var, DictViewVar) and python_method(type_of(other), "__iter__") is not None:
        frame.fail(f"a dict view's {name} with a {type_of(other).__name__} that writes __iter__")
    method = getattr(type(value), name, None)
    if method is None:
        return NOT_IMPLEMENTED
    return result_var(frame, evaluate(method, value, other_value))


def _object_compare(name: str) -> Any:
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        return _object_slot(frame, args[0], name, args[1])

    return handler


# ``object.__ne__(self, other)`` (``super().__ne__`` of a class that writes ``__eq__``) asks ``__eq__``
BUILTIN_HANDLERS[object.__eq__] = _object_compare("__eq__")
BUILTIN_HANDLERS[object.__ne__] = _object_compare("__ne__")


@handles_operator(DictVar)
def _dict_operator(frame: "Frame", name: str, operands: list[Var]) -> Var | None:
    """``d | e`` and ``d |= e`` of dicts: ``dict.__or__``/``__ior__`` (in place on the dict itself)."""
    return apply(frame, name, operands[0], operands[1]) if name in ("|", "|=") else None


@handles_operator(UserObjectVar, InstanceVar)
def _object_operator(frame: "Frame", name: str, operands: list[Var]) -> Var | None:
    """An object built in captured code or read from outside: its Python operators, inlined (never
    run for real at capture, which would fold what its attributes hold now); anything else as before."""
    obj = operands[0]
    if methods(name) is not None:
        a, b = operands
        return apply(frame, name, a, b) if written_in_python(name, a, b) else None
    if not isinstance(obj, UserObjectVar):
        return None
    if name == "[]=":
        return call_dunder(frame, obj, "__setitem__", operands[1:])
    if name == "del []":
        return call_dunder(frame, obj, "__delitem__", operands[1:])
    if name == "in":
        return call_dunder(frame, obj, "__contains__", operands[1:])
    return None


__all__ = ["apply", "methods", "slot", "type_of", "written_in_python"]
