"""Grad-mode context managers inside captured code: ``no_grad``, ``enable_grad``,
``set_grad_enabled``.

Entering one changes the grad mode used while capturing (so fake tensors get the right
``requires_grad``) and records ``torch._C._set_grad_enabled`` in the graph, so the compiled
code switches modes at the same points as eager. Leaving restores the previous mode the same
way. Calling ``torch.set_grad_enabled(flag)`` outside a ``with`` switches at once, as in eager.
A profiler range (``record_function``) changes nothing the graph computes: entered and left as a no-op.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .ops import as_const
from .values import ConstVar, Var

if TYPE_CHECKING:
    from .frame import Frame


class GradModeContext(Var):
    def __init__(self, enabled: bool | None, previous: bool | None = None) -> None:
        self.enabled = enabled  # None: a no-op context (a profiler range)
        self.previous = previous  # set_grad_enabled switches when constructed


class ContextExit(Var):
    """The ``__exit__`` a ``with`` block leaves on the stack."""

    def __init__(self, ctx: GradModeContext, previous: bool) -> None:
        self.ctx = ctx
        self.previous = previous


def set_grad_mode(frame: "Frame", enabled: bool | None) -> None:
    if enabled is None or torch.is_grad_enabled() == enabled:
        return
    torch._C._set_grad_enabled(enabled)
    frame.state.graph.graph.call_function(torch._C._set_grad_enabled, (enabled,)).meta["mutates"] = True


def make_context(frame: "Frame", fn: object, args: list[Var]) -> Var:
    if fn in NO_OP_CONTEXTS:
        return GradModeContext(None)
    if fn is torch.no_grad:
        return GradModeContext(False)
    if fn is torch.enable_grad:
        return GradModeContext(True)
    enabled = bool(as_const(frame, args[0], "set_grad_enabled's flag"))
    previous = torch.is_grad_enabled()
    set_grad_mode(frame, enabled)
    return GradModeContext(enabled, previous)


def enter(frame: "Frame", ctx: GradModeContext) -> tuple[Var, Var]:
    previous = ctx.previous if ctx.previous is not None or ctx.enabled is None else torch.is_grad_enabled()
    set_grad_mode(frame, ctx.enabled)
    return ContextExit(ctx, previous), ConstVar(None)


def exit_(frame: "Frame", exit_var: ContextExit) -> Var:
    set_grad_mode(frame, exit_var.previous)
    return ConstVar(None)


NO_OP_CONTEXTS = (torch.autograd.profiler.record_function,)
CONTEXT_FACTORIES = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, *NO_OP_CONTEXTS)
