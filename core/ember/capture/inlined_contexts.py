"""Context managers written in Python, inlined: ``with`` over any object whose class has Python
``__enter__``/``__exit__``, and ``@contextlib.contextmanager`` functions (their generator run a step
at a time: to its ``yield`` on entering, from there on leaving).

``BEFORE_WITH`` inlines ``type(ctx).__enter__(ctx)`` and pushes an :class:`InlinedExit` where Python
pushes the bound ``__exit__``; the block's end (or ``WITH_EXCEPT_START``, with the exception) calls
it, so ``__exit__`` runs inlined where Python runs it. For a generator context, leaving sends
``None`` into the generator (it must finish: "generator didn't stop") or throws the exception
into it at its ``yield``: finishing suppresses it, raising it again lets it through, as
``contextlib._GeneratorContextManager.__exit__`` does.

A graph break inside such a block in the outermost frame cannot rebuild an inlined ``__enter__``
in the resume function: the capture starts again (:class:`RetryCapture`) with that ``with``
refused, so the context is entered in Python at a graph break there, as before inlining.
"""
from __future__ import annotations

import contextlib
import inspect
import types
from typing import TYPE_CHECKING, Any

from ..errors import Unsupported
from .builtin_calls import handles
from .constants import as_const
from .dispatch import call, handles_attr, handles_call
from .exceptions import Raised, throw
from .functions import class_function
from .inline import call_dunder, child_frame, run_child
from .locks import is_lock
from .skips import never_traced
from .values import BoundMethodVar, ConstVar, Suspended, Var

if TYPE_CHECKING:
    from .frame import Frame

#: the code of the function ``@contextlib.contextmanager`` returns (one for every decorated function)
HELPER_CODE = contextlib.contextmanager(lambda: (yield)).__code__


class RetryCapture(Exception):
    """Capture again, running these instructions of the outermost code in Python at a graph break
    (``with`` blocks entered there, calls making a generator: ``CaptureState.in_python``)."""

    def __init__(self, offsets: frozenset[int]) -> None:
        super().__init__(f"the instructions at {sorted(offsets)} run in Python")
        self.offsets = offsets


class InlinedExit(Var):
    """The ``__exit__`` a ``with`` over an inlined context leaves on the stack; ``offset``: the
    ``BEFORE_WITH`` of the outermost frame that pushed it (None in an inlined frame)."""

    def __init__(self, method: Var, offset: int | None) -> None:
        self.method = method
        self.offset = offset


class GeneratorContextVar(Var):
    """``cm(*args, **kwargs)`` of a ``@contextmanager`` function ``cm``, not entered yet."""

    def __init__(self, factory: Var, func: Var, args: list[Var], kwargs: dict[str, Var]) -> None:
        self.factory = factory
        self.func = func
        self.args = args
        self.kwargs = kwargs
        self.frame: Any = None  # its generator's frame, once entered
        self.entered_at: int | None = None  # the outermost code's offset that entered it
        self.done = False  # its generator has finished

    def python_type(self) -> type:
        return contextlib._GeneratorContextManager


class GeneratorContextExit(Var):
    """The ``__exit__`` of an entered :class:`GeneratorContextVar`."""

    def __init__(self, ctx: GeneratorContextVar) -> None:
        self.ctx = ctx


def is_contextmanager_helper(value: Any) -> bool:
    """A ``@contextmanager`` function, not torch's own (those switch torch's C state, such as
    functorch's vmap levels, that a capture given up half-way would leave switched)."""
    return isinstance(value, types.FunctionType) and value.__code__ is HELPER_CODE and not _is_torch(_generator_of(value))


def _generator_of(helper: types.FunctionType) -> Any:
    """The generator function a ``@contextmanager`` helper closes over."""
    return dict(zip(HELPER_CODE.co_freevars, helper.__closure__))["func"].cell_contents


