"""The special methods of the builtin containers (``dict.__eq__``, ``set.__ior__``, ``dict.__init__``...)
on the containers capture models, as the builtin's C code runs them.

They are what ``d.__eq__(e)``, ``dict.__or__(d, e)`` and ``super().__setitem__(k, v)`` call, and
what an operator falls back to when no class of its operands writes it in Python (``py_operators``):
each works on the builtin container's items, never through a subclass's Python overrides, and
gives ``NotImplemented`` where the builtin does (``set.__or__`` of a list), so that Python's
operator protocol goes on to the other operand.
"""
from __future__ import annotations

import collections
import operator
from typing import TYPE_CHECKING, Any, Callable

from . import set_keys
from .constants import NotConstant, kind_name, lift, python_value
from .container_types import base_of, is_subclass_instance_type, python_method, type_of
from .dispatch import call, iterate
from .exceptions import Raised, evaluate, throw
from .functions import class_function
from .inline import inline_call
from .ops import dict_getitem, dict_items, mutable_dict, mutable_set
from .values import ConstVar, DictVar, DictViewVar, IteratorVar, ListVar, SetVar, TupleVar, UserDictVar, UserSetVar, Var

if TYPE_CHECKING:
    from .frame import Frame

NOT_IMPLEMENTED = ConstVar(NotImplemented)

Dunder = Callable[["Frame", Var, list[Var]], Var]


def is_set_like(var: Var) -> bool:
    return isinstance(var, SetVar) or isinstance(var, ConstVar) and isinstance(var.value, (set, frozenset))


def is_dict_like(var: Var) -> bool:
    return isinstance(var, DictVar) or isinstance(var, ConstVar) and isinstance(var.value, dict)


container_type = type_of


def plain(var: Var) -> Var:
    """A user subclass's instance as a copy of its builtin container (what the builtin's C code
    sees of it); any other value as it is."""
    if isinstance(var, UserSetVar):
        return SetVar(set(var.items), set_type=base_of(var.set_type))
    if isinstance(var, UserDictVar):
        return DictVar(dict(var.items), dict_type=base_of(var.dict_type), default_factory=var.default_factory)
    return var


def _base_set(var: Var) -> set | frozenset:
    """A set's elements (set_keys) in a set of its builtin type."""
    kind = base_of(container_type(var))
    return kind(set_keys.keys_of(None, var)) if kind is not None else set_keys.keys_of(None, var)  # type: ignore[arg-type]


def result_var(frame: "Frame", value: Any) -> Var:
    """A value a builtin method made now, as a Var: a new set or dict is the capture's own."""
    if isinstance(value, (set, frozenset)):
        return set_keys.make(frame, value, type(value))
    if type(value) in (dict, collections.OrderedDict):
        return DictVar({k: lift(v) for k, v in value.items()}, dict_type=type(value))
    return lift(value)


# -- dict.update's argument, dict.__init__ --------------------------------------------------------
def _is_mapping(var: Var) -> bool:
    """What ``dict.update`` reads as a mapping: anything with ``keys`` (CPython's test)."""
    if is_dict_like(var):
        return True
    if isinstance(var, (SetVar, DictViewVar, IteratorVar)):
        return False
    try:
        return hasattr(container_type(var), "keys")
    except NotImplementedError:
        return False


def update_from(frame: "Frame", table: dict, other: Var) -> None:
    """``dict.update(other)`` into ``table``: a mapping's items, or an iterable of pairs."""
    if _is_mapping(other):
        table.update(dict_items(frame, other))
        return
    for i, pair in enumerate(iterate(frame, other)):
        try:
            parts = iterate(frame, pair)
        except Raised:
            throw(TypeError(f"cannot convert dictionary update sequence element #{i} to a sequence"))
        if len(parts) != 2:
            throw(ValueError(f"dictionary update sequence element #{i} has length {len(parts)}; 2 is required"))
        table[set_keys.dict_key(frame, parts[0])] = parts[1]


