"""Indexing lowerings: cat, constant_pad_nd, gather, index, index_select, embedding.

Data-dependent indices become ``ops.indirect_indexing(value, bound)``: a symbol standing for a
run-time value that can appear in index expressions, checked against its ``bounds.IndexBound``
(eager's exception for an index out of range; negative ones wrapped where eager wraps them). Regions that may not be read are computed
under ``ops.masked(mask, body, other)``.
"""
from __future__ import annotations

from typing import Any, Sequence

import sympy
import torch

from .. import ir
from ..bounds import IndexBound, make_bound
from ..indexing import ModularIndexing
from ..virtualized import ops
from .registry import NotLowerable, aten, broadcast_shapes, expand_to, register

S = sympy.S


def mask_and(a: Any, b: Any) -> Any:
    """The logical and of two boolean ops values, either of which may be None (always true)."""
    return b if a is None else a if b is None else ops.logical_and(a, b)


def _in_range(i: Any, lo: Any, hi: Any) -> Any:
    """Boolean ops value for ``lo <= i < hi`` (None when always true); the bounds may be
    expressions of the size symbols."""
    mask = None
    if sympy.sympify(lo).is_positive is not False:
        mask = ops.ge(ops.index_expr(i, torch.int64), _size_value(lo))
    mask = mask_and(mask, ops.lt(ops.index_expr(i, torch.int64), _size_value(hi)))
    return mask


def _size_value(value: Any) -> Any:
    value = sympy.sympify(value)
    return ops.constant(int(value), torch.int64) if value.is_Integer else ops.index_expr(value, torch.int64)


def _strided(t: ir.IRNode) -> bool:
    """Whether ``t`` reads a buffer at a linear index (no division to fold)."""
    if isinstance(t, (ir.Buffer, ir.ReinterpretView)) or getattr(t, "_realized", None) is not None:
        return True
    return isinstance(t, ir.View) and t.as_strided() is not None


@register(aten.cat.default)
def cat(tensors: Sequence[ir.IRNode], dim: int = 0) -> ir.IRNode:
    tensors = [t for t in tensors if not (len(t.get_size()) == 1 and t.get_size()[0] == 0)]
    if not tensors:
        raise NotLowerable("empty cat")
    n = len(tensors[0].get_size())
    dim = dim % n
    dtype = tensors[0].get_dtype()
    if any(t.get_dtype() != dtype for t in tensors):
        raise NotLowerable("cat of mixed dtypes")
    tensors = [t for t in tensors if t.get_size()[dim] != 0] or tensors[:1]  # add nothing
    if len(tensors) == 1:
        return ir.Pointwise(tensors[0].get_size(), dtype, tensors[0].make_loader())
    offsets, total = [], 0
    for t in tensors:
        offsets.append(total)
        total += t.get_size()[dim]
    size = list(tensors[0].get_size())
    size[dim] = sympy.sympify(total)
    loaders = [t.make_loader() for t in tensors]

    def inner(idx: Sequence) -> Any:
        result = None
        for k in reversed(range(len(tensors))):
            lo, hi = offsets[k], offsets[k] + tensors[k].get_size()[dim]
            shifted = list(idx)
            # idx - lo, written as a modulus so that the index simplifier knows it lies in
            # [0, hi - lo): equal where this input's load is not masked off, and it lets the
            # divisions of the input's view fold ((384*a + MI) // 384 is a). Only for an input
            # read through such a view: into a buffer's linear index the modulus would be one
            # more run-time division per element and input (densenet's cats have up to 25
            # inputs), nor for a symbolic length
            size = sympy.sympify(hi - lo)
            fold = size.is_Integer and not _strided(tensors[k])
            shifted[dim] = ModularIndexing(idx[dim] - lo, 1, size) if fold else idx[dim] - lo
            load = loaders[k]
            if result is None:
                result = load(shifted) if k == 0 else ops.masked(
                    _in_range(idx[dim], lo, hi), lambda s=shifted, ld=load: ld(s), 0)
                continue
            mask = _in_range(idx[dim], lo, hi)
            result = ops.where(mask, ops.masked(mask, lambda s=shifted, ld=load: ld(s), 0), result)
        return result
    return ir.Pointwise(size, dtype, inner)


