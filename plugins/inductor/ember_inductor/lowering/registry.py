"""The lowering table (aten op -> function building IR) and helpers shared by the lowerings.

A lowering receives IR nodes for tensor arguments and Python values for the rest, and returns
an IR node (or a tuple of them). Raising :class:`NotLowerable` makes the graph fall back to the
aten kernel for that node.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import sympy
import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from .. import ir
from ..virtualized import ops

aten = torch.ops.aten
LOWERINGS: dict[Any, Callable] = {}
Kind = ELEMENTWISE_TYPE_PROMOTION_KIND


#: Ops whose lowering reads each element of some inputs many times (a pooling window's): the
#: positions of those inputs, which the graph computes into a buffer first (in the layout eager
#: gives them) when they are lazy, rather than recomputing them at every read.
REALIZED_INPUTS: dict[Any, tuple[int, ...]] = {}


class NotLowerable(Exception):
    """This call cannot be lowered; run the aten kernel instead."""


def register(*targets: Any) -> Callable[[Callable], Callable]:
    """Register ``fn`` for op overloads, or for every overload of an overload packet."""
    def deco(fn: Callable) -> Callable:
        for t in targets:
            if isinstance(t, torch._ops.OpOverloadPacket):
                for name in t.overloads():
                    LOWERINGS[getattr(t, name)] = fn
            else:
                LOWERINGS[t] = fn
        return fn
    return deco


def is_ir(x: Any) -> bool:
    return isinstance(x, ir.IRNode)


def dtype_of(x: Any) -> torch.dtype:
    if is_ir(x):
        return x.get_dtype()
    if isinstance(x, bool):
        return torch.bool
    if isinstance(x, int):
        return torch.int64
    if isinstance(x, float):
        return torch.float32
    if isinstance(x, sympy.Expr) and x.is_integer:  # a size computed from the symbols
        return torch.int64
    if isinstance(x, sympy.Expr) and x.is_real:  # a float computed from them (``TrueDiv``)
        return torch.float32
    raise NotLowerable(f"unsupported argument {type(x).__name__}")


def promote(args: Sequence[Any], kind: Kind) -> tuple[torch.dtype, torch.dtype]:
    """(computation dtype, result dtype) of an elementwise op, as torch computes them."""
    metas = []
    for a in args:
        if is_ir(a):
            # promotion depends on the rank (0-d tensors count as scalars), never on the sizes
            metas.append(torch.empty([1] * len(a.get_size()), dtype=a.get_dtype(), device="meta"))
        elif isinstance(a, (bool, int, float)):
            metas.append(a)
        elif isinstance(a, sympy.Expr) and a.is_integer:  # a symbolic int: promotes as an int
            metas.append(2)
        elif isinstance(a, sympy.Expr) and a.is_real:  # a symbolic float: as a Python float
            metas.append(2.0)
        else:
            raise NotLowerable(f"unsupported argument {type(a).__name__}")
    return elementwise_dtypes(*metas, type_promotion_kind=kind)


def broadcast_shapes(*shapes: Sequence) -> list:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        size = sympy.Integer(1)
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            d = sympy.sympify(s[j])
            if d != 1:
                if size != 1 and size != d:
                    raise NotLowerable("shapes do not broadcast")
                size = d
        out.append(size)
    return out


def expand_to(x: ir.IRNode, shape: Sequence) -> ir.IRNode:
    """Broadcast ``x`` to ``shape`` as an index rewrite."""
    size = x.get_size()
    if list(size) == list(shape):
        return x
    offset = len(shape) - len(size)
    src = list(size)

    def reindex(idx: Sequence) -> list:
        return [sympy.S.Zero if src[i] == 1 else idx[i + offset] for i in range(len(src))]
    return ir.View(x, shape, reindex)


def loader_for(x: Any, shape: Sequence, dtype: torch.dtype) -> Callable:
    """Loader of ``x`` broadcast to ``shape`` and converted to ``dtype`` (scalars become constants)."""
    if is_ir(x):
        load = expand_to(x, shape).make_loader()
        if x.get_dtype() == dtype:
            return load
        return lambda idx: ops.to_dtype(load(idx), dtype)
    value = x
    if isinstance(value, sympy.Expr) and value.free_symbols:
        return lambda idx: ops.index_expr(value, dtype)
    return lambda idx: ops.constant(value, dtype)


def to_dtype_node(x: ir.IRNode, dtype: torch.dtype) -> ir.IRNode:
    if x.get_dtype() == dtype:
        return x
    load = x.make_loader()
    return ir.Pointwise(x.get_size(), dtype, lambda idx: ops.to_dtype(load(idx), dtype))


def canonical_dims(dims: Any, ndim: int) -> list[int]:
    if dims is None:
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) == 0:
        return list(range(ndim))
    return sorted({d % max(ndim, 1) for d in dims})


def check_device(device: Any) -> None:
    """Creation ops and copies are lowered only onto the device the kernels are generated for."""
    if device is not None and torch.device(device).type != ir.current_graph().device_type:
        raise NotLowerable(f"tensor on {device}")


def constant_node(value: Any, size: Sequence, dtype: torch.dtype) -> ir.Pointwise:
    """``size`` elements of ``value``: a number, or an int expression of size symbols (read at run time)."""
    if isinstance(value, sympy.Basic) and value.free_symbols:
        if not isinstance(value, sympy.Expr) or value.is_integer is False:  # a condition, a float from data
            raise NotLowerable(f"a fill value {value}")
        return ir.Pointwise(size, dtype, lambda idx: ops.index_expr(value, dtype))
    return ir.Pointwise(size, dtype, lambda idx: ops.constant(value, dtype))
