"""The fixed head of every generated Triton source: imports and the combine functions of reductions.

Max/min propagate NaN like torch; argmax/argmin pick the first index of the extreme value, and
a NaN counts as the extreme value.
"""

PRELUDE = '''
import triton
import triton.language as tl
from ember_inductor.codegen.triton_device import libdevice


@triton.jit
def _max_combine(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _min_combine(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def _prod_combine(a, b):
    return a * b


@triton.jit
def _arg_pick(a, ia, b, ib, is_max: tl.constexpr):
    a_nan = a != a
    b_nan = b != b
    if is_max:
        better = a > b
    else:
        better = a < b
    tie = (a == b) | (a_nan & b_nan)
    pick_a = (better | (a_nan & ~b_nan) | (tie & (ia < ib))) & ~(b_nan & ~a_nan)
    return tl.where(pick_a, a, b), tl.where(pick_a, ia, ib)


@triton.jit
def _argmax_combine(a, ia, b, ib):
    return _arg_pick(a, ia, b, ib, True)


@triton.jit
def _argmin_combine(a, ia, b, ib):
    return _arg_pick(a, ia, b, ib, False)
'''
