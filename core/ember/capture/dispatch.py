"""The call table: how a value of each kind behaves when the captured code calls it.

Each module that defines a kind of value registers the handler of its calls here when it is
imported (``@handles_call(ContextExit)``), as the inductor's lowerings register per aten op;
``capture/__init__`` imports those modules, so the table is full before any capture runs.
:func:`call` looks the handler up along the callee's class hierarchy. This module imports no
other module of capture that could call back into it: any module may call :func:`call` without
an import circle.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .values import Var

if TYPE_CHECKING:
    from .frame import Frame

CallHandler = Callable[["Frame", Var, list[Var], dict[str, Var]], Var]
CALL_HANDLERS: dict[type[Var], CallHandler] = {}


def handles_call(*kinds: type[Var]) -> Callable[[CallHandler], CallHandler]:
    """Register the decorated function as what calling a value of each of ``kinds`` does."""
    def register(handler: CallHandler) -> CallHandler:
        for kind in kinds:
            CALL_HANDLERS[kind] = handler
        return handler

    return register


def call(frame: "Frame", fn: Var, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``fn(*args, **kwargs)`` in the captured code."""
    for kind in type(fn).__mro__:
        handler = CALL_HANDLERS.get(kind)
        if handler is not None:
            return handler(frame, fn, args, kwargs)
    frame.fail(f"calling a {type(fn).__name__} is not supported")
    raise AssertionError


__all__ = ["CALL_HANDLERS", "CallHandler", "call", "handles_call"]