def builtin_init(frame: "Frame", var: Var, args: list[Var], kwargs: dict[str, Var]) -> None:
    """The builtin ``__init__`` of ``var``'s container (also ``super().__init__(...)``)."""
    base = base_of(container_type(var))
    name = container_type(var).__name__
    if base is frozenset:
        return  # object.__init__: frozenset.__new__ took the elements
    if issubclass(base, set):
        if kwargs:
            throw(TypeError(f"{name}() takes no keyword arguments"))
        if len(args) > 1:
            throw(TypeError(f"{name} expected at most 1 argument, got {len(args)}"))
        items = mutable_set(frame, var).items
        items.clear()
        if args:
            items.update(set_keys.keys_of(frame, args[0]))
            set_keys.keep_distinct(frame, items)
        return
    if issubclass(base, collections.defaultdict):
        factory = args[0] if args else ConstVar(None)
        if not (isinstance(factory, ConstVar) and (factory.value is None or callable(factory.value))) \
                and not _callable_var(factory):
            throw(TypeError("first argument must be callable or None"))
        frame.state.remember(var)
        var.default_factory = factory  # type: ignore[attr-defined]
        args = args[1:]
    if len(args) > 1:
        throw(TypeError(f"{name} expected at most 1 argument, got {len(args)}"))
    table = mutable_dict(frame, var).items
    if args:
        update_from(frame, table, args[0])
    table.update(kwargs)


def _callable_var(var: Var) -> bool:
    from .values import BoundMethodVar, FunctionVar, PartialVar

    return isinstance(var, (FunctionVar, BoundMethodVar, PartialVar))


# -- the special methods -------------------------------------------------------------------------
def _compare(symbol: str) -> Dunder:
    op = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge}[symbol]

    def method(frame: "Frame", var: Var, args: list[Var]) -> Var:
        (other,) = args
        if is_set_like(var):
            if not is_set_like(other):
                return NOT_IMPLEMENTED
            return ConstVar(evaluate(op, _base_set(var), _base_set(other)))
        if not is_dict_like(other) or symbol not in ("==", "!="):
            return NOT_IMPLEMENTED
        return ConstVar(_dicts_equal(frame, var, other) == (symbol == "=="))

    return method


def _dicts_equal(frame: "Frame", a: Var, b: Var) -> bool:
    """``dict.__eq__`` (an OrderedDict's compares the order too, with another OrderedDict)."""
    try:
        return bool(evaluate(operator.eq, python_value(plain(a)), python_value(plain(b))))
    except NotConstant:
        pass
    left, right = dict(dict_items(frame, a)), dict(dict_items(frame, b))
    ordered = all(issubclass(container_type(v), collections.OrderedDict) for v in (a, b))
    if left.keys() != right.keys() or ordered and list(left) != list(right):
        return False
    if all(left[k] is right[k] for k in left):  # the same values: equal without comparing them
        return True
    frame.fail("comparing dicts whose values are tensors or captured objects")
    raise AssertionError


def _set_binary(name: str) -> Dunder:
    def method(frame: "Frame", var: Var, args: list[Var]) -> Var:
        (other,) = args
        if not is_set_like(other):
            return NOT_IMPLEMENTED
        result = evaluate(getattr(base_of(container_type(var)), name), _base_set(var), _base_set(other))
        return result_var(frame, result)

    return method


def _set_inplace(name: str) -> Dunder:
    def method(frame: "Frame", var: Var, args: list[Var]) -> Var:
        (other,) = args
        if not is_set_like(other):
            return NOT_IMPLEMENTED
        target = mutable_set(frame, var)
        keys = set_keys.keys_of(frame, other)
        target.items = evaluate(getattr(set, name), target.items, set(keys))
        set_keys.keep_distinct(frame, target.items)
        return var

    return method


def _dict_or(reflected: bool) -> Dunder:
    """``dict.__or__``: a copy of the left operand updated with the right; an OrderedDict's or
    defaultdict's copy is of its own type (a subclass's is made by calling the subclass)."""
    def method(frame: "Frame", var: Var, args: list[Var]) -> Var:
        (other,) = args
        if not is_dict_like(other):
            return NOT_IMPLEMENTED
        left, right = (other, var) if reflected else (var, other)
        made = dict_copy(frame, left, container_type(var))
        mutable_dict(frame, made).items.update(dict_items(frame, right))
        return made

    return method


def dict_copy(frame: "Frame", obj: Var, kind: type | None = None) -> Var:
    """``dict.copy`` (a copy of ``obj`` as ``kind``'s C code makes it): a dict, of a dict subclass too;
    an OrderedDict's or defaultdict's is of its own type, a subclass's made by calling it."""
    kind = kind or container_type(obj)
    base = base_of(kind) or kind
    items = dict(dict_items(frame, obj))
    if kind is dict or base is dict and is_subclass_instance_type(kind):
        return DictVar(items)
    factory = None
    if base is collections.defaultdict:
        factory = obj.default_factory if isinstance(obj, DictVar) else lift(getattr(obj.value, "default_factory", None))
    if kind is base or base not in (collections.OrderedDict, collections.defaultdict):  # a Counter's is its own
        return DictVar(items, dict_type=kind, default_factory=factory)
    return call(frame, ConstVar(kind), [obj] if factory is None else [factory, obj], {})


