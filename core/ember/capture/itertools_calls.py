"""``itertools`` over captured values: the iterator's items are made now, as the capture runs
loops to completion (``IteratorVar``).

The combinatoric and slicing helpers (``product``, ``combinations``, ``permutations``,
``zip_longest``, ``islice``, ``chain.from_iterable``, ``repeat`` with a count, ``pairwise``...)
only arrange their arguments' items: they run for real over the lists of Vars themselves, so
tensors stay graph values. Those that call a function or add (``accumulate``, ``starmap``,
``groupby``, ``takewhile``, ``dropwhile``, ``filterfalse``) call it through the capture.
``count()`` is endless: it is an iterator read one item at a time (``next``, ``zip``), as is
``islice`` of a lazy iterator (``lazy_iterators.py``).
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Callable

from .builtin_calls import BUILTIN_HANDLERS, handles
from .constants import as_const, python_value
from . import lazy_iterators
from .dispatch import call, handles_iter, handles_next, is_lazy, iterate, truthy
from .exceptions import evaluate, run_ahead
from .ops import binary
from .values import ConstVar, IteratorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


def _as_var(item: Any) -> Var:
    """What a real itertools function handed back: a Var, or a tuple of Vars."""
    if isinstance(item, tuple):
        return TupleVar([_as_var(i) for i in item])
    return item


def _arranging(fn: Callable, iterables: slice, constants: tuple[str, ...] = ()) -> Callable:
    """A handler running ``fn`` for real over the items (as Vars) of its iterable arguments
    (positions ``iterables``), its other arguments and the keywords ``constants`` as constants."""
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        positions = range(len(args))[iterables]
        real = [iterate(frame, a) if i in positions else as_const(frame, a, f"{fn.__name__}'s arguments")
                for i, a in enumerate(args)]
        real_kwargs = {k: (as_const(frame, v, f"{fn.__name__}'s {k}") if k in constants else v)
                       for k, v in kwargs.items()}
        return IteratorVar([_as_var(i) for i in evaluate(lambda: list(fn(*real, **real_kwargs)))])

    return handler


for _fn, _iterables in [(itertools.product, slice(None)), (itertools.combinations, slice(0, 1)),
                        (itertools.combinations_with_replacement, slice(0, 1)), (itertools.permutations, slice(0, 1)),
                        (itertools.zip_longest, slice(None)), (itertools.islice, slice(0, 1)),
                        (itertools.pairwise, slice(0, 1))]:
    BUILTIN_HANDLERS[_fn] = _arranging(_fn, _iterables, constants=("repeat", "r"))
_ISLICE = BUILTIN_HANDLERS[itertools.islice]


@handles(itertools.islice)
def _islice(frame: "Frame", args: list, kwargs: dict) -> Var:
    """``islice`` of a lazy iterator (a generator, ``count()``): read only as far as it goes."""
    if not args or not is_lazy(args[0]) or kwargs or not 2 <= len(args) <= 4:
        return _ISLICE(frame, args, kwargs)
    bounds = slice(*(as_const(frame, a, "islice's bounds") for a in args[1:]))
    start, step = bounds.start or 0, bounds.step or 1
    return lazy_iterators.make(frame, "islice", [args[0]], index=start, stop=bounds.stop, step=step)


@handles(itertools.tee)
def _tee(frame: "Frame", args: list, kwargs: dict) -> Var:
    """``tee(it, n)``: n iterators over the same items (over a lazy one, sharing what they read)."""
    n = as_const(frame, args[1] if len(args) > 1 else kwargs.get("n", ConstVar(2)), "tee's count")
    if not isinstance(n, int) or n < 0:
        frame.fail("itertools.tee with a count that is not a natural number")
    if not is_lazy(args[0]):
        items = iterate(frame, args[0])
        return TupleVar([IteratorVar(list(items)) for _ in range(n)])
    source, buffer = args[0], []
    return TupleVar([lazy_iterators.make(frame, "tee", [source], buffer=buffer) for _ in range(n)])


@handles(itertools.chain.from_iterable)
def _chain_from_iterable(frame: "Frame", args: list, kwargs: dict) -> Var:
    return IteratorVar([item for inner in iterate(frame, args[0]) for item in iterate(frame, inner)])


@handles(itertools.repeat)
def _repeat(frame: "Frame", args: list, kwargs: dict) -> Var:
    times = args[1] if len(args) > 1 else kwargs.get("times")
    if times is None:
        frame.fail("itertools.repeat() with no count (endless)")
    return IteratorVar([args[0]] * max(0, as_const(frame, times, "repeat's count")))


@handles(itertools.accumulate)
def _accumulate(frame: "Frame", args: list, kwargs: dict) -> Var:
    items = iterate(frame, args[0])
    fn = args[1] if len(args) > 1 else kwargs.get("func")
    if fn is not None and isinstance(fn, ConstVar) and fn.value is None:
        fn = None
    out: list[Var] = []
    if "initial" in kwargs and not (isinstance(kwargs["initial"], ConstVar) and kwargs["initial"].value is None):
        out.append(kwargs["initial"])
    with run_ahead(frame, "itertools.accumulate()"):
        for item in items:
            if not out:
                out.append(item)
                continue
            out.append(binary(frame, "+", out[-1], item) if fn is None else call(frame, fn, [out[-1], item], {}))
    return IteratorVar(out)


@handles(itertools.starmap)
def _starmap(frame: "Frame", args: list, kwargs: dict) -> Var:
    fn, rows = args[0], iterate(frame, args[1])
    with run_ahead(frame, "itertools.starmap()"):
        return IteratorVar([call(frame, fn, iterate(frame, row), {}) for row in rows])


def _predicate_handler(kind: str) -> Callable:
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        fn, items = args[0], iterate(frame, args[1])
        with run_ahead(frame, f"itertools.{kind}()"):
            if kind == "filterfalse":
                return IteratorVar([v for v in items if not _test(frame, fn, v)])
            cut = next((i for i, v in enumerate(items) if not _test(frame, fn, v)), len(items))
        return IteratorVar(items[:cut] if kind == "takewhile" else items[cut:])

    return handler


def _test(frame: "Frame", fn: Var, item: Var) -> bool:
    if isinstance(fn, ConstVar) and fn.value is None:
        return truthy(frame, item)
    return truthy(frame, call(frame, fn, [item], {}))


for _name in ("takewhile", "dropwhile", "filterfalse"):
    BUILTIN_HANDLERS[getattr(itertools, _name)] = _predicate_handler(_name)


@handles(itertools.groupby)
def _groupby(frame: "Frame", args: list, kwargs: dict) -> Var:
    items = iterate(frame, args[0])
    key_fn = args[1] if len(args) > 1 else kwargs.get("key")
    groups: list[Var] = []
    last: Any = object()
    with run_ahead(frame, "itertools.groupby()"):
        for item in items:
            key = item if key_fn is None or isinstance(key_fn, ConstVar) and key_fn.value is None \
                else call(frame, key_fn, [item], {})
            value = as_const(frame, key, "a groupby key")
            if not groups or value != last:
                groups.append(TupleVar([key, IteratorVar([])]))
                last = value
            groups[-1].items[1].items.append(item)
    return IteratorVar(groups)


class CountVar(Var):
    """``itertools.count(start, step)``: endless, read one item at a time."""

    lazy = True

    def __init__(self, start: Var, step: Var) -> None:
        self.start = start
        self.step = step

    def next(self, frame: "Frame") -> Var:
        frame.state.remember(self)
        item, self.start = self.start, binary(frame, "+", self.start, self.step)
        return item

    def save(self) -> Var:
        return self.start

    def restore(self, saved: Var) -> None:
        self.start = saved


@handles(itertools.count)
def _count(frame: "Frame", args: list, kwargs: dict) -> Var:
    start = args[0] if args else kwargs.get("start", ConstVar(0))
    step = args[1] if len(args) > 1 else kwargs.get("step", ConstVar(1))
    python_value(start)  # numbers only
    return CountVar(start, step)


@handles_next(CountVar)
def _count_next(frame: "Frame", var: CountVar, sent: Var | None) -> Var:
    return var.next(frame)


@handles_iter(CountVar)
def _iterate_count(frame: "Frame", var: CountVar) -> list[Var]:
    frame.fail("iterating over itertools.count() to its end (endless)")
    raise AssertionError


__all__ = ["CountVar"]
