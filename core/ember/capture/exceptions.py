"""Exceptions raised and caught inside captured code.

A ``raise`` in the interpreted bytecode, and an error that the capture's own evaluation finds
where Python would raise it (a missing key of a dict it models, ``int("x")``), become a
:class:`Raised` signal carrying the exception instance (a ConstVar). The Frame whose
instruction raised looks up the handler in its code object's exception table (3.11+): it cuts
the stack to the entry's depth, pushes the offset of the instruction when the entry asks for
it, pushes the exception and jumps to the handler. With no handler the signal leaves the frame,
and the calling frame looks up the handler of its CALL the same way. An exception that leaves
the outermost frame is not swallowed: the capture fails with Unsupported, so Python runs the
function and raises the exception itself.

The exception being handled (``sys.exception()``, what a bare ``raise`` re-raises) is kept
as CPython keeps it: ``PUSH_EXC_INFO`` saves the previous one on the value stack and
``POP_EXCEPT`` restores it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import dis
import functools
import inspect
import types
from typing import TYPE_CHECKING, Any, Callable, Iterator, NoReturn

from .values import ConstVar, Var

if TYPE_CHECKING:
    from .frame import Frame


class Raised(Exception):
    """An exception raised by the captured code, on its way to a handler. ``at_call``: Python's
    refusal of a call's arguments; left uncaught, the graph breaks at the call (which raises it in
    Python) rather than the whole function running in Python, as torch.compile does."""

    def __init__(self, value: ConstVar, at_call: bool = False) -> None:
        super().__init__(value.value)
        self.value = value
        self.at_call = at_call

    def describe(self) -> str:
        return repr(self.value.value)


@dataclasses.dataclass(eq=False)
class StopIterationVar(ConstVar):
    """A StopIteration whose value the capture made (a tensor, an object it built): the real
    exception stands for it, and its ``value`` and ``args`` read ``payload`` (``generators.py``)."""

    payload: Var | None = None


def stop_value(exc: ConstVar) -> Var:
    """The value a StopIteration (a ConstVar, or a StopIterationVar) carries."""
    if isinstance(exc, StopIterationVar):
        return exc.payload
    from .constants import lift

    return lift(exc.value.value)


def throw(exc: BaseException) -> NoReturn:
    """Raise ``exc`` inside the captured code."""
    raise Raised(ConstVar(exc))


def evaluate(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` for real at capture time; what it raises, the captured code may catch."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        throw(exc)


@contextlib.contextmanager
def run_ahead(frame: "Frame", what: str) -> Iterator[None]:
    """User code that the capture runs before Python would (a generator to completion where
    it is called, map()'s function on every item): an exception there would surface at
    another point in Python, so the captured code's handlers never see it."""
    try:
        yield
    except Raised as raised:
        frame.fail(f"{raised.describe()} raised inside {what}, which the capture runs before Python would")


@functools.lru_cache(maxsize=1024)
def _table(code: types.CodeType) -> tuple[Any, ...]:
    return tuple(dis._parse_exception_table(code))  # type: ignore[attr-defined]


def handler_for(code: types.CodeType, offset: int) -> Any:
    """The exception-table entry (start, end, target, depth, lasti) covering ``offset``, or None."""
    return next((e for e in _table(code) if e.start <= offset < e.end), None)


def raising(frame: "Frame", exc: Var, cause: Var | None) -> ConstVar:
    """What ``raise exc [from cause]`` raises, its cause and context set as Python sets them."""
    value = _instance(frame, exc, "exceptions must derive from BaseException")
    if cause is not None:  # setting __cause__ also sets __suppress_context__
        none = isinstance(cause, ConstVar) and cause.value is None
        value.__cause__ = None if none else _instance(frame, cause, "exception causes must derive from BaseException")
    handled = frame.state.handled
    if handled is not None and handled.value is not value:
        _cut_cycle(handled.value, value)
        value.__context__ = handled.value
    return ConstVar(value)


def _cut_cycle(context: BaseException, value: BaseException) -> None:
    """Before ``value.__context__ = context``: where ``value`` is already down ``context``'s chain,
    the link to it is cut, as CPython does, so that the chain has no cycle."""
    seen = set()
    link = context
    while link.__context__ is not None and id(link) not in seen:
        seen.add(id(link))
        if link.__context__ is value:
            link.__context__ = None
            return
        link = link.__context__


def _instance(frame: "Frame", var: Var, error: str) -> BaseException:
    from .dispatch import call

    if isinstance(var, ConstVar) and isinstance(var.value, type) and issubclass(var.value, BaseException):
        var = call(frame, var, [], {})
    if not isinstance(var, ConstVar):  # e.g. an exception object built over fake tensors
        frame.fail(f"raising a {type(var).__name__}")
    value = var.value
    if not isinstance(value, BaseException):
        throw(TypeError(error))
    if var.source is not None:  # Python would set its traceback and context: a real side effect
        frame.fail("raising an exception object that exists outside the captured code")
    return value


def matches(frame: "Frame", exc: Var, classes: Var) -> bool:
    """``except classes:`` for the exception ``exc``."""
    from .constants import as_const

    spec = as_const(frame, classes, "the class of an except clause")
    for cls in spec if isinstance(spec, tuple) else (spec,):
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            throw(TypeError("catching classes that do not inherit from BaseException is not allowed"))
    return isinstance(exc.value, spec)


def is_plain_exception_class(value: Any) -> bool:
    """An exception class whose construction runs no Python code: built for real at capture time."""
    return isinstance(value, type) and issubclass(value, BaseException) and not any(
        isinstance(inspect.getattr_static(value, name), (types.FunctionType, staticmethod))
        for name in ("__init__", "__new__"))


__all__ = ["Raised", "StopIterationVar", "evaluate", "handler_for", "is_plain_exception_class", "matches", "raising",
           "run_ahead", "stop_value", "throw"]
