"""Reduction lowerings: sum/mean/prod/amax/amin/argmax/argmin/any/all, var/std, softmax."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import sympy
import torch

from .. import indexing, ir
from ..virtualized import ops
from .registry import NotLowerable, aten, canonical_dims, register
from .views import squeeze, view


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype in (torch.float16, torch.bfloat16, torch.float32):
        return torch.float32
    if dtype == torch.float64:
        return torch.float64
    if dtype.is_complex:
        raise NotLowerable("complex reduction")
    return torch.int64


def reduce_keepdim(x: ir.IRNode, dims: Sequence[int], reduction_type: str, src_dtype: torch.dtype,
                   out_dtype: torch.dtype, value_fn: Callable | None = None, shared: bool = False) -> ir.Reduction:
    """Reduction of ``x`` over ``dims`` with keepdim=True sizes.

    ``value_fn(value, full_index, rindex)`` maps each loaded element (already converted to
    ``src_dtype``) to what is reduced. ``shared``: the caller keeps the result inside its own
    value (never a graph output, whose strides follow eager's), so one such reduction of the same
    ``x`` serves every caller in the graph: a layer norm's ``var`` and ``mean`` share one row sum.
    """
    if not shared or value_fn is not None:
        return _reduce_keepdim(x, dims, reduction_type, src_dtype, out_dtype, value_fn)
    seen = ir.current_graph().reductions
    key = (id(x), tuple(dims), reduction_type, src_dtype, out_dtype)
    if key not in seen or seen[key][0] is not x:
        seen[key] = (x, _reduce_keepdim(x, dims, reduction_type, src_dtype, out_dtype, None))
    return seen[key][1]


def _reduce_keepdim(x: ir.IRNode, dims: Sequence[int], reduction_type: str, src_dtype: torch.dtype,
                    out_dtype: torch.dtype, value_fn: Callable | None) -> ir.Reduction:
    size = x.get_size()
    n = len(size)
    dims = list(dims)
    out_size = [sympy.S.One if i in dims else size[i] for i in range(n)]
    rsize = [size[i] for i in dims]
    load = x.make_loader()
    in_dtype = x.get_dtype()

    def inner(idx: Sequence, ridx: Sequence) -> Any:
        full = list(idx)
        for k, d in enumerate(dims):
            full[d] = ridx[k]
        v = load(full)
        if in_dtype != src_dtype:
            v = ops.to_dtype(v, src_dtype)
        return value_fn(v, full, ridx) if value_fn else v
    split = split_point(out_size, rsize, reduction_type, ir.current_graph().device_type, outer=n - 1 not in dims)
    if split is not None:
        return split_reduction(out_size, rsize, reduction_type, inner, out_dtype, src_dtype, *split)
    return ir.Reduction(out_size, rsize, reduction_type, inner, out_dtype, src_dtype)


#: Reductions whose partial results combine by the same reduction.
SPLITTABLE = ("sum", "max", "min", "any", "all")
#: A GPU reduction is split when it has fewer rows than this and rows this long or longer;
#: its rows are then reduced in chunks of at least ``SPLIT_CHUNK`` elements.
SPLIT_ROWS, SPLIT_LENGTH, SPLIT_CHUNK = 4096, 16384, 256
#: The same for an outer reduction (the last dimension kept: a bias gradient's column sums), whose
#: programs each take a block of up to 64 neighbouring columns: split below this many columns,
#: from rows this long, into at most ``OUTER_PARTS`` partial results.
OUTER_ROWS, OUTER_LENGTH, OUTER_PARTS = 16384, 2048, 65536
#: Devices whose reductions are split (a CPU thread walks a row as fast whole).
SPLIT_DEVICES = ("cuda",)


def split_point(out_size: Sequence, rsize: Sequence, reduction_type: str, device_type: str,
                outer: bool = False) -> tuple[int, int] | None:
    """Where to cut the rows of a reduction on ``device_type`` into chunks: ``(k, f)`` cuts
    before reduction dimension ``k`` and its size into ``f`` parts, so that a row is
    ``prod(rsize[:k]) * f`` chunks; None: not split.

    A reduction over most of a tensor with few rows (batch norm's statistics: one row per
    channel, of batch x height x width elements) runs one program per row: 64 programs for
    resnet's first stage, on a GPU of 132 multiprocessors, each reading 65536 elements; and on
    a channels-last tensor each row is a strided column. Split, the chunks are the rows of a
    first reduction (up to ``SPLIT_ROWS`` of them, running over the channels fastest, which are
    consecutive in channels-last memory), and a second reduction combines them. A chunk is a
    box of the reduced dimensions, so the indices stay linear. Static sizes only.

    ``outer``: the reduced dimensions are not the last one, so a program takes a block of columns
    and walks down them (GPT-2's bias gradients: 768 columns of 8192 rows ran as 12 programs,
    0.2 ms each on the H200, where a split reduction takes a few microseconds)."""
    if reduction_type not in SPLITTABLE or device_type not in SPLIT_DEVICES:
        return None
    if not all(sympy.sympify(e).is_Integer for e in [*out_size, *rsize]):
        return None
    rows, length = int(indexing.numel(out_size)), int(indexing.numel(rsize))
    max_rows, min_length, parts = (OUTER_ROWS, OUTER_LENGTH, OUTER_PARTS) if outer else (
        SPLIT_ROWS, SPLIT_LENGTH, SPLIT_ROWS)
    if rows >= max_rows or length < min_length:
        return None
    best, best_chunks = None, 1
    lead = 1
    for k, size in enumerate(int(e) for e in rsize):
        f = 1
        while f <= size:
            chunks = lead * f
            if size % f == 0 and chunks > best_chunks and rows * chunks <= parts \
                    and length // chunks >= SPLIT_CHUNK:
                best, best_chunks = (k, f), chunks
            f *= 2
        lead *= size
    return best


def split_reduction(out_size: Sequence, rsize: Sequence, reduction_type: str, inner: Callable,
                    out_dtype: torch.dtype, src_dtype: torch.dtype, k: int, f: int) -> ir.Reduction:
    """``inner`` reduced over ``rsize`` in two steps (see :func:`split_point`): chunks into a
    ``[*rsize[:k], f, *out_size]`` buffer of partial results (in ``src_dtype``), then over them."""
    part = sympy.Integer(int(rsize[k]) // f)
    outer = [*rsize[:k], f]

    def partial(idx: Sequence, ridx: Sequence) -> Any:
        lead, q, rest = idx[:k], idx[k], idx[k + 1:]
        return inner(rest, [*lead, q * part + ridx[0], *ridx[1:]])
    parts = ir.Reduction([*outer, *out_size], [part, *rsize[k + 1:]], reduction_type, partial,
                         src_dtype, src_dtype).realize()
    load = parts.make_loader()
    return ir.Reduction(out_size, outer, reduction_type, lambda idx, ridx: load([*ridx, *idx]),
                        out_dtype, src_dtype)


def finish(node: ir.IRNode, dims: Sequence[int], keepdim: bool) -> ir.IRNode:
    return node if keepdim or not dims else squeeze(node, list(dims))


def _reduction(x: ir.IRNode, dims: Any, keepdim: bool, rtype: str, out_dtype: torch.dtype | None,
               src_dtype: torch.dtype | None = None) -> ir.IRNode:
    dims = canonical_dims(dims, len(x.get_size()))
    if not x.get_size():
        dims = []
    src = src_dtype or acc_dtype(out_dtype or x.get_dtype())
    out = out_dtype or x.get_dtype()
    red = reduce_keepdim(x, dims, rtype, src, out)
    if not dims:
        load = red.realize().make_loader()
        return ir.Pointwise(red.get_size(), out, load)
    return finish(red, dims, keepdim)


def _sum_dtype(x: ir.IRNode, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    d = x.get_dtype()
    return torch.int64 if (d == torch.bool or not (d.is_floating_point or d.is_complex)) else d


@register(aten.sum.dim_IntList, aten.sum.default)
def sum_(x: ir.IRNode, dim: Any = None, keepdim: bool = False, dtype: torch.dtype | None = None) -> ir.IRNode:
    return _reduction(x, dim, keepdim, "sum", _sum_dtype(x, dtype))


@register(aten.prod.dim_int, aten.prod.default)
def prod(x: ir.IRNode, dim: Any = None, keepdim: bool = False, dtype: torch.dtype | None = None) -> ir.IRNode:
    return _reduction(x, dim, keepdim, "prod", _sum_dtype(x, dtype))


@register(aten.mean.dim, aten.mean.default)
def mean(x: ir.IRNode, dim: Any = None, keepdim: bool = False, dtype: torch.dtype | None = None) -> ir.IRNode:
    out = dtype or x.get_dtype()
    if not out.is_floating_point:
        raise NotLowerable("integer mean")
    dims = canonical_dims(dim, len(x.get_size()))
    acc = acc_dtype(out)
    total = reduce_keepdim(x, dims, "sum", acc, acc, shared=True).realize()
    count = indexing.numel([x.get_size()[d] for d in dims])
    load = total.make_loader()
    node = ir.Pointwise(total.get_size(), out,
                        lambda idx: ops.to_dtype(ops.truediv(load(idx), _count(count, acc)), out))
    return finish(node, dims, keepdim)


def _minmax(rtype: str) -> Callable:
    def lower(x: ir.IRNode, dim: Any = None, keepdim: bool = False) -> ir.IRNode:
        return _reduction(x, dim, keepdim, rtype, x.get_dtype(), src_dtype=acc_dtype(x.get_dtype())
                          if x.get_dtype() in (torch.float16, torch.bfloat16) else x.get_dtype())
    return lower


register(aten.amax.default)(_minmax("max"))
register(aten.amin.default)(_minmax("min"))


def _bool_reduce(rtype: str) -> Callable:
    def lower(x: ir.IRNode, dim: Any = None, keepdim: bool = False) -> ir.IRNode:
        out = torch.uint8 if x.get_dtype() == torch.uint8 else torch.bool
        return _reduction(x, dim, keepdim, rtype, out, src_dtype=torch.bool)
    return lower


register(aten.any.default, aten.any.dim, aten.any.dims)(_bool_reduce("any"))
register(aten.all.default, aten.all.dim, aten.all.dims)(_bool_reduce("all"))


def _arg(rtype: str) -> Callable:
    def lower(x: ir.IRNode, dim: int | None = None, keepdim: bool = False) -> ir.IRNode:
        if dim is None:
            flat = view(x, [x.numel()])
            out = _arg(rtype)(flat, 0, False)
            return view(out, [1] * len(x.get_size())) if keepdim else out
        src = acc_dtype(x.get_dtype()) if x.get_dtype() in (torch.float16, torch.bfloat16) else x.get_dtype()
        dims = canonical_dims(dim, len(x.get_size())) if x.get_size() else []
        rsize = [x.get_size()[d] for d in dims]

        def value(v: Any, full: Sequence, ridx: Sequence) -> Any:
            return (v, ops.index_expr(indexing.linearize(ridx, rsize), torch.int64))
        red = reduce_keepdim(x, dims, rtype, src, torch.int64, value)
        return finish(red, dims, keepdim)
    return lower


register(aten.argmax.default)(_arg("argmax"))
register(aten.argmin.default)(_arg("argmin"))


@register(aten.max.dim)
def max_dim(x: ir.IRNode, dim: int, keepdim: bool = False) -> tuple:
    return _minmax("max")(x, [dim], keepdim), _arg("argmax")(x, dim, keepdim)


@register(aten.min.dim)
def min_dim(x: ir.IRNode, dim: int, keepdim: bool = False) -> tuple:
    return _minmax("min")(x, [dim], keepdim), _arg("argmin")(x, dim, keepdim)


def _var_parts(x: ir.IRNode, dims: Sequence[int], correction: Any) -> tuple[ir.IRNode, ir.IRNode, torch.dtype]:
    """(variance, mean) with keepdim sizes, in the accumulation dtype."""
    if not x.get_dtype().is_floating_point:
        raise NotLowerable("integer var")
    acc = acc_dtype(x.get_dtype())
    count = indexing.numel([x.get_size()[d] for d in dims])
    total = reduce_keepdim(x, dims, "sum", acc, acc, shared=True).realize()
    load_total = total.make_loader()

    def mean_at(full: Sequence) -> Any:
        keep = [sympy.S.Zero if i in dims else full[i] for i in range(len(full))]
        return ops.truediv(load_total(keep), _count(count, acc))

    def sq_dev(v: Any, full: Sequence, ridx: Sequence) -> Any:
        d = ops.sub(v, mean_at(full))
        return ops.mul(d, d)
    sq = reduce_keepdim(x, dims, "sum", acc, acc, sq_dev).realize()
    load_sq = sq.make_loader()
    corr = 1 if correction is None else correction
    if count.is_Integer:
        denom = sympy.sympify(max(0, int(count) - corr))
    elif isinstance(corr, int) and 0 <= corr <= 1:  # a symbolic count is at least 1
        denom = count - corr
    else:
        raise NotLowerable(f"correction {corr} of a symbolic count")
    var = ir.Pointwise(sq.get_size(), acc,
                       lambda idx: ops.truediv(load_sq(idx), _count(denom, acc)))
    mean_node = ir.Pointwise(total.get_size(), acc, lambda idx: mean_at(idx))
    return var, mean_node, acc


def _cast(node: ir.IRNode, dtype: torch.dtype) -> ir.IRNode:
    if node.get_dtype() == dtype:
        return node
    load = node.make_loader()
    return ir.Pointwise(node.get_size(), dtype, lambda idx: ops.to_dtype(load(idx), dtype))


@register(aten.var.correction, aten.var.dim)
def var(x: ir.IRNode, dim: Any = None, *, correction: Any = None, keepdim: bool = False,
        unbiased: Any = None) -> ir.IRNode:
    dims = canonical_dims(dim, len(x.get_size()))
    if unbiased is not None:
        correction = 1 if unbiased else 0
    v, _, _ = _var_parts(x, dims, correction)
    return finish(_cast(v, x.get_dtype()), dims, keepdim)


@register(aten.std.correction, aten.std.dim)
def std(x: ir.IRNode, dim: Any = None, *, correction: Any = None, keepdim: bool = False,
        unbiased: Any = None) -> ir.IRNode:
    dims = canonical_dims(dim, len(x.get_size()))
    if unbiased is not None:
        correction = 1 if unbiased else 0
    v, _, acc = _var_parts(x, dims, correction)
    load = v.make_loader()
    s = ir.Pointwise(v.get_size(), acc, lambda idx: ops.sqrt(load(idx)))
    return finish(_cast(s, x.get_dtype()), dims, keepdim)


@register(aten.var_mean.correction)
def var_mean(x: ir.IRNode, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> tuple:
    dims = canonical_dims(dim, len(x.get_size()))
    v, m, _ = _var_parts(x, dims, correction)
    return (finish(_cast(v, x.get_dtype()), dims, keepdim), finish(_cast(m, x.get_dtype()), dims, keepdim))


def _softmax_parts(x: ir.IRNode, dim: int, half_to_float: bool) -> tuple[Callable, Callable, Callable, torch.dtype]:
    n = len(x.get_size())
    dim = dim % max(n, 1)
    dims = [dim] if n else []
    comp = acc_dtype(x.get_dtype())
    if not x.get_dtype().is_floating_point:
        raise NotLowerable("integer softmax")
    out = torch.float32 if half_to_float else x.get_dtype()
    load_x = x.make_loader()
    mx = reduce_keepdim(x, dims, "max", comp, comp).realize().make_loader()

    def keep(idx: Sequence) -> list:
        return [sympy.S.Zero if i == dim else idx[i] for i in range(len(idx))] if n else []

    def shifted(idx: Sequence) -> Any:
        v = load_x(idx)
        if x.get_dtype() != comp:
            v = ops.to_dtype(v, comp)
        return ops.sub(v, mx(keep(idx)))
    total = reduce_keepdim(ir.Pointwise(x.get_size(), comp, lambda idx: ops.exp(shifted(idx))), dims,
                           "sum", comp, comp).realize().make_loader()
    return shifted, (lambda idx: total(keep(idx))), keep, out


@register(aten._softmax.default)
def softmax(x: ir.IRNode, dim: int, half_to_float: bool) -> ir.IRNode:
    shifted, total, _, out = _softmax_parts(x, dim, half_to_float)
    return ir.Pointwise(x.get_size(), out,
                        lambda idx: ops.to_dtype(ops.truediv(ops.exp(shifted(idx)), total(idx)), out))


@register(aten._log_softmax.default)
def log_softmax(x: ir.IRNode, dim: int, half_to_float: bool) -> ir.IRNode:
    shifted, total, _, out = _softmax_parts(x, dim, half_to_float)
    return ir.Pointwise(x.get_size(), out,
                        lambda idx: ops.to_dtype(ops.sub(shifted(idx), ops.log(total(idx))), out))


prims = torch.ops.prims


@register(prims.sum.default)
def prims_sum(x: ir.IRNode, dims: Sequence[int], output_dtype: torch.dtype | None = None) -> ir.IRNode:
    return sum_(x, list(dims), False, output_dtype or x.get_dtype())


@register(prims.var.default)
def prims_var(x: ir.IRNode, dims: Sequence[int], correction: float = 1.0,
              output_dtype: torch.dtype | None = None) -> ir.IRNode:
    return var(x, list(dims), correction=correction, keepdim=False)


@register(prims.amax.default)
def prims_amax(x: ir.IRNode, dims: Sequence[int]) -> ir.IRNode:
    return _minmax("max")(x, list(dims), False)


@register(prims.amin.default)
def prims_amin(x: ir.IRNode, dims: Sequence[int]) -> ir.IRNode:
    return _minmax("min")(x, list(dims), False)


def _count(count: sympy.Expr, dtype: torch.dtype) -> Any:
    """An element count as a value of ``dtype``: a constant, or computed from the size symbols."""
    if not count.free_symbols:
        return ops.constant(float(count), dtype)
    return ops.index_expr(count, dtype)
