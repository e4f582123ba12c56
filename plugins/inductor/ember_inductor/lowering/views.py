"""View lowerings: every view is an index rewrite of its base (no copy)."""
from __future__ import annotations

from typing import Any, Sequence

import sympy
import torch

from .. import indexing, ir
from ..symbolic import to_expr, to_exprs
from .registry import NotLowerable, aten, expand_to, register

S = sympy.S


def _infer_size(size: Sequence, numel: sympy.Expr) -> list:
    size = to_exprs(size)
    if -1 in size:
        known = indexing.prod([s for s in size if s != -1])
        if known.is_Integer and numel.is_Integer:
            inferred = sympy.Integer(int(numel) // int(known) if known else 0)
        else:
            inferred = sympy.cancel(numel / known)
            if sympy.fraction(inferred)[1] != 1:
                raise NotLowerable(f"view size {numel} / {known}")
        size[size.index(-1)] = inferred
    return size


@register(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.view_copy.default)
def view(x: ir.IRNode, size: Sequence[int]) -> ir.IRNode:
    old = x.get_size()
    new = _infer_size(size, x.numel())
    if list(old) == new:
        return x

    def reindex(idx: Sequence) -> list:
        return indexing.delinearize(indexing.linearize(idx, new), old)
    return ir.View(x, new, reindex)


@register(aten.permute.default, aten.permute_copy.default)
def permute(x: ir.IRNode, dims: Sequence[int]) -> ir.IRNode:
    n = len(x.get_size())
    dims = [d % n for d in dims] if n else []
    if dims == list(range(n)):
        return x
    size = [x.get_size()[d] for d in dims]
    inv = [dims.index(i) for i in range(n)]
    return ir.View(x, size, lambda idx: [idx[inv[i]] for i in range(n)])


@register(aten.transpose.int, aten.transpose_copy.int)
def transpose(x: ir.IRNode, d0: int, d1: int) -> ir.IRNode:
    n = len(x.get_size())
    if n == 0:
        return x
    dims = list(range(n))
    d0, d1 = d0 % n, d1 % n
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute(x, dims)


@register(aten.t.default, aten.t_copy.default)
def t(x: ir.IRNode) -> ir.IRNode:
    return transpose(x, 0, 1) if len(x.get_size()) == 2 else x


@register(aten.expand.default, aten.expand_copy.default)
def expand(x: ir.IRNode, size: Sequence[int], implicit: bool = False) -> ir.IRNode:
    old = x.get_size()
    offset = len(size) - len(old)
    new = [old[i - offset] if (s == -1) else to_expr(s) for i, s in enumerate(size)]
    return expand_to(x, new)


@register(aten.unsqueeze.default, aten.unsqueeze_copy.default)
def unsqueeze(x: ir.IRNode, dim: int) -> ir.IRNode:
    size = x.get_size()
    dim = dim % (len(size) + 1)
    new = size[:dim] + [S.One] + size[dim:]
    return ir.View(x, new, lambda idx: list(idx[:dim]) + list(idx[dim + 1:]))


@register(aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze_copy.default,
          aten.squeeze_copy.dim, aten.squeeze_copy.dims)
def squeeze(x: ir.IRNode, dim: Any = None) -> ir.IRNode:
    size = x.get_size()
    n = len(size)
    if dim is None:
        dims = [i for i, s in enumerate(size) if s == 1]
    else:
        dims = [d % max(n, 1) for d in ([dim] if isinstance(dim, int) else dim)]
        dims = [d for d in dims if n and size[d] == 1]
    if not dims:
        return x
    keep = [i for i in range(n) if i not in dims]

    def reindex(idx: Sequence) -> list:
        out = [S.Zero] * n
        for k, i in enumerate(keep):
            out[i] = idx[k]
        return out
    return ir.View(x, [size[i] for i in keep], reindex)


@register(aten.slice.Tensor, aten.slice_copy.Tensor)
def slice_(x: ir.IRNode, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> ir.IRNode:
    size = x.get_size()
    n = len(size)
    dim = dim % n
    dim_size = size[dim]
    start, end = _clamped(start, dim_size, 0), _clamped(end, dim_size, dim_size)
    length = _ceil_div(end - start, step)
    if start == 0 and length == dim_size and step == 1:
        return x
    new = list(size)
    new[dim] = length

    def reindex(idx: Sequence) -> list:
        out = list(idx)
        out[dim] = idx[dim] * step + start
        return out
    return ir.View(x, new, reindex)


def _clamped(bound: Any, dim_size: sympy.Expr, default: Any) -> sympy.Expr:
    """A slice bound as torch reads it: negative from the end, clamped to ``[0, dim_size]``.
    With a symbolic size (at least 1), the bound must provably lie inside without clamping
    (else the aten op runs)."""
    if bound is None:
        return sympy.sympify(default)
    bound = to_expr(bound)
    if bound.is_Integer and dim_size.is_Integer:
        b = int(bound) + (int(dim_size) if bound < 0 else 0)
        return sympy.Integer(max(0, min(b, int(dim_size))))
    if bound.is_Integer:
        b = int(bound)
        if b >= 2 ** 62:  # "to the end"
            return dim_size
        if 0 <= b <= 1:
            return bound
        if b == -1:
            return dim_size - 1
    elif bound == dim_size or (bound.is_nonnegative and sympy.expand(dim_size - bound).is_nonnegative):
        return bound
    raise NotLowerable(f"slice bound {bound} of a dimension of size {dim_size}")


def _ceil_div(a: sympy.Expr, b: int) -> sympy.Expr:
    if a.is_Integer:
        return sympy.Integer(max(0, (int(a) + b - 1) // b))
    if b == 1:
        return a
    return indexing.FloorDiv(a + b - 1, b)


@register(aten.select.int, aten.select_copy.int)
def select(x: ir.IRNode, dim: int, index: int) -> ir.IRNode:
    size = x.get_size()
    dim = dim % len(size)
    if not size[dim].is_Integer:
        if not isinstance(index, int) or not -2 <= index < 2:
            raise NotLowerable(f"select {index} of a dimension of size {size[dim]}")
        index = size[dim] + index if index < 0 else index
    else:
        index = index % int(size[dim])
    return ir.View(x, size[:dim] + size[dim + 1:],
                   lambda idx: list(idx[:dim]) + [sympy.sympify(index)] + list(idx[dim:]))


@register(aten.split.Tensor, aten.split_copy.Tensor)
def split(x: ir.IRNode, split_size: int, dim: int = 0) -> list[ir.IRNode]:
    if not x.get_size()[dim].is_Integer:
        raise NotLowerable("split of a symbolic dimension")
    dim_size = int(x.get_size()[dim])
    sizes = [min(split_size, dim_size - s) for s in range(0, dim_size, split_size)] or [0]
    return split_with_sizes(x, sizes, dim)


@register(aten.split_with_sizes.default, aten.split_with_sizes_copy.default)
def split_with_sizes(x: ir.IRNode, split_sizes: Sequence[int], dim: int = 0) -> list[ir.IRNode]:
    out, start = [], 0
    for s in split_sizes:
        out.append(slice_(x, dim, start, start + s))
        start += s
    return out


@register(aten.unbind.int, aten.unbind_copy.int)
def unbind(x: ir.IRNode, dim: int = 0) -> list[ir.IRNode]:
    if not x.get_size()[dim].is_Integer:
        raise NotLowerable("unbind of a symbolic dimension")
    return [select(x, dim, i) for i in range(int(x.get_size()[dim]))]


@register(aten.alias.default, aten.alias_copy.default)
def alias(x: ir.IRNode) -> ir.IRNode:
    return x



@register(torch.ops.prims.broadcast_in_dim.default)
def broadcast_in_dim(x: ir.IRNode, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> ir.IRNode:
    src = x.get_size()
    dims = list(broadcast_dimensions)

    def reindex(idx: Sequence) -> list:
        return [S.Zero if src[k] == 1 else idx[d] for k, d in enumerate(dims)]
    return ir.View(x, shape, reindex)
