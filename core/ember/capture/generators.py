"""Generators made in the captured code, run lazily, as Python runs them.

Calling a generator function (or evaluating a generator expression) in the captured code makes a
:class:`~.values.GeneratorVar` whose body is a child frame not started yet (``inline.inline_call``).
``next()``, a ``for`` loop, ``yield from`` and ``send(v)`` resume that frame up to its next
``yield`` (``v`` is the result of the ``yield``); when the body returns, the consumer sees the
``StopIteration`` that carries the return value. ``throw(e)`` raises ``e`` at the ``yield`` where
the body is suspended (the body's handlers catch it, or it leaves the generator), ``close()``
throws ``GeneratorExit``; a generator suspended in ``yield from`` hands them on to the iterator it
delegates to first, as CPython does. An exception leaving the body ends the generator
(``StopIteration`` becomes ``RuntimeError``, PEP 479). Each generator keeps the exception its
body is handling apart from its caller's, as CPython does.

A graph break inside a generator's body, resumed by the outermost frame's own instruction,
cannot be taken there: as torch.compile does, the function runs in Python. What becomes of a
generator after the graph: ``generator_outputs.py``.
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Callable, NoReturn

from ..errors import Unsupported
from .compat import PY312
from .constants import NotConstant, python_value
from .dispatch import (
    ATTRS, call, drain, handles_attr, handles_call, handles_iter, handles_next, handles_truth, load_attr, next_item,
)
from .exceptions import Raised, StopIterationVar, raising, stop_value, throw
from .inline import run_child
from .values import ConstVar, GeneratorVar, Suspended, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame

Prepare = Callable[["Frame"], None]


def _name(gen: GeneratorVar) -> str:
    return f"generator {gen.frame.code.co_name}()"


def _is_none(var: Var | None) -> bool:
    return var is None or isinstance(var, ConstVar) and var.value is None


# -- running the body --------------------------------------------------------------------------
def _resume(frame: "Frame", gen: GeneratorVar, prepare: Prepare | None) -> Var | None:
    """Run ``gen``'s body on from where it is (``prepare`` sets its frame up first: the value sent
    in, or an exception raised at its ``yield``): the item it yields next, or None when it returns
    (``gen.result``). What its body raises ends it and leaves here."""
    if gen.status == "running":
        throw(ValueError("generator already executing"))
    if gen.stale:
        frame.fail(f"{_name(gen)}, run on by an instruction a graph break undid")
    state = frame.state
    state.remember(gen)
    child = gen.frame
    outer = state.handled
    state.handled = gen.handled if gen.handled is not None else outer
    gen.status = "running"
    try:
        if prepare is not None:
            prepare(child)
        result = run_child(child)
    except Raised as raised:
        gen.status, gen.handled, gen.result = "done", None, ConstVar(None)
        state.handled = outer
        raise _pep479(raised) from None
    except Unsupported as exc:
        state.handled = outer
        if frame.is_root and getattr(exc, "skip_frame", None) is None:
            exc.skip_frame = (f"a graph break inside the body of {_name(gen)}, which the compiled function resumes "
                              "(torch.compile runs such a function in Python too)")
        raise
    gen.handled = None if state.handled is outer else state.handled
    state.handled = outer
    if isinstance(result, Suspended):
        gen.status = "suspended"
        return result.value
    gen.status, gen.result = "done", result
    return None


def _pep479(raised: Raised) -> Raised:
    """A StopIteration leaving a generator's body is a RuntimeError (3.12 converts it in bytecode)."""
    exc = raised.value.value
    if not isinstance(exc, StopIteration):
        return raised
    error = RuntimeError("generator raised StopIteration")
    error.__cause__ = error.__context__ = exc
    return Raised(ConstVar(error))


def _raise_at_yield(raised: Raised) -> Prepare:
    def prepare(child: "Frame") -> None:
        child.unwind(raised, child.suspended_at)
    return prepare


def _push(value: Var) -> Prepare:
    def prepare(child: "Frame") -> None:
        child.push(value)
    return prepare


def delegate_of(gen: GeneratorVar) -> Var | None:
    """The iterator a generator suspended in ``yield from`` delegates to, or None."""
    child = gen.frame
    at = child.suspended_at
    following = child.instrs[at.index + 1] if at.index + 1 < len(child.instrs) else None
    if following is not None and following.opname == "RESUME" and following.arg == 2:
        return child.stack[-1]
    return None


