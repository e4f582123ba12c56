"""Data-dependent scalars in the graph: ``.item()``, ``.tolist()`` and ``torch.tensor`` of them.

With ``ember.config.capture_scalar_outputs`` on, ``t.item()`` is a graph node whose value during
the capture is an *unbacked* symbol of the ShapeEnv (``u0``: a SymInt, SymFloat or SymBool with
no example value), so arithmetic on it and sizes made from it (``torch.zeros(n)``,
``torch.arange(n)``) stay in the graph and are read at run time. ``t.tolist()`` is one
``item()`` per element, ``int(t)``/``float(t)``/``bool(t)`` its ``item()`` converted. A branch on such a value cannot be guarded (nothing is known about
it): it breaks the graph (see ``symbolic``). ``torch._check(cond)`` on it records the fact in
the ShapeEnv (so ``torch._check(n >= 0)`` lets ``n`` be a size) and keeps the check in the graph.
With ``ember.config.capture_dynamic_output_shape_ops`` on, ops such as ``nonzero`` give tensors
of unbacked sizes (the ShapeEnv allows them, see ``graph``); nothing else is needed here.

``torch.tensor(data)`` whose data holds tensors or symbolic values is ``torch._refs.tensor``, a
composite of torch ops that reads those values in the graph, as torch.compile does.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from .. import config
from .symbolic import SymVar, record
from .values import ConstVar, DictVar, ListVar, TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame

#: tensor methods that read the data as Python scalars, captured when the setting is on
SCALAR_METHODS = frozenset({"item", "tolist"})
_INTEGRAL = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool)


def captures(name: str) -> bool:
    """Whether ``Tensor.<name>`` stays in the graph as unbacked scalars (the setting is on)."""
    return name in SCALAR_METHODS and config.capture_scalar_outputs


def is_unbacked(var: Var) -> bool:
    """A symbolic value that depends on tensor data (an unbacked symbol is among its symbols)."""
    return isinstance(var, SymVar) and bool(free_unbacked_symbols(var.value))


def tolist(frame: "Frame", tensor: TensorVar) -> Var:
    """``t.tolist()``: nested lists of one ``item()`` node per element (static sizes only)."""
    fake = tensor.fake
    if fake.dtype not in _INTEGRAL:
        frame.fail(f"Tensor.tolist() of a {fake.dtype} tensor (torch.compile captures integer tensors only)")
    if any(not isinstance(d, int) for d in fake.shape):
        frame.fail("Tensor.tolist() of a tensor whose size is symbolic")
    graph = frame.state.graph
    if fake.dim() == 0:
        return graph.call("call_method", "item", (tensor,), {})
    items = []
    for i in range(fake.shape[0]):
        row = graph.call("call_function", operator.getitem, (tensor, ConstVar(i)), {})
        assert isinstance(row, TensorVar)
        items.append(tolist(frame, row))
    return ListVar(items)


#: ``int(t)``, ``float(t)``, ``bool(t)`` of a one-element tensor: its ``item()``, then this
_CONVERSIONS = {int: torch.sym_int, float: torch.sym_float, bool: lambda v: v != 0}


def scalar_of(frame: "Frame", cls: type, tensor: TensorVar) -> Var:
    """``cls(t)`` (int, float or bool) of a tensor when ``item()`` is captured: the item,
    converted on the symbols as Python converts the number (``bool(t)`` is ``t.item() != 0``)."""
    item = frame.state.graph.call("call_method", "item", (tensor,), {})
    if not isinstance(item, SymVar) or item.python_type() is cls:
        return item
    return record(frame, _CONVERSIONS[cls], [item])


def _holds_graph_value(var: Var) -> bool:
    if isinstance(var, (TensorVar, SymVar)):
        return True
    if isinstance(var, (TupleVar, ListVar)):
        return any(_holds_graph_value(v) for v in var.items)
    if isinstance(var, DictVar):
        return any(_holds_graph_value(v) for v in var.items.values())
    return False


def tensor_ctor(frame: "Frame", fn: Any, args: list[Var], kwargs: dict[str, Var]) -> Var | None:
    """``torch.tensor(data)`` with tensors or symbolic values inside ``data``: the composite
    ``torch._refs.tensor``; None for any other call."""
    if fn is not torch.tensor:
        return None
    data = args[0] if args else kwargs.get("data")
    if data is None or isinstance(data, TensorVar) or not _holds_graph_value(data):
        return None
    return frame.state.graph.call("call_function", torch._refs.tensor, tuple(args), kwargs)


def check(frame: "Frame", fn: Any, condition: SymVar) -> Var:
    """``torch._check(cond)`` on data-dependent values: the fact is recorded for the rest of the
    capture, and the graph checks it when it runs (eager raises there too)."""
    value = condition.value
    if fn is torch._check_is_size:
        torch._check_is_size(value)
        checked = torch.sym_not(value < 0) if isinstance(value, torch.SymInt) else value
    else:
        fn(value)
        checked = value
    graph = frame.state.graph
    if not isinstance(checked, torch.SymBool) or not free_unbacked_symbols(checked):
        return ConstVar(None)
    node = condition.node
    if checked is not value:
        node = graph.graph.call_function(operator.ge, (condition.node, 0))
        node.meta["val"] = node.meta["example_value"] = torch.sym_not(value < 0)
    assert_node = graph.locate(graph.graph.call_function(
        torch.ops.aten._assert_scalar.default, (node, f"torch.{getattr(fn, '__name__', '_check')} failed")))
    assert_node.meta["mutates"] = True  # kept for its effect: it returns nothing
    return ConstVar(None)


__all__ = ["SCALAR_METHODS", "captures", "check", "is_unbacked", "scalar_of", "tensor_ctor", "tolist"]
