"""The attention bias CUDA's memory-efficient SDPA kernel reads: outer strides multiples of 8.

torch's ``scaled_dot_product_attention`` pads the mask that way (``preprocess_mask``) before
it calls ``_scaled_dot_product_efficient_attention``, and the kernel refuses any other layout
("attn_bias is not correctly aligned"). A bias that a generated kernel computes would get a
dense layout here (a mask over 13 keys: a stride of 13), so the graph failed on its first call
and ran with aten, then recompiled per length: a decoder's ``generate()`` with an attention
mask ran its decoding steps eagerly on the GPU. :func:`aligned_bias` lays the argument out as
torch's inductor does: the last dimension dense, every outer stride rounded up to a multiple of
8 elements, and a dimension the aten graph expanded (stride 0) kept expanded where the stride
inside it is already aligned, so that a mask broadcast over heads is not materialized per head.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import sympy
import torch

from . import ir
from .index_functions import terms
from .indexing import FloorDiv

aten = torch.ops.aten

#: Extern ops with such a bias, and the bias's position among their arguments.
BIAS_ARG = {aten._scaled_dot_product_efficient_attention.default: 3,
            aten._scaled_dot_product_efficient_attention_backward.default: 4}
ALIGNMENT = 8


def _round_up(n: Any) -> sympy.Expr:
    n = sympy.sympify(n)
    if n.is_Integer:
        return sympy.Integer(-(-int(n) // ALIGNMENT) * ALIGNMENT)
    return FloorDiv(n + ALIGNMENT - 1, ALIGNMENT) * ALIGNMENT


def _aligned(n: Any) -> bool:
    """Whether ``n`` is a multiple of ``ALIGNMENT`` for every value of its symbols: each term of
    its expanded sum has such an integer factor (``8 * ((s + 8) // 8)`` is ``8 + 8 * (s // 8)``
    once sympy has simplified it)."""
    coeffs = terms(sympy.expand(sympy.sympify(n))).values()
    return all(c.is_Integer and int(c) % ALIGNMENT == 0 for c in coeffs)


def aligned_strides(size: Sequence[Any], expanded: Sequence[bool]) -> list[sympy.Expr]:
    """Strides of a 3-d or 4-d bias of ``size``: last one 1, each outer one the next stride
    times the next size rounded up to a multiple of ``ALIGNMENT``, or 0 for an ``expanded``
    dimension whose inner stride is already aligned."""
    n = len(size)
    strides: list[sympy.Expr] = [sympy.S.One] * n
    running = sympy.S.One
    for i in range(n - 2, -1, -1):
        if strides[i + 1] != 0:
            running = running * sympy.sympify(size[i + 1])
        if expanded[i] and _aligned(strides[i + 1]):
            strides[i] = sympy.S.Zero
            continue
        running = running if _aligned(running) else _round_up(running)
        strides[i] = running
    return strides


def aligned_bias(value: ir.IRNode, traced: Any, new_buffer: Callable[[ir.Pointwise, list], ir.Buffer]
                 ) -> ir.IRNode:
    """``value`` (the bias argument) in the aligned layout: as it is when it already has it,
    else computed into a new buffer (``new_buffer(data, strides)``, strides with gaps) and
    passed as a view with the expanded dimensions' zero strides."""
    size = list(value.get_size())
    if len(size) not in (3, 4):
        return value.as_tensor_arg()
    traced_strides = traced.stride() if isinstance(traced, torch.Tensor) else (None,) * len(size)
    expanded = [st == 0 and s != 1 for st, s in zip(traced_strides, size)]
    strides = aligned_strides(size, expanded)
    if isinstance(value, (ir.Buffer, ir.ReinterpretView)):
        layout = value.layout
        if all(sympy.sympify(a) == b for s, a, b in zip(size, layout.stride, strides) if s != 1) \
                and _aligned(layout.offset):
            return value.as_tensor_arg()
    kept = [e and st == 0 for e, st in zip(expanded, strides)]  # broadcast dimensions left at stride 0
    compact = [sympy.S.One if k else sympy.sympify(s) for s, k in zip(size, kept)]
    load = value.make_loader()

    def inner(idx: Sequence[Any]) -> Any:
        return load([sympy.S.Zero if k else i for i, k in zip(idx, kept)])
    buf = new_buffer(ir.Pointwise(compact, value.get_dtype(), inner), strides)
    if not any(kept):
        return buf
    return ir.ReinterpretView(buf, ir.Layout(size, strides, value.get_dtype(), 0))