@register(aten.constant_pad_nd.default)
def constant_pad_nd(x: ir.IRNode, pad: Sequence[int], value: Any = 0) -> ir.IRNode:
    size = list(x.get_size())
    n = len(size)
    lo = [0] * n
    new = list(size)
    for k in range(len(pad) // 2):
        d = n - 1 - k
        lo[d] = pad[2 * k]
        if not size[d].is_Integer and (pad[2 * k] < 0 or pad[2 * k + 1] < 0):
            raise NotLowerable("negative padding of a symbolic dimension")
        new[d] = size[d] + pad[2 * k] + pad[2 * k + 1]
    load = x.make_loader()
    dtype = x.get_dtype()

    def inner(idx: Sequence) -> Any:
        mask = None
        src = list(idx)
        for d in range(n):
            if lo[d] == 0 and new[d] == size[d]:
                continue
            src[d] = idx[d] - lo[d]
            mask = mask_and(mask, _in_range(idx[d], lo[d], lo[d] + size[d]))
        if mask is None:
            return load(src)
        return ops.where(mask, ops.masked(mask, lambda: load(src), value), ops.constant(value, dtype))
    return ir.Pointwise(new, dtype, inner)


def check_index_dtype(t: ir.IRNode) -> None:
    if t.get_dtype() not in (torch.int64, torch.int32):
        raise NotLowerable("index tensor must be int64/int32")


def checked_bound(size: Any, dim: int, index_loader: Any, index_size: Sequence, error: type[Exception],
           wrap_negative: bool = False) -> IndexBound:
    """The checked bound of an indirect index (eager's error for one out of range)."""
    bound = make_bound(size, dim, index_loader, index_size, error, wrap_negative)
    if bound.check and bound.size == 0:
        raise NotLowerable("indirect index into an empty dimension")  # no element to read instead
    return bound


@register(aten.gather.default)
def gather(x: ir.IRNode, dim: int, index: ir.IRNode, sparse_grad: bool = False) -> ir.IRNode:
    check_index_dtype(index)
    n = len(x.get_size())
    dim = dim % max(n, 1)
    load_x, load_i = x.make_loader(), index.make_loader()
    bound = checked_bound(x.get_size()[dim], dim, load_i, index.get_size(), RuntimeError)

    def inner(idx: Sequence) -> Any:
        src = list(idx)
        src[dim] = ops.indirect_indexing(load_i(idx), bound)
        return load_x(src)
    return ir.Pointwise(index.get_size(), x.get_dtype(), inner)


@register(aten.scatter.value, aten.scatter.src)
def scatter(x: ir.IRNode, dim: int, index: ir.IRNode, value: Any) -> ir.IRNode:
    """``x.scatter(dim, index, value)`` with one index per line along ``dim`` (nll_loss's gradient:
    a one-hot row of -1 per target word) as a pointwise kernel: an element takes ``value`` where
    its position along ``dim`` is the line's index, so it fuses with what reads it instead of a
    filled buffer the size of the logits and aten's scatter into it. Other shapes: aten's."""
    check_index_dtype(index)
    size, isize = x.get_size(), index.get_size()
    n = len(size)
    dim = dim % max(n, 1)
    if n == 0 or len(isize) != n or isize[dim] != 1 or any(isize[d] != size[d] for d in range(n) if d != dim):
        raise NotLowerable("scatter with several indices per line, or an index smaller than the tensor")
    dtype = x.get_dtype()
    load_x, load_i = x.make_loader(), index.make_loader()
    bound = checked_bound(size[dim], dim, load_i, isize, RuntimeError)
    if isinstance(value, ir.IRNode):
        load_v = value.make_loader()
        new_value = lambda idx: ops.to_dtype(load_v([*idx[:dim], 0, *idx[dim + 1:]]), dtype)  # noqa: E731
    else:
        new_value = lambda idx: ops.constant(value, dtype)  # noqa: E731

    def inner(idx: Sequence) -> Any:
        line = [*idx[:dim], sympy.S.Zero, *idx[dim + 1:]]
        target = ops.index_expr(ops.indirect_indexing(load_i(line), bound), torch.int64)
        hit = ops.eq(ops.index_expr(idx[dim], torch.int64), target)
        return ops.where(hit, new_value(idx), load_x(idx))
    return ir.Pointwise(size, dtype, inner)


@register(aten.index_select.default)
def index_select(x: ir.IRNode, dim: int, index: ir.IRNode) -> ir.IRNode:
    check_index_dtype(index)
    n = len(x.get_size())
    dim = dim % max(n, 1)
    load_x, load_i = x.make_loader(), index.make_loader()
    size = list(x.get_size())
    size[dim] = index.get_size()[0] if index.get_size() else S.One
    bound = checked_bound(x.get_size()[dim], dim, load_i, index.get_size(), IndexError)

    def inner(idx: Sequence) -> Any:
        src = list(idx)
        src[dim] = ops.indirect_indexing(load_i([idx[dim]] if index.get_size() else []), bound)
        return load_x(src)
    return ir.Pointwise(size, x.get_dtype(), inner)


@register(aten.embedding.default)
def embedding(weight: ir.IRNode, indices: ir.IRNode, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> ir.IRNode:
    check_index_dtype(indices)
    load_w, load_i = weight.make_loader(), indices.make_loader()
    k = len(indices.get_size())
    bound = checked_bound(weight.get_size()[0], 0, load_i, indices.get_size(), IndexError)

    def inner(idx: Sequence) -> Any:
        row = ops.indirect_indexing(load_i(idx[:k]), bound)
        return load_w([row, idx[k]])
    return ir.Pointwise(list(indices.get_size()) + [weight.get_size()[1]], weight.get_dtype(), inner)


def advanced_index(size: Sequence, indices: Sequence[Any]) -> tuple[list, Any]:
    """For ``x[indices]`` (aten.index's, adjacent advanced indices) with ``x`` of ``size``: the
    result's size and a function of the result's index giving ``x``'s (indirect) index."""
    positions = [i for i, t in enumerate(indices) if t is not None]
    for i in positions:
        if not isinstance(indices[i], ir.IRNode):
            raise NotLowerable("index with a non-tensor")
        check_index_dtype(indices[i])
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise NotLowerable("non-adjacent advanced indices")
    bshape = broadcast_shapes(*[indices[i].get_size() for i in positions])
    loaders = [expand_to(indices[i], bshape).make_loader() for i in positions]
    first = positions[0]
    size = list(size)
    out_size = size[:first] + list(bshape) + size[positions[-1] + 1:]
    nb = len(bshape)
    bounds = [checked_bound(size[pos], pos, loaders[k], bshape, IndexError, wrap_negative=True)
              for k, pos in enumerate(positions)]

    def source(idx: Sequence) -> list:
        bidx = list(idx[first:first + nb])
        src = list(idx[:first])
        for k, pos in enumerate(positions):
            src.append(ops.indirect_indexing(loaders[k](bidx), bounds[k]))
        return src + list(idx[first + nb:])
    return out_size, source


@register(aten.index.Tensor)
def index(x: ir.IRNode, indices: Sequence[Any]) -> ir.IRNode:
    if all(t is None for t in indices):
        return x
    out_size, source = advanced_index(x.get_size(), indices)
    load_x = x.make_loader()
    return ir.Pointwise(out_size, x.get_dtype(), lambda idx: load_x(source(idx)))
