"""Pooling lowerings: 2-D max pooling with indices, forward and backward, as pointwise kernels.

Forward: each output element reads its window (``kernel_size`` loads; where the window leaves
the input the read is clamped into it and a mask keeps it out) and keeps the largest value and
its index ``h * W + w`` in the input's plane, as eager does: the first largest in window order
wins, a NaN wins over every number and a later NaN over an earlier one. The values and the
indices are two pointwise nodes over the same iteration space, so they fuse into one kernel.
The input is computed into a buffer first when it is lazy (``REALIZED_INPUTS``: a resnet stem's
batch norm and ReLU would otherwise be recomputed for every element of every window, twice).

Backward: each input element sums the output gradients of the windows that picked it: the
``ceil(kernel / stride)`` windows per dimension that can contain it, in increasing output order
(eager's). The sum fuses with what reads the gradient next.

Static spatial sizes, dilation 1 and windows of at most ``MAX_WINDOW`` elements (each one an
unrolled read; a global max pool is aten's) -- else aten runs the op.

The backward is lowered for Triton only (``BACKWARD_BACKENDS``: on the CPU aten's scatter is
faster); it adds half-precision gradients in float32 as eager's CUDA kernel does (also for CPU
tensors under ``EMBER_INDUCTOR_KERNELS=triton``, where eager's CPU kernel would round after
each add). On CUDA with a channels-last input, eager points a window of only -inf at index 0
even outside it; ember (like eager on the CPU and on NCHW inputs on CUDA) at the window's first
element.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import sympy
import torch

from .. import ir
from ..codegen.language import kernel_language
from ..index_functions import FloorDiv, ModularIndexing
from ..virtualized import ops
from .indexing_ops import mask_and
from .registry import REALIZED_INPUTS, NotLowerable, aten, register


#: Largest window lowered (torch.compile's limit too): its reads are unrolled.
MAX_WINDOW = 25

#: Kernel languages whose max pooling backward is lowered (Triton's; the C++ one runs aten's).
#: Eager's CPU kernel scatters each output's gradient to the element it picked (one add per
#: output); the gather a pointwise kernel needs tests every window that may hold each input
#: element, with strided reads GCC turns into slow gathers or scalar code: a resnet stem's
#: backward (4x64x32x32, fused with the ReLU backward and the batch norm's recompute) was many
#: times slower as one C++ kernel, scalar or vectorized, than aten's scatter on 2 cores.
BACKWARD_BACKENDS = {"triton"}


def _pair(v: Any, default: Sequence[int] | None = None) -> list[int]:
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        if default is None:
            raise NotLowerable("pooling parameter missing")
        return list(default)
    v = [int(e) for e in v] if isinstance(v, (list, tuple)) else [int(v)]
    return v * 2 if len(v) == 1 else v


def _out_size(n: int, k: int, s: int, p: int, ceil_mode: bool) -> int:
    """Eager's output length of a pooled dimension of ``n`` (dilation 1)."""
    span = n + 2 * p - k
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:  # the last window would start in the right padding
        out -= 1
    return out


class _Geometry:
    """The sizes and parameters of one 2-D max pooling over the last two dimensions."""

    def __init__(self, x: ir.IRNode, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                 ceil_mode: bool) -> None:
        size = list(x.get_size())
        if len(size) not in (3, 4):
            raise NotLowerable("max pooling of a tensor that is not 3-D or 4-D")
        if not all(sympy.sympify(s).is_Integer for s in size[-2:]):
            raise NotLowerable("max pooling over symbolic spatial sizes")
        self.k = _pair(kernel_size)
        self.s = _pair(stride, self.k)
        self.p = _pair(padding, [0, 0])
        if _pair(dilation, [1, 1]) != [1, 1]:
            raise NotLowerable("dilated max pooling")
        if self.k[0] * self.k[1] > MAX_WINDOW:
            raise NotLowerable("max pooling window too large to unroll")
        if not x.get_dtype().is_floating_point:
            raise NotLowerable("max pooling of integers")
        self.lead = size[:-2]
        self.h, self.w = int(size[-2]), int(size[-1])
        self.oh = _out_size(self.h, self.k[0], self.s[0], self.p[0], ceil_mode)
        self.ow = _out_size(self.w, self.k[1], self.s[1], self.p[1], ceil_mode)
        self.out_size = [*self.lead, sympy.Integer(self.oh), sympy.Integer(self.ow)]


def _inside(i: Any, n: int, may_be_negative: bool, may_pass_end: bool) -> tuple[Any, Any]:
    """(boolean ops value for ``0 <= i < n`` or None when always true, ``i`` clamped into
    ``[0, n)``). A read at the clamped position is always in bounds, so it needs no masked load
    (which GCC does not vectorize when the address is strided or computed); the mask then
    selects."""
    mask, clamped = None, i
    if may_be_negative:
        mask = ops.ge(ops.index_expr(i, torch.int64), ops.constant(0, torch.int64))
        clamped = sympy.Max(0, clamped)
    if may_pass_end:
        mask = mask_and(mask, ops.lt(ops.index_expr(i, torch.int64), ops.constant(n, torch.int64)))
        clamped = sympy.Min(n - 1, clamped)
    return mask, clamped


