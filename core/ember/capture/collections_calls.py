"""The standard library's pure helpers made inside captured code: ``collections.defaultdict``,
``deque`` and ``Counter``, ``OrderedDict``'s own methods, ``tuple.__new__`` (a namedtuple's
``_make``), calls of enum classes (a member by value), and the ``operator`` getters
(``itemgetter``, ``attrgetter``, ``methodcaller``) over captured values.

A defaultdict is a :class:`~.values.DictVar` with its factory; a Counter a DictVar whose missing
keys count 0 and whose read-only methods (``most_common``, ``total``, ``elements``) are evaluated on
its constant values; a deque a :class:`DequeVar` (a list with a ``maxlen`` and its left-hand
methods), rebuilt as a deque after the graph.
"""
from __future__ import annotations

import collections
import dataclasses
import enum
import operator
from typing import TYPE_CHECKING, Any

from .builtin_calls import handles
from .constants import NotConstant, as_const, lift, python_value
from .dispatch import call, each_item, iterate, load_attr
from .exceptions import evaluate, throw
from .ops import dict_items, getitem, mutable_list
from .values import ConstVar, DictVar, ListVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


@handles(collections.defaultdict)
def _defaultdict(frame: "Frame", args: list, kwargs: dict) -> Var:
    factory = args[0] if args else ConstVar(None)
    items = dict(dict_items(frame, args[1])) if len(args) > 1 else {}
    items.update(kwargs)
    return DictVar(items, dict_type=collections.defaultdict, default_factory=factory)


@handles(collections.Counter)
def _counter(frame: "Frame", args: list, kwargs: dict) -> Var:
    try:
        real = evaluate(collections.Counter, *[python_value(a) for a in args],
                        **{k: python_value(v) for k, v in kwargs.items()})
    except NotConstant:
        frame.fail("collections.Counter over tensors")
    return DictVar({k: lift(v) for k, v in real.items()}, dict_type=collections.Counter)


COUNTER_READS = {"most_common", "total", "elements"}


def counter_method(frame: "Frame", obj: DictVar, name: str, args: list[Var], kwargs: dict[str, Var]) -> Var:
    real = collections.Counter({k: as_const(frame, v, "a Counter's count") for k, v in obj.items.items()})
    result = evaluate(getattr(real, name), *[python_value(a) for a in args], **{k: python_value(v) for k, v in kwargs.items()})
    return lift(list(result) if name == "elements" else result)


