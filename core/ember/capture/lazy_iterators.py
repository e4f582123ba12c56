"""Iterators read one item at a time, as Python reads them.

``zip``, ``enumerate``, ``map``, ``filter``, ``itertools.chain``, ``islice`` and ``tee`` over a
lazy iterator (a generator, ``itertools.count()``, or another of these) are a
:class:`LazyIterVar`: each item is made when the consumer reads it, so an endless generator zipped
with a ``range`` stops where Python stops, and a generator's body runs (and raises) where Python
runs it. Over sequences only, they stay materialised (``IteratorVar``).

:func:`force` reads the items an iterator has left all at once, ahead of Python: for a lazy
iterator the compiled code returns, or one live at a graph break, handed back as a list iterator
over them, as torch.compile does. It is refused when that running raises, changes what Python
would see later (but values the generator made that nothing after the graph reaches, like
``named_children``'s ``memo`` set), changes a tensor in place, or never ends.
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Callable, NoReturn

import torch

from ..errors import Unsupported
from .dispatch import call, drain, handles_iter, handles_next, handles_truth, is_lazy, next_item, truthy
from .exceptions import Raised, throw
from .ops import get_iter
from .state import MAX_GENERATOR_ITEMS
from .values import ConstVar, IteratorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


class LazyIterVar(Var):
    """A ``kind`` ("zip", "enumerate", "map", "filter", "chain", "islice", "tee") of iterator over
    ``parts`` (iterators; chain's are its iterables, made iterators as it reaches them)."""

    lazy = True

    def __init__(self, frame: "Frame", kind: str, parts: list[Var], fn: Var | None = None, **state: Any) -> None:
        self.frame = frame  # the frame that made it: runs it ahead (force)
        self.kind = kind
        self.parts = parts
        self.fn = fn
        self.state = {"count": 0, "current": None, "index": 0, "done": False, **state}
        self.forced: list[Var] | None = None

    def python_type(self) -> type:
        return _TYPES[self.kind]

    def save(self) -> dict[str, Any]:
        return dict(self.state)

    def restore(self, saved: dict[str, Any]) -> None:
        self.state = saved


def _ordinal(i: int) -> str:
    return " 1" if i == 1 else f"s 1-{i}"


def _zip(frame: "Frame", it: LazyIterVar) -> Var | None:
    row = []
    for i, part in enumerate(it.parts):
        item = next_item(frame, part)
        if item is None:
            if it.state.get("strict"):  # zip(strict=True): Python's ValueError
                if i:
                    throw(ValueError(f"zip() argument {i + 1} is shorter than argument{_ordinal(i)}"))
                for j, other in enumerate(it.parts[1:], 2):
                    if next_item(frame, other) is not None:
                        throw(ValueError(f"zip() argument {j} is longer than argument{_ordinal(j - 1)}"))
            return None
        row.append(item)
    return TupleVar(row)


def _enumerate(frame: "Frame", it: LazyIterVar) -> Var | None:
    item = next_item(frame, it.parts[0])
    if item is None:
        return None
    it.state["count"] += 1
    return TupleVar([ConstVar(it.state["count"] - 1), item])


def _map(frame: "Frame", it: LazyIterVar) -> Var | None:
    row = _zip(frame, it)
    return None if row is None else call(frame, it.fn, row.items, {})


def _filter(frame: "Frame", it: LazyIterVar) -> Var | None:
    while True:
        item = next_item(frame, it.parts[0])
        if item is None:
            return None
        test = item if it.fn is None else call(frame, it.fn, [item], {})
        if truthy(frame, test):
            return item


def _chain(frame: "Frame", it: LazyIterVar) -> Var | None:
    state = it.state
    while True:
        if state["current"] is None:
            if state["index"] >= len(it.parts):
                return None
            state["current"] = get_iter(frame, it.parts[state["index"]])
            state["index"] += 1
        item = next_item(frame, state["current"])
        if item is not None:
            return item
        state["current"] = None


def _islice(frame: "Frame", it: LazyIterVar) -> Var | None:
    """``count``: items read so far; ``index``: the position of the next item handed out."""
    state, source = it.state, it.parts[0]
    if state["done"]:
        return None
    while state["count"] < state["index"]:  # skip to the next position
        if next_item(frame, source) is None:
            state["done"] = True
            return None
        state["count"] += 1
    stop = state["stop"]
    if stop is not None and state["index"] >= stop:
        state["done"] = True
        return None
    item = next_item(frame, source)
    if item is None:
        state["done"] = True
        return None
    state["count"] += 1
    state["index"] += state["step"]
    return item


def _tee(frame: "Frame", it: LazyIterVar) -> Var | None:
    """One of ``itertools.tee``'s iterators: the items its siblings read already, then new ones
    (kept in the buffer they share)."""
    state, buffer = it.state, it.state["buffer"]
    if state["index"] == len(buffer):
        item = next_item(frame, it.parts[0])
        if item is None:
            return None
        buffer.append(item)
    state["index"] += 1
    return buffer[state["index"] - 1]


_STEPS: dict[str, Callable[["Frame", LazyIterVar], Var | None]] = {
    "zip": _zip, "enumerate": _enumerate, "map": _map, "filter": _filter, "chain": _chain, "islice": _islice,
    "tee": _tee,
}


_TYPES = {"zip": zip, "enumerate": enumerate, "map": map, "filter": filter, "chain": itertools.chain,
          "islice": itertools.islice, "tee": type(itertools.tee(())[0])}


@handles_next(LazyIterVar)
def _next(frame: "Frame", it: LazyIterVar, sent: Var | None) -> Var | None:
    if sent is not None and not (isinstance(sent, ConstVar) and sent.value is None):
        throw(AttributeError(f"'{it.kind}' object has no attribute 'send'"))
    frame.state.remember(it)
    return _STEPS[it.kind](frame, it)


@handles_iter(LazyIterVar)
def _iterate(frame: "Frame", it: LazyIterVar) -> list[Var]:
    return drain(frame, it)


@handles_truth(LazyIterVar)
def _truth(frame: "Frame", it: LazyIterVar) -> bool:
    return True


def make(frame: "Frame", kind: str, iterables: list[Var], fn: Var | None = None, **state: Any) -> LazyIterVar:
    """``kind`` over ``iterables``: iterators made of them now, as Python does (but chain's)."""
    parts = list(iterables) if kind == "chain" else [get_iter(frame, a) for a in iterables]
    if fn is not None and isinstance(fn, ConstVar) and fn.value is None:
        fn = None
    return LazyIterVar(frame, kind, parts, fn, **state)


def _refuse(reason: str) -> NoReturn:
    """Running ahead is refused (not the capture of the iterator's body): a generator a ``for`` loop
    reads at a break may be made in Python instead (generator_outputs)."""
    exc = Unsupported(reason)
    exc.cannot_run_ahead = True
    raise exc


def force(frame: "Frame", var: Var, what: str, reached: Callable[[list[Var]], set[int]] | None = None) -> list[Var]:
    """The items the lazy iterator ``var`` has left, read now, ahead of Python. Refused when
    reading them raises, changes something other than iterators that Python would see later (a
    store, a list, a closure cell, a tensor in place), or goes on past MAX_GENERATOR_ITEMS.
    ``reached(items)``: the ids of the values the code after the graph reaches, ``var`` replaced
    by its items; a value the capture built that none of them is (a generator's own ``memo``
    set) may change. Without it, any change is refused."""
    state = frame.state
    undo, state.undo = state.undo, {}
    effects = state.side_effects.copy()
    nodes = set(state.graph.graph.nodes)
    items: list[Var] = []
    try:
        while True:
            item = next_item(frame, var)
            if item is None:
                break
            if len(items) >= MAX_GENERATOR_ITEMS:
                _refuse(f"{what} is live after the graph, and it yields more than {MAX_GENERATOR_ITEMS} items when "
                        "run to its end (endless?)")
            items.append(item)
        touched = [v for v, _ in state.undo.values() if not (is_lazy(v) or isinstance(v, IteratorVar))]
        if touched and reached is not None:
            seen = reached(items)
            touched = [v for v in touched if v.source is not None or id(v) in seen]
    except Raised as raised:
        _refuse(f"{raised.describe()} raised by {what}, live after the graph: its items left are run ahead "
                "(Python would raise it later)")
    finally:
        state.undo = undo
    after = state.side_effects
    if any(n.meta.get("mutates") and any(isinstance(a, torch.fx.Node) for a in n.args)
           for n in state.graph.graph.nodes if n not in nodes):
        _refuse(f"{what} is live after the graph, and running it to its end changes a tensor in place (Python "
                "would change it later)")
    if touched or (after.attrs, after.globals, after.containers) != (effects.attrs, effects.globals,
                                                                     effects.containers):
        _refuse(f"{what} is live after the graph, and running it to its end has side effects "
                "(Python would run them later)")
    return items


__all__ = ["LazyIterVar", "force", "make"]
