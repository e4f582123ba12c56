"""The protocol tables: how a value of each kind behaves when the captured code calls it, reads
or stores one of its attributes, iterates over it, takes its ``len`` or tests its truth.

Each module that defines a kind of value registers its handlers here when it is imported
(``@handles_call(ContextExit)``, ``@handles_attr(TensorVar)``, ``@handles_iter(ListVar)``...), as
the inductor's lowerings register per aten op; ``capture/__init__`` imports those modules, so
the tables are full before any capture runs. :func:`call`, :func:`load_attr`,
:func:`store_attr`, :func:`iterate`, :func:`length`, :func:`truthy` and :func:`operator_hook` look the handler up
along the value's class hierarchy; a kind with no handler is refused (the graph breaks there: tensors and
constants have handlers of every protocol, so the refusal names the Var's class). This module
imports no other module of capture that could call back into it: any module may use it without
an import circle.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, TypeVar

from .values import IteratorVar, Var

if TYPE_CHECKING:
    from .frame import Frame

CallHandler = Callable[["Frame", Var, list[Var], dict[str, Var]], Var]
#: ``(frame, obj, name)``: the value of ``obj.name``
AttrHandler = Callable[["Frame", Var, str], Var]
#: ``(frame, obj, name, value, default)``: record ``obj.name = value`` (``value`` is
#: side_effects.DELETED for ``del obj.name``; ``default`` for Python's own ``object.__setattr__``)
StoreHandler = Callable[["Frame", Var, str, Any, bool], None]
#: ``(frame, var)``: the items a ``for`` loop over ``var`` would see, materialised
IterHandler = Callable[["Frame", Var], list[Var]]
#: ``(frame, var, sent)``: the next item of the iterator ``var``, or None when it is exhausted (a
#: generator's return value is then its ``result``); ``sent``: the value ``send()`` passes into a
#: generator (None for ``next()``)
NextHandler = Callable[["Frame", Var, "Var | None"], "Var | None"]
#: ``(frame, var)``: ``len(var)`` (a Var: a dynamic size is computed by the graph)
LenHandler = Callable[["Frame", Var], Var]
#: ``(frame, var)``: ``bool(var)``
TruthHandler = Callable[["Frame", Var], bool]

#: ``(frame, name, operands)``: an operator on a kind whose class may write it in Python: a binary
#: operator symbol (``"|"``, ``"|="``), a comparison (``"=="``), ``"[]"`` (obj, index), ``"[]="`` (obj,
#: index, value), ``"del []"`` (obj, index) or ``"in"`` (container, item); the result, or None for
#: the builtin behaviour (``ops`` goes on as for any value)
OperatorHandler = Callable[["Frame", str, list[Var]], "Var | None"]

H = TypeVar("H")


class Table(Generic[H]):
    """Handlers of one protocol, by kind of value (a Var subclass)."""

    def __init__(self) -> None:
        self.handlers: dict[type[Var], H] = {}

    def register(self, *kinds: type[Var]) -> Callable[[H], H]:
        """Register the decorated function as the handler of each of ``kinds``."""
        def register(handler: H) -> H:
            for kind in kinds:
                self.handlers[kind] = handler
            return handler

        return register

    def lookup(self, var: Var) -> H | None:
        """The handler registered for ``var``'s class or its nearest base."""
        for kind in type(var).__mro__:
            handler = self.handlers.get(kind)
            if handler is not None:
                return handler
        return None


CALLS: Table[CallHandler] = Table()
ATTRS: Table[AttrHandler] = Table()
STORES: Table[StoreHandler] = Table()
ITERS: Table[IterHandler] = Table()
NEXTS: Table[NextHandler] = Table()
LENS: Table[LenHandler] = Table()
TRUTHS: Table[TruthHandler] = Table()

OPERATORS: Table[OperatorHandler] = Table()

handles_call = CALLS.register
handles_operator = OPERATORS.register
handles_attr = ATTRS.register
handles_store = STORES.register
handles_iter = ITERS.register
handles_next = NEXTS.register
handles_len = LENS.register
handles_truth = TRUTHS.register