def _dict_ior(frame: "Frame", var: Var, args: list[Var]) -> Var:
    update_from(frame, mutable_dict(frame, var).items, args[0])
    return var


def _contains(frame: "Frame", var: Var, args: list[Var]) -> Var:
    if is_set_like(var):
        return ConstVar(evaluate(operator.contains, set_keys.keys_of(frame, var), set_keys.lookup(frame, args[0])))
    return ConstVar(set_keys.dict_key(frame, args[0]) in dict(dict_items(frame, var)))


def _keys(frame: "Frame", var: Var) -> list:
    return list(set_keys.keys_of(frame, var)) if is_set_like(var) else [k for k, _ in dict_items(frame, var)]


def getitem(frame: "Frame", var: Var, args: list[Var]) -> Var:
    """``dict.__getitem__``: a subclass's Python ``__missing__`` is called for a missing key."""
    key = set_keys.dict_key(frame, args[0])
    if not isinstance(var, DictVar):
        frame.fail(f"dict.__getitem__ on a {kind_name(var)}")
    missing = python_method(var.dict_type, "__missing__")
    if key not in var.items and missing is not None:
        method = class_function(frame.state, var.dict_type, "__missing__", missing)
        return inline_call(frame, method, [var, args[0]], {})
    if key not in var.items:
        calls_back(frame, var, "__missing__")
    return dict_getitem(frame, var, key)


#: the methods of OrderedDict (and defaultdict's __missing__) whose C code calls the instance's own
#: ``__getitem__``/``__setitem__``/``__delitem__`` when it is not exactly of the builtin's type
_CALLING_BACK = {collections.OrderedDict: {"update", "setdefault", "pop", "popitem", "copy", "__init__", "__ior__",
                                           "__or__", "__ror__", "__copy__"},
                 collections.defaultdict: {"__missing__"}}


def calls_back(frame: "Frame", var: Var, name: str) -> None:
    """Break the graph where the builtin's ``name`` would call item methods the class writes in
    Python (an OrderedDict subclass's ``update`` calls its ``__setitem__``): modelled on the items
    alone, it would skip them."""
    kind = container_type(var)
    base = base_of(kind)
    if kind is not base and name in _CALLING_BACK.get(base, ()) and any(
            python_method(kind, m) is not None for m in ("__getitem__", "__setitem__", "__delitem__")):
        frame.fail(f"{base.__name__}.{name} of a {kind.__name__}, which writes its item methods in Python "
                   "(the builtin calls them back)")


def setitem(frame: "Frame", var: Var, args: list[Var]) -> Var:
    mutable_dict(frame, var).items[set_keys.dict_key(frame, args[0])] = args[1]
    return ConstVar(None)


def delitem(frame: "Frame", var: Var, args: list[Var]) -> Var:
    key = set_keys.dict_key(frame, args[0])
    table = mutable_dict(frame, var).items
    if key not in table:
        throw(KeyError(key))
    del table[key]
    return ConstVar(None)


# -- lists and tuples ---------------------------------------------------------------------------
def _sequence_base(var: Var) -> type:
    return list if issubclass(container_type(var), list) else tuple


def _same_kind(var: Var, other: Var) -> bool:
    return issubclass(type_of(other), _sequence_base(var))


def _sequence_compare(symbol: str) -> Dunder:
    def method(frame: "Frame", var: Var, args: list[Var]) -> Var:
        from .ops import compare

        if not _same_kind(var, args[0]):
            return NOT_IMPLEMENTED
        return compare(frame, symbol, var, args[0])

    return method


def _sequence_binary(symbol: str) -> Dunder:
    def method(frame: "Frame", var: Var, args: list[Var]) -> Var:
        from .ops import binary

        if symbol == "+" and not _same_kind(var, args[0]):
            kind = _sequence_base(var).__name__
            throw(TypeError(f'can only concatenate {kind} (not "{type_of(args[0]).__name__}") to {kind}'))
        return binary(frame, symbol, var, args[0])

    return method


