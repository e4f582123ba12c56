"""Context managers inside captured code.

Modelled ones are torch's grad-mode switches (``no_grad``, ``enable_grad``,
``set_grad_enabled``), ``autocast`` (switched in the graph the same way) and
``record_function``. Entering a grad-mode context changes the grad
mode used while capturing (so fake tensors get the right ``requires_grad``) and records
``torch._C._set_grad_enabled`` in the graph, so the compiled code switches modes at the same
points as eager; leaving restores the previous mode the same way. ``record_function`` only
names a profiler range: the graph ignores it (as torch.compile's does). Calling
``torch.set_grad_enabled(flag)`` outside a ``with`` switches at once, as in eager.

Every modelled context can be made again from its :class:`ContextSpec` (constructor and
constant arguments): at a graph break inside its block, the graph closes the block, the runner
enters a new one around the instruction that runs in Python, and the resume function enters
one again at its start (``resume.py``), so ``__exit__`` runs where Python runs it.

Other context managers are entered in Python at a graph break; their ``__exit__`` (and what
``__enter__`` returned) reach the resume function as :class:`Opaque` values that the capture
passes along without reading them.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import torch

from .builtin_calls import handles
from .constants import as_const
from .dispatch import call, handles_call
from .exceptions import Raised
from .values import ConstVar, Var

if TYPE_CHECKING:
    from .frame import Frame


@dataclasses.dataclass(frozen=True)
class ContextSpec:
    """How to make a modelled context again: ``factory(*args)``."""

    factory: Any
    args: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"{getattr(self.factory, '__qualname__', self.factory)}{self.args!r}"


class ModelledContext(Var):
    """A context manager the capture models; ``enter``/``exit`` act on the graph."""

    spec: ContextSpec

    def python_type(self) -> type:
        return self.spec.factory

    def remakeable(self) -> bool:
        """Can the code after the graph make it again with ``spec`` (a context object still held
        in a local at a break, ``ctx = torch.autocast(...)``)? Only if making it changes nothing."""
        return True

    def enter(self, frame: "Frame") -> "ContextExit":
        raise NotImplementedError

    def exit(self, frame: "Frame", exit_var: "ContextExit") -> None:
        raise NotImplementedError


class GradModeContext(ModelledContext):
    def __init__(self, enabled: bool, spec: ContextSpec, previous: bool | None = None) -> None:
        self.enabled = enabled
        self.spec = spec
        self.previous = previous  # set_grad_enabled switches when constructed

    def remakeable(self) -> bool:
        return self.previous is None

    def enter(self, frame: "Frame") -> "ContextExit":
        previous = self.previous if self.previous is not None else torch.is_grad_enabled()
        set_grad_mode(frame, self.enabled)
        return ContextExit(self, previous)

    def exit(self, frame: "Frame", exit_var: "ContextExit") -> None:
        set_grad_mode(frame, exit_var.previous)


class RecordFunctionContext(ModelledContext):
    """``torch.autograd.profiler.record_function(name)``: a profiler range, not in the graph."""

    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec

    def enter(self, frame: "Frame") -> "ContextExit":
        return ContextExit(self, None)

    def exit(self, frame: "Frame", exit_var: "ContextExit") -> None:
        return None


class AutocastContext(ModelledContext):
    """``torch.autocast(...)``: the graph switches autocast where eager does (fake tensors are
    made under the same switch, so their dtypes are autocast's)."""

    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec
        self.device, dtype, enabled, cache = spec.args
        self.state = (enabled, dtype, cache)

    def enter(self, frame: "Frame") -> "ContextExit":
        device = self.device
        previous = (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device),
                    torch.is_autocast_cache_enabled())
        _switch_autocast(frame, autocast_enter, device, self.state)
        return ContextExit(self, previous)

    def exit(self, frame: "Frame", exit_var: "ContextExit") -> None:
        _switch_autocast(frame, autocast_exit, self.device, exit_var.previous)


def autocast_enter(device: str, enabled: bool, dtype: torch.dtype, cache: bool) -> None:
    """What ``torch.autocast.__enter__`` does, as one graph node."""
    _set_autocast(device, enabled, dtype, cache)
    torch.autocast_increment_nesting()


def autocast_exit(device: str, enabled: bool, dtype: torch.dtype, cache: bool) -> None:
    """What ``torch.autocast.__exit__`` does (back to the given state), as one graph node."""
    if torch.autocast_decrement_nesting() == 0:
        torch.clear_autocast_cache()
    _set_autocast(device, enabled, dtype, cache)


def _set_autocast(device: str, enabled: bool, dtype: torch.dtype, cache: bool) -> None:
    torch.set_autocast_enabled(device, enabled)
    torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(cache)


def _switch_autocast(frame: "Frame", target: Any, device: str, state: tuple) -> None:
    _set_autocast(device, *state)  # for the capture (its nesting count is left alone)
    frame.state.graph.graph.call_function(target, (device, *state)).meta["mutates"] = True


class ContextExit(Var):
    """The ``__exit__`` a ``with`` block over a modelled context leaves on the stack."""

    def __init__(self, ctx: ModelledContext, previous: Any) -> None:
        self.ctx = ctx
        self.previous = previous