def _delegation_done(value: Var) -> Prepare:
    """The delegate of a ``yield from`` finished (on a throw) with ``value``: the body goes on
    after the loop, as its ``SEND`` does when the delegate is exhausted."""
    def prepare(child: "Frame") -> None:
        send = child.instrs[child.suspended_at.index - 1]
        if send.opname != "SEND":
            child.fail("yield from without its SEND before the yield")
        if PY312:  # END_SEND at the target pops the delegate
            child.push(value)
        else:
            child.stack[-1] = value
        child.jump(send.argval)
    return prepare


# -- the protocol: next, send, throw, close -------------------------------------------------------
@handles_next(GeneratorVar)
def _next(frame: "Frame", gen: GeneratorVar, sent: Var | None) -> Var | None:
    if gen.status == "done":
        gen.result = ConstVar(None)
        return None
    if gen.status == "created":
        if not _is_none(sent):
            throw(TypeError("can't send non-None value to a just-started generator"))
        return _resume(frame, gen, None)
    return _resume(frame, gen, _push(sent if sent is not None else ConstVar(None)))


def stop_iteration(frame: "Frame", var: Var) -> NoReturn:
    """Raise what an exhausted iterator raises: StopIteration, carrying a generator's return value."""
    result = getattr(var, "result", None)
    if _is_none(result):
        throw(StopIteration())
    try:
        value = python_value(result)
    except NotConstant:  # a tensor, an object the capture built: read back through the payload
        raise Raised(StopIterationVar(StopIteration(None), payload=result)) from None
    throw(StopIteration(value))


@handles_attr(StopIterationVar)
def _stop_attr(frame: "Frame", exc: StopIterationVar, name: str) -> Var:
    if name == "value":
        return exc.payload
    if name == "args":
        return TupleVar([exc.payload])
    return ATTRS.handlers[ConstVar](frame, exc, name)


def has_method(var: Var, name: str) -> bool:
    """An iterator built by the captured code (a Python class's) with the method ``name``; a real
    one (a constant) is never driven at capture time."""
    return not isinstance(var, ConstVar) and hasattr(var.python_type(), name)


def _throw_step(frame: "Frame", gen: GeneratorVar, exc: ConstVar) -> Var | None:
    """``gen.throw(exc)``: the item yielded next, or None when the generator returns."""
    if gen.status == "done":
        raise Raised(exc)
    if gen.status == "created":  # raised before the body's first instruction: no handler
        gen.status = "done"
        raise _pep479(Raised(exc))
    if gen.status == "running":
        throw(ValueError("generator already executing"))
    prepare = _raise_at_yield(Raised(exc))
    delegate = delegate_of(gen)
    if delegate is not None and isinstance(exc.value, GeneratorExit):
        try:
            _close_iterator(frame, delegate)
        except Raised as raised:
            prepare = _raise_at_yield(raised)
    elif delegate is not None and (isinstance(delegate, GeneratorVar) or has_method(delegate, "throw")):
        try:
            item, result = _throw_into(frame, delegate, exc)
        except Raised as raised:  # the delegate let it (or another) out: raised at our yield
            prepare = _raise_at_yield(raised)
        else:
            if item is not None:  # the delegate yields: so do we, still suspended where we were
                return item
            prepare = _delegation_done(result)
    return _resume(frame, gen, prepare)


def _throw_into(frame: "Frame", delegate: Var, exc: ConstVar) -> tuple[Var | None, Var]:
    """The delegate's ``throw(exc)``: (the item it yields, None) or (None, what it returned)."""
    if isinstance(delegate, GeneratorVar):
        item = _throw_step(frame, delegate, exc)
        return item, delegate.result
    try:
        return call(frame, load_attr(frame, delegate, "throw"), [exc], {}), ConstVar(None)
    except Raised as raised:
        if isinstance(raised.value.value, StopIteration):
            return None, stop_value(raised.value)
        raise


def _close_iterator(frame: "Frame", var: Var) -> None:
    """Close what a ``yield from`` delegates to: a generator, or an iterator with a ``close``."""
    if isinstance(var, GeneratorVar):
        close(frame, var)
    elif has_method(var, "close"):
        call(frame, load_attr(frame, var, "close"), [], {})


