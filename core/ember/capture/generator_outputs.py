"""What becomes of the iterators the captured code made, after the graph.

A generator (``generators.py``) or a lazy iterator (``lazy_iterators.py``) in the value returned,
or live at a graph break, has the items it has left run ahead (``lazy_iterators.force``: no side
effects that the code after the graph could see) and is handed back as a list iterator over them,
as torch.compile does; a finished generator is an exhausted generator, and one that the
instruction breaking the graph started is made again by calling its function. A materialised
``IteratorVar`` is a list iterator over its items left. On the stack at a break (a ``for`` loop's
iterator) and reached from nothing else, the items left are a list the resume function iterates
over in its capture; otherwise one real iterator, which a loop advances with ``next()`` at a break
(``breaks.py``). A ``for`` loop's generator that cannot run ahead (it changes what the code after
the break sees) stops the capture, which starts again with the outermost call that made it run
in Python at a break (``CaptureState.in_python``); elsewhere, or for a break inside its body, the
function runs in Python, as with torch.compile.

When the compiled function returns (or breaks the graph), a generator it made and leaves
suspended inside a ``try`` block (or in ``yield from`` an iterator with a ``close``), which nothing
it returns or stores (or keeps after the break) reaches, is closed then, as CPython's reference
counting closes it (its ``finally`` and ``except GeneratorExit`` run).
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Callable

from ..errors import Unsupported
from .exceptions import Raised, handler_for
from .generators import close, delegate_of, has_method
from .inlined_contexts import GeneratorContextVar
from .lazy_iterators import LazyIterVar, force
from .objects import ShadowVar, visit_parts
from .user_objects import UserObjectVar
from .values import (
    BoundMethodVar, CellVar, DictVar, DictViewVar, FunctionVar, GeneratorVar, Identity, IteratorVar, ListVar,
    PartialVar, SetVar, TupleVar, Var,
)

if TYPE_CHECKING:
    from .frame import Frame


def _name(gen: GeneratorVar) -> str:
    return f"generator {gen.frame.code.co_name}()"


def exhausted() -> types.GeneratorType:
    """A finished generator: what a generator the captured code ran to its end is rebuilt as."""
    gen = (item for item in ())
    for _ in gen:
        pass
    return gen


def items_left(var: Var, live: list[Var] | None) -> list[Var] | None:
    """The items a suspended generator or a lazy iterator has left, run ahead once (None for a
    generator made again from its call, or finished); ``live``: what lives on after the graph
    (None: not known, and running ahead may change nothing but iterators)."""
    if isinstance(var, IteratorVar):
        return var.items[var.index:]
    reached = None if live is None else lambda items: _reached(live, var, items)
    if isinstance(var, GeneratorVar):
        if var.forced is None and var.status in ("created", "suspended") and not _remake(var):
            if var.stale:
                raise Unsupported(f"{_name(var)} is suspended at a graph break and was run on by the instruction "
                                  "that breaks: it cannot be rebuilt")
            try:
                var.forced = force(var.frame, var, _name(var), reached)
            except Unsupported as exc:  # a loop's: the capture may start again, the call making it in Python
                if getattr(exc, "cannot_run_ahead", False):
                    exc.unforced = var
                raise
        return var.forced
    if isinstance(var, LazyIterVar):
        if var.forced is None:
            var.forced = force(var.frame, var, f"{var.kind}() over a generator", reached)
        return var.forced
    return None


def _remake(gen: GeneratorVar) -> bool:
    """Not started when the instruction that breaks the graph began, and run by it: made again
    from its call after the graph (torch.compile runs every generator ahead, when it can)."""
    return gen.status == "created" and gen.stale


def parts(var: Var, live: list[Var] | None) -> list[Var]:
    """The values rebuilding ``var`` refers to (OutputBuilder.share); ``live`` as for items_left."""
    left = items_left(var, live)
    if left is not None:
        return left
    if isinstance(var, GeneratorVar) and _remake(var):
        return [var.fn, *var.args, *var.kwargs.values()]
    return []


def rebuild_expr(out: Any, var: Var) -> str:
    """The iterator after the graph: a list iterator over the items left, a generator made again
    from the same call, or a finished generator."""
    left = items_left(var, out.live)
    if left is not None:
        return f"iter([{', '.join(out.expr(v) for v in left)}])"
    if isinstance(var, GeneratorVar) and _remake(var):
        args = [out.expr(a) for a in var.args] + [f"{k}={out.expr(v)}" for k, v in var.kwargs.items()]
        return f"{out.expr(var.fn)}({', '.join(args)})"
    return f"{out.consts.name(exhausted, 'gen')}()"


ITERATOR_KINDS = (IteratorVar, GeneratorVar, LazyIterVar)


# -- when the compiled function returns -----------------------------------------------------------
def _closing_runs_code(gen: GeneratorVar) -> bool:
    """Suspended inside a try block of its own, or delegating to a generator that is or to an
    iterator with a ``close`` method. 3.12's handler around every generator body (PEP 479) does
    not count."""
    child = gen.frame
    entry = handler_for(child.code, child.suspended_at.offset)
    if entry is not None and child.instrs[child.index_of[entry.target]].opname != "CALL_INTRINSIC_1":
        return True
    delegate = delegate_of(gen)
    if isinstance(delegate, GeneratorVar):
        return delegate.status == "suspended" and _closing_runs_code(delegate)
    return delegate is not None and has_method(delegate, "close")


def _generator_parts(var: GeneratorVar) -> list[Var]:
    child = var.frame
    cells = [c for c in child.cells.values() if isinstance(c, CellVar)]
    return [*child.locals.values(), *child.stack, *cells, var.fn, *var.args, *var.kwargs.values()]


#: what each kind of value holds (the kinds not listed hold no value of the captured code's making:
#: constants, tensors, sizes, methods, contexts)
_HOLDS: dict[type, Callable[[Any], list[Var]]] = {
    TupleVar: lambda v: list(v.items),
    ListVar: lambda v: list(v.items),
    IteratorVar: lambda v: list(v.items),
    DictVar: lambda v: [*v.items.values(), *([v.default_factory] if v.default_factory is not None else [])],
    SetVar: lambda v: [k.var for k in v.items if isinstance(k, Identity)],
    DictViewVar: lambda v: [v.mapping],
    CellVar: lambda v: [] if v.contents is None else [v.contents],
    FunctionVar: lambda v: [*v.defaults, *v.kwdefaults.values(), *v.closure, *v.attrs.values(), *v.slots.values()],
    BoundMethodVar: lambda v: [v.func, v.self_var],
    PartialVar: lambda v: [v.func, *v.args, *v.kwargs.values()],
    LazyIterVar: lambda v: [*v.parts, *([v.fn] if v.fn is not None else [])],
    GeneratorVar: _generator_parts,
    UserObjectVar: lambda v: list(v.items.values()),
    ShadowVar: visit_parts,
    GeneratorContextVar: lambda v: [*v.args, *v.kwargs.values()],
}


def _holds(var: Var) -> list[Var]:
    for kind in type(var).__mro__:
        if kind in _HOLDS:
            return _HOLDS[kind](var)
    return []


def _reached(roots: list[Var], forced: Var | None = None, items: list[Var] | None = None) -> set[int]:
    """ids of every value ``roots`` reach; an iterator run ahead reaches its items only (``forced``:
    the one being run ahead, with ``items``), not its generator's frame."""
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        var = todo.pop()
        if id(var) not in seen:
            seen.add(id(var))
            if var is forced:
                todo.extend(items or [])
            else:
                todo.extend(var.forced if getattr(var, "forced", None) is not None else _holds(var))
    return seen


def close_abandoned(frame: "Frame", roots: list[Var]) -> None:
    """At the return of the compiled function ``frame`` (or at a graph break in it): close the
    generators it made that are suspended inside a try block and that ``roots`` (what it returns
    and stores, or what lives on after the break) do not reach."""
    pending = [g for g in frame.state.generators if g.status == "suspended" and not g.stale and _closing_runs_code(g)]
    if not pending:
        return
    reached = _reached(roots)
    for gen in pending:
        if id(gen) in reached or gen.status != "suspended":
            continue
        try:
            close(frame, gen)
        except Raised:  # CPython reports it ("Exception ignored in") and goes on
            pass


__all__ = ["ITERATOR_KINDS", "close_abandoned", "exhausted", "items_left", "parts", "rebuild_expr"]
