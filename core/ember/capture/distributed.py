"""torch.distributed's collectives in captured code, as graph ops.

Functional collectives (``torch.distributed._functional_collectives.all_reduce`` and friends)
are Python code around torch ops (``torch.ops._c10d_functional.*``): they are inlined, with
their process-group helpers evaluated at capture time (a group becomes its name, a constant of
the graph) and ``_are_we_tracing()`` True; c10d's queries of a group (``get_rank``,
``get_world_size``, ``group.size()``) are constants too, so the collective and its ``wait_tensor`` are graph
ops, as under torch.compile. ``dist.all_reduce(t)`` (in place, no ``async_op``) is recorded as
the functional all-reduce, its wait and a copy back into ``t``; with ``async_op=True`` (a
``Work`` handle a graph cannot hold) it is a graph break and runs as it is.

The functions are recognised by module and name, so ember never imports
``torch.distributed._functional_collectives`` itself.
"""
from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any, Callable

import torch

from .constants import NotConstant, lift, python_value
from .exceptions import evaluate
from .values import ConstVar, TensorVar, Var

if TYPE_CHECKING:
    from .frame import Frame

Handler = Callable[["Frame", list, dict], Var]

_FUNCOL = "torch.distributed._functional_collectives"
#: funcol's helpers that turn a group argument into a group name, run at capture time
_GROUP_HELPERS = frozenset({"_resolve_group", "_group_or_group_name", "_resolve_group_name", "_expand_group"})
_C10D = "torch.distributed.distributed_c10d"
#: c10d's queries of the process groups, fixed for a group's life: evaluated at capture time
_GROUP_QUERIES = frozenset({"get_rank", "get_world_size", "get_process_group_ranks", "is_initialized",
                            "_get_group_size_by_name", "_resolve_process_group", "_get_default_group",
                            "_resolve_group_name_by_ranks_and_tag"})
_PROCESS_GROUP_QUERIES = frozenset({"size", "rank", "name", "group_name"})


def _constants(frame: "Frame", fn: Any, args: list, kwargs: dict) -> tuple[list, dict]:
    try:
        return [python_value(a) for a in args], {k: python_value(v) for k, v in kwargs.items()}
    except NotConstant:
        frame.fail(f"{fn.__name__} called with tensors or values known only when the graph runs")
        raise AssertionError


def _at_capture(fn: Any) -> Handler:
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        py_args, py_kwargs = _constants(frame, fn, args, kwargs)
        return lift(evaluate(fn, *py_args, **py_kwargs))

    return handler


def _tracing(frame: "Frame", args: list, kwargs: dict) -> Var:
    return ConstVar(True)


def _reduce_op_names() -> dict[Any, str]:
    ops = torch.distributed.ReduceOp
    return {ops.SUM: "sum", ops.AVG: "avg", ops.PRODUCT: "product", ops.MIN: "min", ops.MAX: "max"}


def _all_reduce(frame: "Frame", args: list, kwargs: dict) -> Var:
    """``dist.all_reduce(tensor, op, group, async_op)`` on a tensor of the graph."""
    dist = torch.distributed
    bound = inspect.signature(dist.all_reduce).bind(*args, **kwargs)
    bound.apply_defaults()
    tensor = bound.arguments["tensor"]
    if not isinstance(tensor, TensorVar):
        frame.fail("dist.all_reduce of a value that is not a tensor of the graph")
    given = {k: v if isinstance(v, Var) else ConstVar(v) for k, v in bound.arguments.items() if k != "tensor"}
    _, options = _constants(frame, dist.all_reduce, [], given)
    if options["async_op"]:
        frame.fail("dist.all_reduce(async_op=True) returns a Work handle, which a graph cannot hold")
    op = _reduce_op_names().get(options["op"])
    if op is None:
        frame.fail(f"dist.all_reduce with op={options['op']!r}")
    group = options["group"] if options["group"] is not None else dist.group.WORLD
    graph = frame.state.graph
    functional = torch.ops._c10d_functional
    reduced = graph.call("call_function", functional.all_reduce.default,
                         (tensor, ConstVar(op), ConstVar(group.group_name)), {})
    reduced = graph.call("call_function", functional.wait_tensor.default, (reduced,), {})
    graph.call("call_method", "copy_", (tensor, reduced), {})
    return ConstVar(None)


def collective_handler(value: Any) -> Handler | None:
    """What calling ``value`` does in captured code when it is a collective of torch.distributed
    or one of its helpers (see the module's docstring); None for anything else."""
    if isinstance(value, types.FunctionType) and value.__module__ == _FUNCOL:
        if value.__name__ == "_are_we_tracing":
            return _tracing
        if value.__name__ in _GROUP_HELPERS:
            return _at_capture(value)
        return None
    if not torch.distributed.is_available():
        return None
    if isinstance(value, types.FunctionType) and value.__module__ == _C10D and value.__name__ in _GROUP_QUERIES:
        return _at_capture(value)
    if isinstance(value, types.BuiltinMethodType) and isinstance(value.__self__, torch.distributed.ProcessGroup) \
            and value.__name__ in _PROCESS_GROUP_QUERIES:
        return _at_capture(value)
    if value is torch.distributed.all_reduce:
        return _all_reduce
    return None


__all__ = ["collective_handler"]
