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
keyword's name): the strides a rule returns replace the traced ones. ``OUTPUT_RULES`` does the
same for results the wrapper allocates itself (matrix products on the GPU, as ``out=``). Graph outputs get their
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
    """What a kernel needs of one argument: ``strides(size, traced strides, dtype)``, and a
    storage offset that is a multiple of ``offset(dtype)`` elements; ``gpu``: only in graphs
    whose kernels are Triton's (CUDA's vendor libraries)."""

    strides: Callable[[list, list, torch.dtype], list]
    offset: Callable[[torch.dtype], int] = lambda dtype: 1
    gpu: bool = False


def _matrix_alignment(dtype: torch.dtype) -> int:
    """Elements in 16 bytes: cuBLAS's vectorized kernels load 16 bytes at a time."""
    return max(1, 16 // dtype.itemsize) if dtype.is_floating_point else 1


def _aligned_matrix(size: list, stride: list, dtype: torch.dtype) -> list:
    """A matrix (or batch of matrices) whose leading stride is a multiple of 16 bytes: cuBLAS
    runs a product on its fast kernels only when every operand's and the result's are, and its
    ``*_align1`` kernels otherwise (GPT-2's 50257-word vocabulary: the logits and their gradient
    rows, issue 47). Row-major or column-major matrices get their leading stride rounded up
    (gaps at the end of each row); other layouts stay eager's."""
    n = _matrix_alignment(dtype)
    if len(size) < 2 or n == 1 or not all(sympy.sympify(v).is_Integer for v in (*size, *stride)):
        return stride
    size, stride = [int(v) for v in size], [int(v) for v in stride]
    rows, cols = size[-2], size[-1]
    if cols > 1 and stride[-1] == 1 and stride[-2] >= cols and stride[-2] % n:
        lead, inner = -2, cols          # row-major
    elif rows > 1 and stride[-2] == 1 and stride[-1] >= rows and stride[-1] % n:
        lead, inner = -1, rows          # column-major
    else:
        return stride
    out = list(stride)
    out[lead] = -(-inner // n) * n
    extent = out[lead] * (rows if lead == -2 else cols)
    for d in range(len(size) - 3, -1, -1):  # batches: right after each other, a broadcast kept
        if stride[d] != 0:
            out[d] = extent
            extent *= size[d]
    return out


def _dense_last_dim(size: list, stride: list, dtype: torch.dtype) -> list:
    """Attention kernels read rows of their inputs as contiguous vectors."""
    if size and size[-1] != 1 and stride[-1] != 1:
        return indexing.contiguous_strides(size)
    return stride


def _aligned_bias(size: list, stride: list, dtype: torch.dtype) -> list:
    """CUDA memory-efficient attention's bias: rows aligned (``attention_bias``)."""
    if len(size) not in (3, 4):
        return _dense_last_dim(size, stride, dtype)
    return aligned_strides(size, [st == 0 and s != 1 for s, st in zip(size, stride)])


ROWS = Rule(_dense_last_dim)
ALIGNED_BIAS = Rule(_aligned_bias, lambda dtype: ALIGNMENT)
MATRIX = Rule(_aligned_matrix, _matrix_alignment, gpu=True)


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
    aten.mm.default: {0: MATRIX, 1: MATRIX},
    aten.addmm.default: {1: MATRIX, 2: MATRIX},
    aten.bmm.default: {0: MATRIX, 1: MATRIX},
    aten.baddbmm.default: {1: MATRIX, 2: MATRIX},
}

#: Ops whose result the wrapper allocates itself, in the strides a rule gives it (passed as
#: ``out=``): cuBLAS's kernel choice depends on the result's leading stride too.
OUTPUT_RULES: dict[Any, Rule] = {op: MATRIX for op in (aten.mm.default, aten.addmm.default, aten.bmm.default,
                                                        aten.baddbmm.default)}


def wanted(op: Any, key: Any, size: list, traced: list, dtype: torch.dtype, gpu: bool) -> tuple[list, int]:
    """The strides and the offset multiple argument ``key`` (a position or a keyword) of ``op``
    is handed in: eager's (``traced``) unless a rule asks for more; ``gpu``: the graph's kernels
    are Triton's."""
    rule = RULES.get(op, {}).get(key)
    if rule is None or (rule.gpu and not gpu):
        return traced, 1
    return [sympy.sympify(s) for s in rule.strides(size, traced, dtype)], rule.offset(dtype)


def output_strides(op: Any, size: list, traced: list, dtype: torch.dtype, gpu: bool) -> list | None:
    """The strides the wrapper allocates ``op``'s result in, when not the ones its kernel picks."""
    rule = OUTPUT_RULES.get(op)
    if rule is None or (rule.gpu and not gpu):
        return None
    strides = [sympy.sympify(s) for s in rule.strides(size, traced, dtype)]
    return None if same_strides(ir.Layout(size, traced, dtype), size, strides) else strides


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
            and is_multiple(current.layout.offset, offset_multiple):
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