def ordered_dict_method(frame: "Frame", table: dict, name: str, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``move_to_end(key, last=True)`` and ``popitem(last=True)`` on a dict's table (``popitem``:
    a plain dict pops the last item)."""
    values = [python_value(a) for a in args]
    last = python_value(kwargs["last"]) if "last" in kwargs else (values[-1] if len(values) > (name == "move_to_end")
                                                                  else True)
    if name == "move_to_end":
        key = values[0]
        if key not in table:
            throw(KeyError(key))
        value = table.pop(key)
        if last:
            table[key] = value
        else:
            rest = dict(table)
            table.clear()
            table[key] = value
            table.update(rest)
        return ConstVar(None)
    if not table:
        throw(KeyError("dictionary is empty" if not last else "popitem(): dictionary is empty"))
    key = next(reversed(table)) if last else next(iter(table))
    return TupleVar([lift(key), table.pop(key)])


@dataclasses.dataclass(eq=False)
class DequeVar(ListVar):
    """A ``collections.deque`` made inside the captured code."""

    maxlen: int | None = None

    def python_type(self) -> type:
        return collections.deque


@handles(collections.deque)
def _deque(frame: "Frame", args: list, kwargs: dict) -> Var:
    maxlen = args[1] if len(args) > 1 else kwargs.get("maxlen", ConstVar(None))
    limit = as_const(frame, maxlen, "a deque's maxlen")
    items = iterate(frame, args[0]) if args else []
    return DequeVar(items[len(items) - limit:] if limit is not None and len(items) > limit else items, maxlen=limit)


def deque_method(frame: "Frame", obj: DequeVar, name: str, args: list[Var]) -> Var | None:
    """The methods a deque adds to a list's, and ``append``/``extend`` under its ``maxlen``;
    None for the methods it shares with a list."""
    if name not in ("append", "appendleft", "extend", "extendleft", "popleft", "pop", "rotate"):
        return None
    items = mutable_list(frame, obj).items
    if name in ("pop", "popleft"):
        if args:
            throw(TypeError(f"deque.{name}() takes no arguments"))
        if not items:
            throw(IndexError(f"{name} from an empty deque"))
        return items.pop() if name == "pop" else items.pop(0)
    if name == "rotate":
        n = as_const(frame, args[0], "rotate's count") if args else 1
        if items:
            n %= len(items)
            items[:] = items[len(items) - n:] + items[:len(items) - n]
        return ConstVar(None)
    new = [args[0]] if name.startswith("append") else each_item(frame, args[0])  # one at a time, as Python
    for item in new:
        if name.endswith("left"):
            items.insert(0, item)
            if obj.maxlen is not None and len(items) > obj.maxlen:
                items.pop()
        else:
            items.append(item)
            if obj.maxlen is not None and len(items) > obj.maxlen:
                items.pop(0)
    return ConstVar(None)


def rebuild_deque(out: Any, var: DequeVar) -> str:
    items = ", ".join(out.expr(v) for v in var.items)
    return f"{out.consts.name(collections.deque, 'D')}([{items}], {var.maxlen!r})"


@handles(tuple.__new__)
def _tuple_new(frame: "Frame", args: list, kwargs: dict) -> Var:
    """``tuple.__new__(cls, iterable)``: what a namedtuple's ``_make`` calls."""
    cls = as_const(frame, args[0], "tuple.__new__'s class") if args else None
    if not isinstance(cls, type) or not issubclass(cls, tuple) or kwargs or len(args) > 2:
        frame.fail("tuple.__new__ with other than a tuple class and one iterable")
    items = iterate(frame, args[1]) if len(args) > 1 else []
    if hasattr(cls, "_fields") and len(items) != len(cls._fields):
        frame.fail(f"{cls.__name__}._make with {len(items)} items")
    if cls is not tuple and not hasattr(cls, "_fields"):
        frame.fail(f"tuple.__new__ of {cls.__name__}")
    return TupleVar(items, tuple_type=cls)


def call_enum(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``Color(2)``: the member with that value (an existing object, a constant)."""
    if not issubclass(cls, enum.Enum) or len(args) != 1 or kwargs:
        frame.fail(f"calling enum {cls.__name__} to make a new enum")
    return ConstVar(evaluate(cls, as_const(frame, args[0], "an enum value")))


def call_getter(frame: "Frame", getter: Any, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``operator.itemgetter(...)(obj)``, ``attrgetter(...)(obj)``, ``methodcaller(...)(obj)``."""
    if len(args) != 1 or kwargs:
        frame.fail(f"{type(getter).__name__} called with other than one argument")
    obj = args[0]
    factory, params = getter.__reduce__()[:2]
    if isinstance(getter, operator.itemgetter):
        found = [getitem(frame, obj, lift(k)) for k in params]
        return found[0] if len(found) == 1 else TupleVar(found)
    if isinstance(getter, operator.attrgetter):
        found = []
        for path in params:
            value = obj
            for name in path.split("."):
                value = load_attr(frame, value, name)
            found.append(value)
        return found[0] if len(found) == 1 else TupleVar(found)
    name, *rest = params if isinstance(factory, type) else (factory.args[0], *params)
    method_kwargs = {} if isinstance(factory, type) else factory.keywords
    return call(frame, load_attr(frame, obj, name), [lift(a) for a in rest],
                {k: lift(v) for k, v in method_kwargs.items()})


GETTERS = (operator.itemgetter, operator.attrgetter, operator.methodcaller)


__all__ = ["COUNTER_READS", "DequeVar", "GETTERS", "call_enum", "call_getter", "counter_method", "deque_method",
           "ordered_dict_method", "rebuild_deque"]