def _window(g: _Geometry, load: Callable, dtype: torch.dtype, idx: Sequence) -> tuple[Any, Any]:
    """(largest value, its index in the plane) over the window of output position ``idx``."""
    *lead, oh, ow = idx
    best = ops.constant(float("-inf"), dtype)
    where = ops.constant(-1, torch.int64)  # no element seen yet
    for a in range(g.k[0]):
        ih = oh * g.s[0] - g.p[0] + a
        mask_h, read_h = _inside(ih, g.h, g.p[0] > a, (g.oh - 1) * g.s[0] - g.p[0] + a >= g.h)
        for b in range(g.k[1]):
            iw = ow * g.s[1] - g.p[1] + b
            mask_w, read_w = _inside(iw, g.w, g.p[1] > b, (g.ow - 1) * g.s[1] - g.p[1] + b >= g.w)
            value = load([*lead, read_h, read_w])  # outside the input: never taken (the mask)
            take = mask_and(ops.logical_or(ops.logical_or(ops.gt(value, best), ops.isnan(value)),
                                           ops.eq(where, ops.constant(-1, torch.int64))),
                            mask_and(mask_h, mask_w))
            best = ops.where(take, value, best)
            where = ops.where(take, ops.index_expr(ih * g.w + iw, torch.int64), where)
    return best, where


REALIZED_INPUTS[aten.max_pool2d_with_indices.default] = (0,)  # read once per window element


@register(aten.max_pool2d_with_indices.default)
def max_pool2d_with_indices(x: ir.IRNode, kernel_size: Any, stride: Any = (), padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False) -> tuple[ir.IRNode, ir.IRNode]:
    g = _Geometry(x, kernel_size, stride, padding, dilation, ceil_mode)
    load, dtype = x.make_loader(), x.get_dtype()
    values = ir.Pointwise(g.out_size, dtype, lambda idx: _window(g, load, dtype, idx)[0])
    indices = ir.Pointwise(g.out_size, torch.int64, lambda idx: _window(g, load, dtype, idx)[1])
    return values, indices


REALIZED_INPUTS[aten.max_pool2d_with_indices_backward.default] = (0,)  # read once per window holding an element


@register(aten.max_pool2d_with_indices_backward.default)
def max_pool2d_with_indices_backward(grad: ir.IRNode, x: ir.IRNode, kernel_size: Any, stride: Any,
                                     padding: Any, dilation: Any, ceil_mode: bool,
                                     indices: ir.IRNode) -> ir.IRNode:
    if kernel_language(ir.current_graph().device_type) not in BACKWARD_BACKENDS:
        raise NotLowerable("max pooling backward in C++ (aten's scatter is faster)")
    g = _Geometry(x, kernel_size, stride, padding, dilation, ceil_mode)
    if list(grad.get_size()) != g.out_size or list(indices.get_size()) != g.out_size:
        raise NotLowerable("max pooling gradient of another size")
    load_grad, load_idx, dtype = grad.make_loader(), indices.make_loader(), grad.get_dtype()
    reach = [-(-g.k[d] // g.s[d]) for d in range(2)]  # windows per dimension that may hold an element

    def candidates(i: Any, d: int) -> list[tuple[Any, Any]]:
        """(output position clamped into the output, mask) of the windows along dimension ``d``
        that may contain input position ``i``, in increasing output order:
        ``o = (i + p) // s - t``, valid when ``0 <= o < out`` and the window starting at
        ``o * s - p`` reaches ``i``."""
        k, s, p, n_out = g.k[d], g.s[d], g.p[d], (g.oh, g.ow)[d]
        out = []
        for t in reversed(range(reach[d])):
            o = FloorDiv(i + p, s) - t
            offset = ModularIndexing(i + p, 1, s) + t * s  # i - (o * s - p), in [0, k) when o holds i
            reaches = None if t * s + s <= k else ops.lt(ops.index_expr(offset, torch.int64),
                                                         ops.constant(k, torch.int64))
            inside, read = _inside(o, n_out, t > 0, True)
            out.append((read, mask_and(reaches, inside)))
        return out

    def inner(idx: Sequence) -> Any:
        *lead, h, w = idx
        here = ops.index_expr(h * g.w + w, torch.int64)
        total = ops.constant(0, dtype)
        for oh, mask_h in candidates(h, 0):
            for ow, mask_w in candidates(w, 1):
                at = [*lead, oh, ow]  # always in bounds: the mask says whether the window holds the element
                picked = mask_and(mask_and(mask_h, mask_w), ops.eq(load_idx(at), here))
                total = ops.add(total, ops.where(picked, load_grad(at), ops.constant(0, dtype)))
        return total
    return ir.Pointwise(list(x.get_size()), dtype, inner)
