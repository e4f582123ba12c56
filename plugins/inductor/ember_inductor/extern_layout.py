"""The layout contract of extern (aten) kernels: each argument in the strides eager hands it, and
in the layout its kernel needs where that asks for more.

Eager's strides are the ones the aten graph's fake tensors recorded: tracing ran eager's own
composite code (``scaled_dot_product_attention`` pads the attention bias to rows of 8 elements
and slices it back; an NHWC convolution gets NHWC input). Aten kernels read their inputs assuming
such layouts (CUDA's memory-efficient attention refuses a bias whose rows are not aligned), and
the strides of their outputs, which the wrapper is generated for, follow their inputs'.
:func:`laid_out` gives a value given strides: as it is when it has them; else the value itself
computed in them when it is still lazy; else copied into a new buffer. Strides with gaps (a
padded bias) are a buffer's strides like dense ones; dimensions of stride 0 (a mask broadcast over
heads) stay broadcast over a compact buffer. Strides whose dimensions overlap otherwise are no
buffer's layout: such a value is handed as it is.

``RULES`` holds what kernels need beyond eager's strides, per op and argument (a position, or a
keyword's name): the strides a rule returns replace the traced ones. Graph outputs get their
traced strides too (``GraphLowering._output_value``): a tensor the forward saves for the backward
must reach the backward graph in the strides that graph was compiled for, the joint trace's.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import sympy
import torch

from . import indexing, ir
from .attention_bias import ALIGNMENT, aligned_strides, is_multiple
from .symbolic import hint

aten = torch.ops.aten

@dataclasses.dataclass(frozen=True)
class Rule:
    """What a kernel needs of one argument: ``strides(size, traced strides)``, and a storage
    offset that is a multiple of ``offset_multiple`` elements."""

    strides: Callable[[list, list], list]
    offset_multiple: int = 1


def _dense_last_dim(size: list, stride: list) -> list:
    """Attention kernels read rows of their inputs as contiguous vectors."""
    if size and size[-1] != 1 and stride[-1] != 1:
        return indexing.contiguous_strides(size)
    return stride


def _aligned_bias(size: list, stride: list) -> list:
    """CUDA memory-efficient attention's bias: rows aligned (``attention_bias``)."""
    if len(size) not in (3, 4):
        return _dense_last_dim(size, stride)
    return aligned_strides(size, [st == 0 and s != 1 for s, st in zip(size, stride)])


ROWS = Rule(_dense_last_dim)
ALIGNED_BIAS = Rule(_aligned_bias, ALIGNMENT)


def _rows(*positions: Any, bias: Any = None, bias_rule: Rule = ALIGNED_BIAS) -> dict[Any, Rule]:
    table = {p: ROWS for p in positions}
    if bias is not None:
        table[bias] = bias_rule
    return table


RULES: dict[Any, dict[Any, Rule]] = {
    aten._scaled_dot_product_efficient_attention.default: _rows(0, 1, 2, bias=3),
    aten._scaled_dot_product_efficient_attention_backward.default: _rows(0, 1, 2, 3, 5, bias=4),
    aten._scaled_dot_product_flash_attention.default: _rows(0, 1, 2),
    aten._scaled_dot_product_flash_attention_backward.default: _rows(0, 1, 2, 3, 4),
    aten._scaled_dot_product_cudnn_attention.default: _rows(0, 1, 2, bias=3, bias_rule=ROWS),
    aten._scaled_dot_product_cudnn_attention_backward.default: _rows(0, 1, 2, 3, 4, bias=8, bias_rule=ROWS),
    aten._scaled_dot_product_flash_attention_for_cpu.default: _rows(0, 1, 2, bias="attn_mask", bias_rule=ROWS),
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: _rows(0, 1, 2, 3, 4, bias="attn_mask",
                                                                             bias_rule=ROWS),
}


def wanted(op: Any, key: Any, size: list, traced: list) -> tuple[list, int]:
    """The strides and the offset multiple argument ``key`` (a position or a keyword) of ``op``
    is handed in: eager's (``traced``) unless a rule asks for more."""
    rule = RULES.get(op, {}).get(key)
    if rule is None:
        return traced, 1
    return [sympy.sympify(s) for s in rule.strides(size, traced)], rule.offset_multiple


def non_overlapping(size: Sequence[Any], stride: Sequence[Any]) -> bool:
    """Can a buffer have these strides: no two indices at one address (gaps allowed)? Decided on
    the example's sizes; the strides come from eager's tensors, which have them at every size."""
    dims = sorted((hint(st), hint(s)) for s, st in zip(size, stride) if s != 1)
    reach = 0  # the largest offset the dimensions with smaller strides reach
    for st, s in dims:
        if st <= reach:
            return False
        reach += st * (s - 1)
    return True


def _strided(value: ir.IRNode) -> ir.Buffer | ir.ReinterpretView | None:
    """``value`` as a tensor the wrapper already has (a buffer or a view of one), computing
    nothing; None for a value still lazy that is not a view of a buffer."""
    if isinstance(value, (ir.Buffer, ir.ReinterpretView)):
        return value
    realized = getattr(value, "_realized", None)
    if realized is not None:
        return realized
    return value.as_strided() if isinstance(value, ir.View) else None


def same_strides(layout: ir.Layout, size: Sequence[Any], stride: Sequence[Any]) -> bool:
    """Do ``layout``'s sizes and strides equal these (strides of dims of size 1 do not matter)?"""
    return same_sizes(layout.size, size) and all(
        s == 1 or _same(a, b) for s, a, b in zip(size, layout.stride, stride))


def _same(a: Any, b: Any) -> bool:
    """Are two size expressions equal for every value of the symbols?"""
    a, b = sympy.sympify(a), sympy.sympify(b)
    return a == b or (not (a.is_Integer and b.is_Integer) and sympy.expand(a - b) == 0)


def same_sizes(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))


def laid_out(value: ir.IRNode, stride: Sequence[Any], new_buffer: Callable[[ir.Pointwise, list], ir.Buffer],
             offset_multiple: int = 1) -> ir.IRNode:
    """``value`` with ``stride`` and a storage offset that is a multiple of ``offset_multiple``
    (see the module docstring); ``new_buffer(data, strides)`` makes a computed buffer with strides
    that do not overlap."""
    size = [sympy.sympify(s) for s in value.get_size()]
    stride = [sympy.sympify(s) for s in stride]
    current = _strided(value)
    if current is not None and same_strides(current.layout, size, stride) \
            and is_multiple(getattr(current.layout, "offset", 0), offset_multiple):
        return current
    broadcast = [s != 1 and st == 0 for s, st in zip(size, stride)]
    compact = [sympy.S.One if b else s for s, b in zip(size, broadcast)]
    if not non_overlapping(compact, stride):
        return current if current is not None else value.as_tensor_arg()
    lazy = isinstance(value, (ir.Pointwise, ir.View)) and value._realized is None
    if lazy and not any(broadcast):  # computed in these strides, for its other readers too
        return value.realize(stride)
    load = value.make_loader()

    def inner(idx: Sequence[Any]) -> Any:
        return load([sympy.S.Zero if b else i for i, b in zip(idx, broadcast)])
    buf = new_buffer(ir.Pointwise(compact, value.get_dtype(), inner), stride)
    if not any(broadcast):
        return buf
    return ir.ReinterpretView(buf, ir.Layout(size, stride, value.get_dtype(), 0))