class Opaque(Var):
    """A value made in Python at a graph break (a context's ``__exit__``, what ``__enter__``
    returned) that the capture passes to the next resume function without looking at it."""

    def __init__(self, source: Any) -> None:
        self.source = source


def set_grad_mode(frame: "Frame", enabled: bool) -> None:
    if torch.is_grad_enabled() == enabled:
        return
    torch._C._set_grad_enabled(enabled)
    frame.state.graph.graph.call_function(torch._C._set_grad_enabled, (enabled,)).meta["mutates"] = True


@handles(torch._C._set_grad_enabled)
def _set_grad_enabled(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``torch._C._set_grad_enabled(flag)`` (what a hand-written grad-mode context calls): the
    capture's mode and the graph switch at once, as eager's does."""
    set_grad_mode(frame, bool(as_const(frame, args[0], "_set_grad_enabled's flag")))
    return ConstVar(None)


def make_context(frame: "Frame", fn: object, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if fn is torch.autograd.profiler.record_function:
        values = [as_const(frame, a, "record_function's arguments") for a in args]
        names = ("name", "args")[len(values):]
        values += [as_const(frame, kwargs[n], "record_function's arguments") if n in kwargs else None for n in names]
        return RecordFunctionContext(ContextSpec(fn, tuple(values)))
    if fn is torch.autocast:  # made for real: it checks its arguments and picks the dtype
        real = torch.autocast(*[as_const(frame, a, "autocast's arguments") for a in args],
                              **{k: as_const(frame, v, "autocast's arguments") for k, v in kwargs.items()})
        return AutocastContext(ContextSpec(fn, (real.device, real.fast_dtype, real._enabled, real._cache_enabled)))
    if kwargs:
        frame.fail(f"{getattr(fn, '__name__', fn)} with keyword arguments")
    if fn in (torch.no_grad, torch.enable_grad):
        ctx = GradModeContext(fn is torch.enable_grad, ContextSpec(fn, ()))
        return wrap_function(frame, ctx, args[0]) if args else ctx  # ``@torch.no_grad`` with no call
    enabled = bool(as_const(frame, args[0], "set_grad_enabled's flag"))
    previous = torch.is_grad_enabled()
    set_grad_mode(frame, enabled)
    return GradModeContext(enabled, ContextSpec(fn, (enabled,)), previous)


def enter(frame: "Frame", ctx: ModelledContext) -> tuple[Var, Var]:
    """``BEFORE_WITH``: the ``__exit__`` to push and what ``__enter__`` returned."""
    exit_var = ctx.enter(frame)
    return exit_var, (ConstVar(None) if isinstance(ctx, GradModeContext) else ctx)


def exit_(frame: "Frame", exit_var: ContextExit) -> Var:
    exit_var.ctx.exit(frame, exit_var)
    return ConstVar(None)


class GradModeFunction(Var):
    """A function wrapped by a grad-mode context used as a decorator: called under that mode."""

    def __init__(self, enabled: bool, func: Var) -> None:
        self.enabled = enabled
        self.func = func


def wrap_function(frame: "Frame", ctx: GradModeContext, func: Var) -> Var:
    """``torch.no_grad()(f)``, ``@torch.enable_grad``, ``@torch.set_grad_enabled(flag)``: the mode
    that ``set_grad_enabled`` switched when made is switched back, as its ``__call__`` does."""
    if ctx.previous is not None:
        set_grad_mode(frame, ctx.previous)
    return GradModeFunction(ctx.enabled, func)


@handles_call(GradModeContext)
def _call_grad_context(frame: "Frame", fn: GradModeContext, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if len(args) != 1 or kwargs:
        frame.fail("calling a grad-mode context with other than one function")
    return wrap_function(frame, fn, args[0])


@handles_call(GradModeFunction)
def _call_grad_function(frame: "Frame", fn: GradModeFunction, args: list[Var], kwargs: dict[str, Var]) -> Var:
    previous = torch.is_grad_enabled()
    set_grad_mode(frame, fn.enabled)
    try:
        result = call(frame, fn.func, args, kwargs)
    except Raised:
        set_grad_mode(frame, previous)
        raise
    set_grad_mode(frame, previous)
    return result


@handles_call(ContextExit)
def _call_exit(frame: "Frame", fn: ContextExit, args: list[Var], kwargs: dict[str, Var]) -> Var:
    return exit_(frame, fn)


@handles_call(Opaque)
def _call_opaque(frame: "Frame", fn: Opaque, args: list[Var], kwargs: dict[str, Var]) -> Var:
    frame.fail("calling a value made in Python at a graph break (a context manager's __exit__)")
    raise AssertionError


def close_open_blocks(frame: "Frame", stack: list[Var]) -> None:
    """At a graph break: leave the modelled blocks still open on ``stack`` (innermost first),
    so the graph hands torch's state back as it found it."""
    for var in reversed(stack):
        if isinstance(var, ContextExit):
            exit_(frame, var)


CONTEXT_FACTORIES = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.autograd.profiler.record_function,
                     torch.autocast)