def close(frame: "Frame", gen: GeneratorVar) -> Var:
    """``gen.close()``: GeneratorExit raised at its ``yield``; None unless the body yields again
    (RuntimeError) or raises something else (it leaves here)."""
    if gen.status in ("created", "done"):
        gen.status = "done"
        return ConstVar(None)
    if gen.status == "running":
        throw(ValueError("generator already executing"))
    pending = Raised(ConstVar(GeneratorExit()))
    delegate = delegate_of(gen)
    if delegate is not None:
        try:
            _close_iterator(frame, delegate)
        except Raised as raised:  # raised at our yield instead
            pending = raised
    try:
        item = _resume(frame, gen, _raise_at_yield(pending))
    except Raised as raised:
        if isinstance(raised.value.value, GeneratorExit):
            return ConstVar(None)
        raise
    if item is not None:
        throw(RuntimeError("generator ignored GeneratorExit"))
    return ConstVar(None)  # 3.13 returns what the body returned


class GeneratorMethod(Var):
    """``gen.send``, ``gen.throw``, ``gen.close``, ``gen.__next__``, ``gen.__iter__``."""

    def __init__(self, gen: GeneratorVar, name: str) -> None:
        self.gen = gen
        self.name = name


def _send(frame: "Frame", gen: GeneratorVar, args: list[Var]) -> Var:
    if len(args) != 1:
        throw(TypeError(f"generator.send() takes exactly one argument ({len(args)} given)"))
    item = next_item(frame, gen, args[0])
    if item is None:
        stop_iteration(frame, gen)
    return item


def _dunder_next(frame: "Frame", gen: GeneratorVar, args: list[Var]) -> Var:
    return _send(frame, gen, [ConstVar(None), *args])


def _throw(frame: "Frame", gen: GeneratorVar, args: list[Var]) -> Var:
    if not 1 <= len(args) <= 3:
        throw(TypeError(f"throw expected at least 1 argument, got {len(args)}"))
    exc = args[0]
    if len(args) > 1 and not _is_none(args[1]):  # throw(type, value): the value made an instance of type
        value = args[1]
        is_instance = isinstance(value, ConstVar) and isinstance(value.value, BaseException)
        exc = value if is_instance else call(frame, exc, [value], {})
    item = _throw_step(frame, gen, raising(frame, exc, None))
    if item is None:
        stop_iteration(frame, gen)
    return item


def _close(frame: "Frame", gen: GeneratorVar, args: list[Var]) -> Var:
    if args:
        throw(TypeError(f"generator.close() takes no arguments ({len(args)} given)"))
    return close(frame, gen)


def _dunder_iter(frame: "Frame", gen: GeneratorVar, args: list[Var]) -> Var:
    return gen


_METHODS: dict[str, Callable[["Frame", GeneratorVar, list[Var]], Var]] = {
    "send": _send, "throw": _throw, "close": _close, "__next__": _dunder_next, "__iter__": _dunder_iter,
}

_ATTRS: dict[str, Callable[[GeneratorVar], Any]] = {
    "__name__": lambda g: g.frame.code.co_name,
    "__qualname__": lambda g: g.frame.code.co_qualname,
    "gi_code": lambda g: g.frame.code,
    "gi_running": lambda g: g.status == "running",
    "gi_suspended": lambda g: g.status == "suspended",
}


@handles_attr(GeneratorVar)
def _attr(frame: "Frame", gen: GeneratorVar, name: str) -> Var:
    if name in _METHODS:
        return GeneratorMethod(gen, name)
    if name in _ATTRS:
        return ConstVar(_ATTRS[name](gen))
    if name == "gi_yieldfrom":
        delegate = delegate_of(gen) if gen.status == "suspended" else None
        return ConstVar(None) if delegate is None else delegate
    if hasattr(types.GeneratorType, name):
        frame.fail(f"attribute {name!r} of a generator made in the captured code")
    throw(AttributeError(f"'generator' object has no attribute {name!r}"))
    raise AssertionError


@handles_call(GeneratorMethod)
def _call_method(frame: "Frame", fn: GeneratorMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if kwargs:
        throw(TypeError(f"generator.{fn.name}() takes no keyword arguments"))
    return _METHODS[fn.name](frame, fn.gen, args)


@handles_iter(GeneratorVar)
def _iterate(frame: "Frame", gen: GeneratorVar) -> list[Var]:
    """Every item left, read now (``list(gen)``, ``sum(gen)``...: Python reads them all there too)."""
    return drain(frame, gen)


@handles_truth(GeneratorVar, GeneratorMethod)
def _truth(frame: "Frame", var: Var) -> bool:
    return True


__all__ = ["GeneratorMethod", "close", "delegate_of", "has_method", "stop_iteration"]