def operator_hook(frame: "Frame", name: str, operands: list[Var], reflected: bool = False) -> Var | None:
    """What the handler of the first operand (then, for a binary operator or a comparison,
    ``reflected``, of the second) gives for the operator ``name``; None when none has one or all
    decline."""
    tried = []
    for var in operands[:2 if reflected else 1]:
        handler = OPERATORS.lookup(var)
        if handler is not None and handler not in tried:
            tried.append(handler)
            result = handler(frame, name, operands)
            if result is not None:
                return result
    return None


def call(frame: "Frame", fn: Var, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``fn(*args, **kwargs)`` in the captured code."""
    handler = CALLS.lookup(fn)
    if handler is None:
        frame.fail(f"calling a {type(fn).__name__} is not supported")
        raise AssertionError
    return handler(frame, fn, args, kwargs)


def load_attr(frame: "Frame", obj: Var, name: str) -> Var:
    """``obj.name`` in the captured code."""
    handler = ATTRS.lookup(obj)
    if handler is None:
        frame.fail(f"attribute {name!r} of a {type(obj).__name__} is not supported")
        raise AssertionError
    return handler(frame, obj, name)


def store_attr(frame: "Frame", obj: Var, name: str, value: Any, *, default: bool = False) -> None:
    """Record ``obj.name = value`` (or a deletion) to be replayed after the graph; ``default``:
    the store is Python's own (``object.__setattr__``), not the class's ``__setattr__``."""
    handler = STORES.lookup(obj)
    if handler is None:
        frame.fail(f"assignment to attribute {name!r} of a {type(obj).__name__}")
        raise AssertionError
    handler(frame, obj, name, value, default)


def iterate(frame: "Frame", var: Var) -> list[Var]:
    """The items a ``for`` loop over ``var`` would see, materialised."""
    handler = ITERS.lookup(var)
    if handler is None:
        frame.fail(f"iteration over a {type(var).__name__} is not supported")
        raise AssertionError
    return handler(frame, var)


def next_item(frame: "Frame", var: Var, sent: Var | None = None) -> Var | None:
    """The next item of the iterator ``var`` (None when it is exhausted), read one at a time."""
    handler = NEXTS.lookup(var)
    if handler is None:
        frame.fail(f"next() of a {type(var).__name__} is not supported")
        raise AssertionError
    return handler(frame, var, sent)


def is_lazy(var: Var) -> bool:
    """An iterator whose items are made as they are read (a generator, ``zip`` over one,
    ``itertools.count()``): its consumers read it one item at a time, as Python does."""
    return getattr(var, "lazy", False)


def drain(frame: "Frame", var: Var) -> list[Var]:
    """Every item an iterator value has left, read now through its ``next`` handler."""
    items = []
    while (item := next_item(frame, var)) is not None:
        items.append(item)
    return items


def each_item(frame: "Frame", var: Var) -> Iterator[Var]:
    """The items of ``var`` one at a time: an iterator is read only as far as its consumer goes
    (``any``, ``in``, ``list.extend`` over a generator that reads the list)."""
    if not (is_lazy(var) or isinstance(var, IteratorVar)):
        yield from iterate(frame, var)
        return
    while True:
        item = next_item(frame, var)
        if item is None:
            return
        yield item


def length(frame: "Frame", var: Var) -> Var:
    """``len(var)`` in the captured code."""
    handler = LENS.lookup(var)
    if handler is None:
        frame.fail(f"len() of a {type(var).__name__}")
        raise AssertionError
    return handler(frame, var)


def truthy(frame: "Frame", var: Var) -> bool:
    """``bool(var)`` in the captured code."""
    handler = TRUTHS.lookup(var)
    if handler is None:
        frame.fail(f"truth value of a {type(var).__name__} is not supported")
        raise AssertionError
    return handler(frame, var)


__all__ = [
    "ATTRS", "CALLS", "ITERS", "LENS", "NEXTS", "OPERATORS", "STORES", "TRUTHS", "AttrHandler", "CallHandler",
    "IterHandler", "LenHandler", "NextHandler", "OperatorHandler", "StoreHandler", "Table", "TruthHandler", "call",
    "each_item", "handles_attr", "handles_call", "handles_iter", "handles_len", "handles_next", "handles_operator",
    "handles_store", "handles_truth", "is_lazy", "iterate", "length", "load_attr", "next_item", "operator_hook",
    "store_attr", "truthy",
]
