"""Sorting in captured code: ``sorted()``, ``list.sort`` and ``functools.cmp_to_key``.

Items whose keys are all constants are sorted by Python itself. Other keys (objects with a ``__lt__``
of Python, ``cmp_to_key`` wrappers) are compared through capture, one ``<`` at a time, in the order
CPython's sort makes them for a short list (the first run, reversed when descending, then binary
insertion), so that a ``__lt__`` with side effects runs as it would in eager. ``list.sort`` empties
the list while it sorts, as CPython does: a key or comparison that reads it sees it empty, one that
changes it makes the sort raise ``ValueError``.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .builtin_calls import handles
from .dispatch import call, iterate
from .exceptions import Raised, evaluate, run_ahead, throw
from .ops import NotConstant, compare, python_value, truthy
from .values import ConstVar, ListVar, PartialVar, Var

if TYPE_CHECKING:
    from .frame import Frame

_SHORT = 64  # CPython sorts shorter lists by binary insertion alone (its minimum run)


class CmpKey:
    """What ``functools.cmp_to_key(cmp)`` makes of an item, written in Python so that capture
    inlines its comparisons (each calls ``cmp``)."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, cmp: Any, obj: Any) -> None:
        self.cmp = cmp
        self.obj = obj

    def __lt__(self, other: "CmpKey") -> bool:
        return self.cmp(self.obj, other.obj) < 0

    def __gt__(self, other: "CmpKey") -> bool:
        return self.cmp(self.obj, other.obj) > 0

    def __le__(self, other: "CmpKey") -> bool:
        return self.cmp(self.obj, other.obj) <= 0

    def __ge__(self, other: "CmpKey") -> bool:
        return self.cmp(self.obj, other.obj) >= 0

    def __eq__(self, other: object) -> bool:
        return self.cmp(self.obj, other.obj) == 0  # type: ignore[attr-defined]


@handles(functools.cmp_to_key)
def _cmp_to_key(frame: "Frame", args: list, kwargs: dict) -> Var:
    if len(args) + len(kwargs) != 1 or set(kwargs) - {"mycmp"}:
        throw(TypeError("cmp_to_key() takes exactly 1 argument"))
    return PartialVar(ConstVar(CmpKey), [args[0] if args else kwargs["mycmp"]], {})


@handles(sorted)
def _sorted(frame: "Frame", args: list, kwargs: dict) -> Var:
    """``sorted(iterable, key=None, reverse=False)``: a new list of the same items, sorted."""
    if len(args) != 1 or set(kwargs) - {"key", "reverse"}:
        throw(TypeError("sorted expects 1 positional argument and key, reverse keywords"))
    items = list(iterate(frame, args[0]))
    with run_ahead(frame, "sorted()'s key"):
        keys = _keys(frame, items, kwargs.get("key"))
    _sort(frame, keys, items, truthy(frame, kwargs.get("reverse", ConstVar(False))))
    return ListVar(items)


def list_sort(frame: "Frame", items: list[Var], args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``list.sort(*, key=None, reverse=False)`` on the captured list's ``items``, in place."""
    if args:
        throw(TypeError("sort() takes no positional arguments"))
    for name in set(kwargs) - {"key", "reverse"}:
        throw(TypeError(f"{name!r} is an invalid keyword argument for sort()"))
    saved = list(items)
    items.clear()  # what the key and comparisons see, as in CPython
    failed: Raised | None = None
    try:
        keys = _keys(frame, saved, kwargs.get("key"))
        reverse = truthy(frame, kwargs.get("reverse", ConstVar(False)))
        try:
            _sort(frame, keys, saved, reverse)
        except Raised as raised:  # the list keeps its order so far
            failed = raised
    finally:
        modified = bool(items)
        items[:] = saved
    if failed is not None:
        raise failed
    if modified:
        throw(ValueError("list modified during sort"))
    return ConstVar(None)


def _keys(frame: "Frame", items: list[Var], key: Var | None) -> list[Var]:
    if key is None or isinstance(key, ConstVar) and key.value is None:
        return list(items)
    return [call(frame, key, [item], {}) for item in items]


def _sort(frame: "Frame", keys: list[Var], items: list[Var], reverse: bool) -> None:
    """Sort ``items`` by ``keys`` in place (both lists move together), stable, as CPython does."""
    values = []
    for k in keys:
        try:
            values.append(python_value(k))
        except NotConstant:
            break
    else:  # Python sorts the places: one that raises midway leaves them as CPython leaves the list
        order = list(range(len(items)))
        try:
            evaluate(order.sort, key=values.__getitem__, reverse=reverse)
        finally:
            items[:] = [items[i] for i in order]
        return
    if len(keys) >= _SHORT:
        frame.fail(f"sorting {len(keys)} tensors or captured objects (only short lists are sorted in capture)")
    if reverse:  # reversed before and after, which keeps equal items in their order
        keys.reverse()
        items.reverse()
    try:
        _insertion_sort(frame, keys, items)
    finally:
        if reverse:
            keys.reverse()
            items.reverse()


def _insertion_sort(frame: "Frame", keys: list[Var], items: list[Var]) -> None:
    """CPython's sort of a short list: its first run (reversed when strictly descending), then each
    further item put in place by binary search, with the same ``<`` comparisons in the same order."""
    def less(a: Var, b: Var) -> bool:
        return truthy(frame, compare(frame, "<", a, b))

    n = len(keys)
    if n < 2:
        return
    run = 2
    if less(keys[1], keys[0]):
        while run < n and less(keys[run], keys[run - 1]):
            run += 1
        keys[:run], items[:run] = keys[run - 1::-1], items[run - 1::-1]
    else:
        while run < n and not less(keys[run], keys[run - 1]):
            run += 1
    for start in range(run, n):
        low, high = 0, start
        while low < high:
            mid = (low + high) >> 1
            if less(keys[start], keys[mid]):
                high = mid
            else:
                low = mid + 1
        keys.insert(low, keys.pop(start))
        items.insert(low, items.pop(start))
