"""Context managers inside captured code.

Modelled ones are torch's grad-mode switches (``no_grad``, ``enable_grad``,
``set_grad_enabled``) and ``record_function``. Entering a grad-mode context changes the grad
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

from .ops import as_const
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

    def enter(self, frame: "Frame") -> "ContextExit":
        raise NotImplementedError

    def exit(self, frame: "Frame", exit_var: "ContextExit") -> None:
        raise NotImplementedError


class GradModeContext(ModelledContext):
    def __init__(self, enabled: bool, spec: ContextSpec, previous: bool | None = None) -> None:
        self.enabled = enabled
        self.spec = spec
        self.previous = previous  # set_grad_enabled switches when constructed

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


def make_context(frame: "Frame", fn: object, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if fn is torch.autograd.profiler.record_function:
        values = [as_const(frame, a, "record_function's arguments") for a in args]
        names = ("name", "args")[len(values):]
        values += [as_const(frame, kwargs[n], "record_function's arguments") if n in kwargs else None for n in names]
        return RecordFunctionContext(ContextSpec(fn, tuple(values)))
    if kwargs:
        frame.fail(f"{getattr(fn, '__name__', fn)} with keyword arguments")
    if fn is torch.no_grad:
        return GradModeContext(False, ContextSpec(fn, ()))
    if fn is torch.enable_grad:
        return GradModeContext(True, ContextSpec(fn, ()))
    enabled = bool(as_const(frame, args[0], "set_grad_enabled's flag"))
    previous = torch.is_grad_enabled()
    set_grad_mode(frame, enabled)
    return GradModeContext(enabled, ContextSpec(fn, (enabled,)), previous)


def enter(frame: "Frame", ctx: ModelledContext) -> tuple[Var, Var]:
    """``BEFORE_WITH``: the ``__exit__`` to push and what ``__enter__`` returned."""
    exit_var = ctx.enter(frame)
    return exit_var, (ctx if isinstance(ctx, RecordFunctionContext) else ConstVar(None))


def exit_(frame: "Frame", exit_var: ContextExit) -> Var:
    exit_var.ctx.exit(frame, exit_var)
    return ConstVar(None)


def close_open_blocks(frame: "Frame", stack: list[Var]) -> None:
    """At a graph break: leave the modelled blocks still open on ``stack`` (innermost first),
    so the graph hands torch's state back as it found it."""
    for var in reversed(stack):
        if isinstance(var, ContextExit):
            exit_(frame, var)


CONTEXT_FACTORIES = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.autograd.profiler.record_function)
