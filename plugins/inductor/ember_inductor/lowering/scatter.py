"""Accumulating writes: the embedding's weight gradient and ``index_put(accumulate=True)``.

Each is a buffer of the result's size filled first (zeros, or a copy of ``self``), then an
``ir.Scatter`` that adds every value at its (data-dependent) index, atomically, in one Triton
kernel, as torch.compile generates them. On the GPT training step's two embeddings (H200) that
is a fraction of the GPU time of eager's ``embedding_backward_feature_kernel`` and of the
decomposition's sort-based ``index_put`` (20 launches); ``benchmarks/profile_gpu.py`` shows it.

Lowered for Triton kernels only; the C++ backend runs aten's kernels (``embedding_dense_backward``
there is several times faster than zeros and an accumulating ``index_put_``), as do deterministic algorithms (the order of atomic adds varies from run to run) and
integer or boolean values. Half-precision values are added in float32 and rounded once at the end,
as eager's kernels accumulate them.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import sympy
import torch

from .. import ir
from ..codegen.language import kernel_language
from ..virtualized import ops
from .indexing_ops import advanced_index, check_index_dtype, checked_bound
from .registry import NotLowerable, aten, expand_to, register, to_dtype_node

#: Value dtypes added atomically as they are, and those added in float32.
ATOMIC = (torch.float32, torch.float64)
WIDENED = (torch.float16, torch.bfloat16)


def _accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    if kernel_language(ir.current_graph().device_type) != "triton":
        raise NotLowerable("atomic adds are generated for Triton kernels only")
    if torch.are_deterministic_algorithms_enabled():
        raise NotLowerable("deterministic algorithms: the order of atomic adds varies")
    if dtype in ATOMIC:
        return dtype
    if dtype in WIDENED:
        return torch.float32
    raise NotLowerable(f"no atomic add of {dtype}")


def _scatter_add(initial: ir.IRNode, dtype: torch.dtype, size: Sequence, index_fn: Callable,
                 value_fn: Callable) -> ir.IRNode:
    """``initial`` (converted to the accumulation dtype) with ``value_fn(i)`` added at
    ``index_fn(i)`` for each ``i`` of ``size``, converted back to ``dtype``."""
    acc = _accumulation_dtype(dtype)
    # a buffer of its own, even where no conversion is needed: never ``initial``'s storage,
    # which may be an input
    target = ir.Pointwise(initial.get_size(), acc, to_dtype_node(initial, acc).make_loader()).realize()
    if any(sympy.sympify(s) == 0 for s in size):
        return to_dtype_node(target, dtype)  # nothing to add

    def value(idx: Sequence) -> Any:
        v = value_fn(idx)
        return v if dtype == acc else ops.to_dtype(v, acc)
    return to_dtype_node(ir.current_graph().new_scatter_buffer(target, ir.Scatter(size, index_fn, value)), dtype)


@register(aten.embedding_dense_backward.default)
def embedding_dense_backward(grad: ir.IRNode, indices: ir.IRNode, num_weights: Any, padding_idx: int,
                             scale_grad_by_freq: bool) -> ir.IRNode:
    if scale_grad_by_freq:
        raise NotLowerable("scale_grad_by_freq counts the indices first")
    check_index_dtype(indices)
    k = len(indices.get_size())
    dim = grad.get_size()[-1]
    dtype = grad.get_dtype()
    load_g, load_i = grad.make_loader(), indices.make_loader()
    bound = checked_bound(num_weights, 0, load_i, indices.get_size(), IndexError)

    def index_fn(idx: Sequence) -> list:
        return [ops.indirect_indexing(load_i(idx[:k]), bound), idx[k]]

    def value_fn(idx: Sequence) -> Any:
        g = load_g(idx)
        if padding_idx < 0:  # F.embedding passes -1 for none (a negative one is made positive)
            return g
        pad = ops.eq(load_i(idx[:k]), ops.constant(padding_idx, indices.get_dtype()))
        return ops.where(pad, ops.constant(0, dtype), g)
    zeros = ir.Pointwise([num_weights, dim], dtype, lambda idx: ops.constant(0, dtype))
    return _scatter_add(zeros, dtype, list(indices.get_size()) + [dim], index_fn, value_fn)


@register(aten.index_put.default)
def index_put(x: ir.IRNode, indices: Sequence[Any], values: ir.IRNode, accumulate: bool = False) -> ir.IRNode:
    if not accumulate:
        raise NotLowerable("index_put without accumulate: the last write of a repeated index wins")
    if all(t is None for t in indices) or values.get_dtype() != x.get_dtype():
        raise NotLowerable("index_put without an index tensor, or of another dtype")
    size, source = advanced_index(x.get_size(), indices)  # boolean masks are not lowered
    if len(values.get_size()) > len(size):
        raise NotLowerable("values of more dimensions than the indexed shape")
    load_v = expand_to(values, size).make_loader()
    return _scatter_add(x, x.get_dtype(), size, source, load_v)
