"""The attention bias CUDA's memory-efficient SDPA kernel reads: outer strides multiples of 8.

torch's ``scaled_dot_product_attention`` pads the mask that way (``preprocess_mask``) before
it calls ``_scaled_dot_product_efficient_attention``, and the kernel refuses any other layout
("attn_bias is not correctly aligned"). A bias that a generated kernel computes would get a
dense layout here (a mask over 13 keys: a stride of 13), so the graph failed on its first call
and ran with aten, then recompiled per length: a decoder's ``generate()`` with an attention
mask ran its decoding steps eagerly on the GPU. :func:`aligned_strides` are the strides torch's
inductor gives the argument: the last dimension dense, every outer stride rounded up to a multiple
of 8 elements, and a dimension the aten graph expanded (stride 0) kept expanded where the stride
inside it is already aligned, so that a mask broadcast over heads is not materialized per head
(``extern_layout.RULES`` applies them, ``extern_layout.laid_out`` computes the bias in them).
"""
from __future__ import annotations

from typing import Any, Sequence

import sympy

from .index_functions import terms
from .indexing import FloorDiv

ALIGNMENT = 8


def _round_up(n: Any) -> sympy.Expr:
    n = sympy.sympify(n)
    if n.is_Integer:
        return sympy.Integer(-(-int(n) // ALIGNMENT) * ALIGNMENT)
    return FloorDiv(n + ALIGNMENT - 1, ALIGNMENT) * ALIGNMENT


def is_multiple(n: Any, k: int) -> bool:
    """Whether ``n`` is a multiple of ``k`` for every value of its symbols: each term of its
    expanded sum has such an integer factor (``8 * ((s + 8) // 8)`` is ``8 + 8 * (s // 8)`` once
    sympy has simplified it)."""
    coeffs = terms(sympy.expand(sympy.sympify(n))).values()
    return all(c.is_Integer and int(c) % k == 0 for c in coeffs)


def _aligned(n: Any) -> bool:
    return is_multiple(n, ALIGNMENT)


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
