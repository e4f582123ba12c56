"""Symbolic sizes in the capture: the value kind for a SymInt and the Python operations on it.

A dynamic dimension of an input is a ``torch.SymInt`` of the capture's ``ShapeEnv`` (see
:mod:`ember.shapes` for which dimensions are dynamic). When the captured code reads such a size
(``x.size(0)``, ``x.shape[1]``, ``x.numel()``, ``len(x)``) it gets a :class:`SymVar`: an fx node
that computes the size at run time plus the SymInt that stands for it during the capture.
Python arithmetic and comparisons on a SymVar are recorded as ``operator.*`` nodes whose
``meta["val"]`` is the symbolic result, so that sizes given to ``view`` or ``arange`` are
computed from the inputs, never baked in. ``bool()`` of a symbolic comparison (a branch on a
size) asks the ShapeEnv, which records the relation as a guard; anything else that needs a
plain Python value (``range(n)``, a list index) specialises the symbol through the ShapeEnv,
which guards its value. A Python int input that varies between calls is a SymVar over a SymInt
placeholder (:meth:`GraphBuilder.add_symint_input`).
"""
from __future__ import annotations

import dataclasses
import functools
import operator
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from torch._guards import GuardSource, Source as TorchSource
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, free_symbols

from ..errors import Unsupported
from .dispatch import handles_truth
from .values import ConstVar, ListVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame

SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


@dataclasses.dataclass(eq=False)
class SymVar(Var):
    """A symbolic int (or float, or bool from a comparison): the node computing it at run time
    and its value during the capture."""

    node: torch.fx.Node
    value: Any  # torch.SymInt | torch.SymFloat | torch.SymBool
    source: Any = None

    def python_type(self) -> type:
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(self.value)]

    def concrete(self) -> Any:
        """The plain Python value, specialising the symbol (the ShapeEnv guards it); a value read
        from tensor data (an unbacked symbol) has none to guard: a graph break."""
        try:
            return self.python_type()(self.value)
        except GuardOnDataDependentSymNode as exc:
            raise Unsupported(f"a Python value of {self.value}, which depends on tensor data (graph break)") from exc

    def __repr__(self) -> str:
        return f"SymVar({self.node.name}, {self.value})"


@handles_truth(SymVar)
def _sym_truth(frame: "Frame", var: SymVar) -> bool:
    try:
        return bool(var.value)  # a branch on sizes: the ShapeEnv guards the relation
    except GuardOnDataDependentSymNode:
        frame.fail(f"data-dependent branch: the condition {var.value} depends on tensor data (`if x.item() > 0:`)")
        raise


@dataclasses.dataclass(eq=False)
class SliceVar(Var):
    """``a:b:c`` where a bound is symbolic (``x[:, :n]``)."""

    start: Var
    stop: Var
    step: Var

    def python_type(self) -> type:
        return slice


@dataclasses.dataclass(frozen=True)
class InputToken(TorchSource):
    """How the ShapeEnv names the ``index``-th symbolic input of a capture (``___in3___``): the
    guards it produces are expressions over these tokens, which :mod:`ember.shape_guards`
    replaces by the guard's own variables."""

    index: int

    @property
    def _name_template(self) -> str:
        return f"___in{self.index}___"

    @functools.cached_property
    def guard_source(self) -> GuardSource:
        return GuardSource.LOCAL


def is_symbolic(value: Any) -> bool:
    """A SymInt/SymFloat/SymBool that is not a constant in disguise."""
    return isinstance(value, SYM_TYPES) and bool(free_symbols(value))


def has_symbolic(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(has_symbolic(v) for v in value)
    return is_symbolic(value)


def constant_of(value: Any) -> Any:
    """A SymInt/SymFloat/SymBool without free symbols (a size the ShapeEnv specialised) as a
    plain Python value, also inside a tuple, list or torch.Size."""
    if isinstance(value, SYM_TYPES):
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(value)](value)
    if isinstance(value, (tuple, list)) and any(isinstance(v, (*SYM_TYPES, tuple, list)) for v in value):
        items = [constant_of(v) for v in value]
        if isinstance(value, torch.Size) or type(value) in (tuple, list):
            return type(value)(items)
    return value


def wrap_value(graph: torch.fx.Graph, node: torch.fx.Node, value: Any) -> Var:
    """The Var for ``value`` computed by ``node`` (a size, a tuple of sizes); constants stay
    constants, each symbolic item gets its own ``getitem`` node."""
    if is_symbolic(value):
        node.meta["val"] = node.meta["example_value"] = value
        return SymVar(node, value)
    if isinstance(value, (tuple, list)) and has_symbolic(value):
        node.meta["val"] = node.meta["example_value"] = value
        items: list[Var] = []
        for i, item in enumerate(value):
            if has_symbolic(item):
                items.append(wrap_value(graph, graph.call_function(operator.getitem, (node, i)), item))
            else:
                items.append(ConstVar(constant_of(item)))
        if isinstance(value, list):
            return ListVar(items)
        return TupleVar(items, tuple_type=torch.Size if isinstance(value, torch.Size) else tuple)
    return ConstVar(constant_of(value))


def _operand(var: Var) -> Any:
    return var.value  # a SymVar's SymInt, or a ConstVar's number (see is_operand)


def _arg(var: Var) -> Any:
    return var.node if isinstance(var, SymVar) else var.value


def record(frame: "Frame", fn: Any, args: list[Var]) -> Var:
    """``fn(*args)`` on symbolic values (``operator.add``, ``torch.sym_max``...): computed on the
    SymInts, recorded as a node when the result is symbolic."""
    try:
        result = fn(*(_operand(a) for a in args))
    except Exception as exc:  # ``n // 0``: Python raises it where the program runs, eagerly
        raise Unsupported(f"{getattr(fn, '__name__', fn)} on sizes raised {type(exc).__name__}: {exc}") from exc
    if not is_symbolic(result):
        return ConstVar(constant_of(result))
    graph = frame.state.graph.graph
    node = graph.call_function(fn, tuple(_arg(a) for a in args))
    return wrap_value(graph, node, result)


def is_operand(var: Var) -> bool:
    """A value symbolic arithmetic accepts next to a SymVar: another SymVar or a number."""
    return isinstance(var, SymVar) or (isinstance(var, ConstVar) and type(var.value) in (int, float, bool))


def sym_minmax(frame: "Frame", items: list[Var], pick: Any) -> Var | None:
    """``min``/``max`` over sizes and numbers, as ``torch.sym_min``/``sym_max`` nodes (no guard);
    None when some item is not such a value."""
    if not any(isinstance(v, SymVar) for v in items) or not all(is_operand(v) for v in items) or not items:
        return None
    fn = torch.sym_max if pick is max else torch.sym_min
    result = items[0]
    for item in items[1:]:
        result = record(frame, fn, [result, item])
    return result


def sym_int(args: list[Var], kwargs: dict) -> Var | None:
    """``int(n)`` of a symbolic int is ``n`` itself; None for other calls."""
    if len(args) == 1 and not kwargs and isinstance(args[0], SymVar) and isinstance(args[0].value, torch.SymInt):
        return args[0]
    return None


__all__ = ["InputToken", "SliceVar", "SymVar", "has_symbolic", "is_operand", "is_symbolic", "record",
           "sym_minmax", "wrap_value"]