def _is_torch(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return module == "torch" or module.startswith("torch.")


def helper_call(frame: "Frame", helper: ConstVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """A call of a ``@contextmanager`` function: its generator function is the helper's closure
    (fixed with the helper, whose identity its source guards)."""
    return GeneratorContextVar(helper, ConstVar(_generator_of(helper.value)), list(args), dict(kwargs))


class ContextManagerFactory(Var):
    """``contextlib.contextmanager(f)`` of a function made inside the captured code."""

    def __init__(self, func: Var) -> None:
        self.func = func


@handles(contextlib.contextmanager)
def decorate(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``contextlib.contextmanager(func)``: a constant function is decorated for real."""
    (func,) = args
    if isinstance(func, ConstVar):
        return ConstVar(contextlib.contextmanager(func.value))
    return ContextManagerFactory(func)


@handles_call(ContextManagerFactory)
def _call_factory(frame: "Frame", fn: ContextManagerFactory, args: list[Var], kwargs: dict[str, Var]) -> Var:
    return GeneratorContextVar(fn, fn.func, list(args), dict(kwargs))


def enter(frame: "Frame", ctx: Var, offset: int | None) -> tuple[Var, Var] | None:
    """``BEFORE_WITH`` over ``ctx``: (the exit to push, what ``__enter__`` returned), or None when
    ``ctx`` is not a context this module inlines."""
    if isinstance(ctx, GeneratorContextVar):
        return _enter_generator(frame, ctx, offset)
    if isinstance(ctx, ConstVar) and is_lock(ctx.value):  # acquiring while capturing is a no-op (locks.py)
        return InlinedExit(ConstVar(ctx.value.__exit__), offset), ConstVar(True)
    cls = type(ctx.value) if isinstance(ctx, ConstVar) else ctx.python_type()
    exit_ = inspect.getattr_static(cls, "__exit__", None)
    enter_ = inspect.getattr_static(cls, "__enter__", None)
    if not isinstance(exit_, types.FunctionType) or not isinstance(enter_, types.FunctionType) \
            or never_traced(enter_) or never_traced(exit_) or _is_torch(enter_):
        return None  # the standard library's are called, not traced; torch's own are entered in Python
    method = BoundMethodVar(class_function(frame.state, cls, "__exit__", exit_), ctx)
    value = call_dunder(frame, ctx, "__enter__", [])
    return InlinedExit(method, offset), value


@handles_call(InlinedExit)
def _call_exit(frame: "Frame", fn: InlinedExit, args: list[Var], kwargs: dict[str, Var]) -> Var:
    return call(frame, fn.method, args, kwargs)


def _enter_generator(frame: "Frame", ctx: GeneratorContextVar, offset: int | None) -> tuple[Var, Var]:
    if ctx.frame is not None:
        frame.fail("a @contextmanager context entered twice")
    if isinstance(ctx.func, ConstVar) and never_traced(ctx.func.value):
        frame.fail(f"@contextmanager function {ctx.func.value.__qualname__} {never_traced(ctx.func.value)}")
    child = child_frame(frame, ctx.func, ctx.args, ctx.kwargs)
    if not child.code.co_flags & inspect.CO_GENERATOR:
        frame.fail("@contextmanager over a function that is not a generator")
    child.suspends = True
    ctx.frame, ctx.entered_at = child, offset
    result = run_child(child)
    if not isinstance(result, Suspended):
        throw(RuntimeError("generator didn't yield"))
    return InlinedExit(GeneratorContextExit(ctx), offset), result.value


@handles_call(GeneratorContextExit)
def _call_generator_exit(frame: "Frame", fn: GeneratorContextExit, args: list[Var], kwargs: dict[str, Var]) -> Var:
    child = fn.ctx.frame
    exc_type = as_const(frame, args[0], "__exit__'s exception type") if args else None
    at = child.suspended_at
    child.suspended_at = None
    fn.ctx.done = True
    if exc_type is None:
        child.push(ConstVar(None))
        if isinstance(run_child(child), Suspended):
            throw(RuntimeError("generator didn't stop"))
        return ConstVar(False)
    exc = args[1]
    try:
        child.unwind(Raised(exc), at)
        result = run_child(child)
    except Raised as raised:
        if raised.value.value is exc.value:
            return ConstVar(False)
        raise
    if isinstance(result, Suspended):
        throw(RuntimeError("generator didn't stop after throw()"))
    return ConstVar(True)


def rebuild_expr(out: Any, var: GeneratorContextVar) -> str:
    """The context made again after the graph (not entered: its generator has not started)."""
    if var.frame is not None:
        raise Unsupported("a @contextmanager context entered inside the captured code, at a graph break")
    if not isinstance(var.factory, ConstVar):
        raise Unsupported("a @contextmanager function made inside the captured code, at a graph break")
    args = [out.expr(a) for a in var.args] + [f"{k}={out.expr(v)}" for k, v in var.kwargs.items()]
    return f"{out.expr(var.factory)}({', '.join(args)})"


class ManualEnter(Var):
    """``cm.__enter__`` read from a :class:`GeneratorContextVar`, to be called by hand."""

    def __init__(self, ctx: GeneratorContextVar) -> None:
        self.ctx = ctx


@handles_attr(GeneratorContextVar)
def _context_attr(frame: "Frame", ctx: GeneratorContextVar, name: str) -> Var:
    if name == "__enter__":
        return ManualEnter(ctx)
    if name == "__exit__" and ctx.frame is not None:
        return GeneratorContextExit(ctx)
    frame.fail(f"attribute {name!r} of a @contextmanager context")
    raise AssertionError


@handles_call(ManualEnter)
def _call_manual_enter(frame: "Frame", fn: ManualEnter, args: list[Var], kwargs: dict[str, Var]) -> Var:
    offset = frame.current.offset if frame.is_root and frame.current is not None else None
    if offset is not None and offset in frame.state.in_python:
        refuse(frame)
    return _enter_generator(frame, fn.ctx, offset)[1]


def retry_offsets(stack: list[Var], locals_: list[Var]) -> frozenset[int]:
    """Where the outermost frame entered the inlined contexts still open at a break: ``with``
    blocks on ``stack``, generator contexts entered by hand and not left."""
    offsets = {v.offset for v in stack if isinstance(v, InlinedExit) and v.offset is not None}
    offsets |= {v.entered_at for v in [*stack, *locals_] if isinstance(v, GeneratorContextVar)
                and v.entered_at is not None and not v.done}
    return frozenset(offsets)


def refuse(frame: "Frame") -> None:
    frame.fail("a with-block whose body breaks the graph: its context is entered in Python at a graph break")


__all__ = ["GeneratorContextVar", "InlinedExit", "RetryCapture", "decorate", "enter", "helper_call",
           "is_contextmanager_helper", "rebuild_expr", "refuse", "retry_offsets"]
