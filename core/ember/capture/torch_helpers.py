"""torch's checks and no-ops inside captured code: understood, not traced and not refused.

- ``torch._assert(cond, msg)``: a Python or shape-derived condition is evaluated now (a false
  one raises AssertionError in the captured code, as eager would); a tensor condition becomes
  ``torch._assert_async(cond, msg)`` in the graph, which checks it when the graph runs.
- ``torch._check*`` with a condition known now: evaluated now (a false one raises).
- ``torch._C._log_api_usage_once``: usage logging, a no-op for the captured code.
- ``torch.jit.is_scripting()`` and ``is_tracing()``: False (ember neither scripts nor traces).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from . import unbacked
from .builtin_calls import handles
from .exceptions import evaluate
from .ops import NotConstant, as_const, python_value
from .symbolic import SymVar
from .values import ConstVar, TensorVar, Var

if TYPE_CHECKING:
    from .frame import Frame

_CHECKS = tuple(getattr(torch, name) for name in (
    "_check", "_check_index", "_check_value", "_check_type", "_check_not_implemented", "_check_is_size",
    "_check_with", "_check_tensor_all", "_check_tensor_all_with") if hasattr(torch, name))


def _argument(args: list[Var], kwargs: dict[str, Var], index: int, name: str) -> Var | None:
    if len(args) > index:
        return args[index]
    return kwargs.get(name)


@handles(torch._assert)
def _assert(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    condition = _argument(args, kwargs, 0, "condition")
    message = _argument(args, kwargs, 1, "message")
    if condition is None or message is None:
        frame.fail("torch._assert() needs a condition and a message")
    text = as_const(frame, message, "torch._assert's message")
    if isinstance(condition, TensorVar):
        graph = frame.state.graph
        node = graph.locate(graph.graph.call_function(torch._assert_async, (condition.node, str(text))))
        node.meta["mutates"] = True  # kept for its effect: it returns nothing
        return ConstVar(None)
    if not as_const(frame, condition, "torch._assert's condition"):
        evaluate(torch._assert, False, text)
    return ConstVar(None)


def _check(fn: object) -> object:
    def handler(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
        name = getattr(fn, "__name__", "_check")
        condition = _argument(args, kwargs, 0, "cond" if fn is not torch._check_is_size else "i")
        if condition is not None and unbacked.is_unbacked(condition):
            assert isinstance(condition, SymVar)
            return unbacked.check(frame, fn, condition)
        try:
            py_args = [python_value(a) for a in args]
            py_kwargs = {k: python_value(v) for k, v in kwargs.items()}
        except NotConstant:
            # a message given as a function made in the captured code: enough when the check holds
            if args and not isinstance(args[0], TensorVar) and as_const(frame, args[0], f"torch.{name}'s condition"):
                return ConstVar(None)
            frame.fail(f"torch.{name} with a condition that is not known at capture time")
        evaluate(fn, *py_args, **py_kwargs)
        return ConstVar(None)

    return handler


for _fn in _CHECKS:
    handles(_fn)(_check(_fn))


@handles(torch._C._log_api_usage_once)
def _log_api_usage_once(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    return ConstVar(None)


@handles(torch.jit.is_scripting, torch.jit.is_tracing)
def _not_scripting(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    return ConstVar(False)


@handles(torch._C._get_tracing_state)
def _no_tracing_state(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    return ConstVar(None)


__all__: list[str] = []