def _sequence_item(name: str) -> Dunder:
    def method(frame: "Frame", var: Var, args: list[Var]) -> Var:
        from .ops import contains, delitem, getitem, setitem

        if name == "__getitem__":
            return getitem(frame, var, args[0])
        if name == "__contains__":
            return ConstVar(contains(frame, var, args[0]))
        if name == "__setitem__":
            setitem(frame, var, args[0], args[1])
        else:
            delitem(frame, var, args[0])
        return ConstVar(None)

    return method


_SEQUENCE_DUNDERS: dict[str, Dunder] = {
    **{name: _sequence_compare(symbol) for symbol, name in (("==", "__eq__"), ("!=", "__ne__"), ("<", "__lt__"),
                                                            ("<=", "__le__"), (">", "__gt__"), (">=", "__ge__"))},
    "__add__": _sequence_binary("+"), "__mul__": _sequence_binary("*"), "__rmul__": _sequence_binary("*"),
    "__iadd__": _sequence_binary("+="), "__imul__": _sequence_binary("*="),
    **{name: _sequence_item(name) for name in ("__getitem__", "__contains__", "__setitem__", "__delitem__")},
    "__iter__": lambda frame, var, args: IteratorVar(iterate(frame, var), sized=True),
    "__reversed__": lambda frame, var, args: IteratorVar(list(reversed(iterate(frame, var)))),
    "__len__": lambda frame, var, args: ConstVar(len(iterate(frame, var))),
}


_SET_DUNDERS: dict[str, Dunder] = {
    **{f"__{n}__": _set_binary(f"__{n}__") for n in ("or", "and", "sub", "xor", "ror", "rand", "rsub", "rxor")},
    **{f"__i{n}__": _set_inplace(f"__i{n}__") for n in ("or", "and", "sub", "xor")},
}
_DICT_DUNDERS: dict[str, Dunder] = {
    "__or__": _dict_or(False), "__ror__": _dict_or(True), "__ior__": _dict_ior, "__getitem__": getitem,
    "__setitem__": setitem, "__delitem__": delitem, "__copy__": lambda frame, var, args: dict_copy(frame, var),
    "__reversed__": lambda frame, var, args: IteratorVar([set_keys.element(k) for k in reversed(_keys(frame, var))]),
}
_COMMON: dict[str, Dunder] = {
    **{name: _compare(symbol) for symbol, name in (("==", "__eq__"), ("!=", "__ne__"), ("<", "__lt__"),
                                                   ("<=", "__le__"), (">", "__gt__"), (">=", "__ge__"))},
    "__contains__": _contains, "__init__": None,  # type: ignore[dict-item]  # builtin_init, with keywords
    "__iter__": lambda frame, var, args: IteratorVar([set_keys.element(k) for k in _keys(frame, var)], sized=True),
    "__len__": lambda frame, var, args: ConstVar(len(_keys(frame, var))),
}
#: the special methods modelled, per kind of container
DUNDERS = frozenset({*_SET_DUNDERS, *_DICT_DUNDERS, *_COMMON, *_SEQUENCE_DUNDERS})


def call_dunder_method(frame: "Frame", var: Var, name: str, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """The builtin container's special method ``name`` of ``var`` (a dict or set the capture holds)."""
    kind = container_type(var)
    calls_back(frame, var, name)
    if isinstance(var, (ListVar, TupleVar)):
        if not issubclass(kind, (list, tuple)):  # a deque
            frame.fail(f"{kind.__name__}.{name} is not supported")
        table, common = _SEQUENCE_DUNDERS, {}
    else:
        table, common = (_SET_DUNDERS if is_set_like(var) else _DICT_DUNDERS), _COMMON
    method = table.get(name) or common.get(name)
    if name == "__init__" and common:
        builtin_init(frame, var, args, kwargs)
        return ConstVar(None)
    if method is None or not hasattr(kind, name):
        frame.fail(f"{kind.__name__}.{name} is not supported")
    if kwargs:
        throw(TypeError(f"{kind.__name__}.{name}() takes no keyword arguments"))
    arity = 2 if name == "__setitem__" else 0 if name in ("__iter__", "__len__", "__reversed__", "__copy__") else 1
    if len(args) != arity:
        throw(TypeError(f"expected {arity} argument{'s' if arity != 1 else ''}, got {len(args)}"))
    return method(frame, var, args)


__all__ = ["DUNDERS", "NOT_IMPLEMENTED", "builtin_init", "call_dunder_method", "calls_back", "container_type", "dict_copy", "getitem",
           "is_dict_like", "is_set_like", "plain", "result_var", "update_from"]
