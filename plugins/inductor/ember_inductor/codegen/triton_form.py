"""The form of a Triton kernel, decided from its fused group before any code is written
(``kernel_shape``): pointwise in 1-D blocks or 2-D tiles, a reduction persistent (rows whole in
registers) or looped or both (``dual``), across rows or along them, 32- or 64-bit indices
(``needs_int64``); and the kernel's index variables (``index_substitution``)."""
from __future__ import annotations

import dataclasses
from typing import Any

import sympy

from .. import indexing
from ..scheduler import FusedGroup, KernelPlan
from ..symbolic import guard_at_most, hint
from .triton_configs import KernelShape, pow2, wide_tile_warps

#: Largest offset for 32-bit index arithmetic (tests lower it to exercise the int64 path).
INT32_MAX = 2**31 - 1
#: Rows up to this many elements are reduced whole in registers.
PERSISTENT_MAX = 4096
#: Shortest last dimension a pointwise kernel is tiled along (``_wants_2d``).
TILE_MIN_X = 8

XI, YI, RI = indexing.sym("xindex"), indexing.sym("yindex"), indexing.sym("rindex")


def kernel_shape(group: FusedGroup, buffers: dict[str, Any], persistent: bool | None = None) -> KernelShape:
    """The form of ``group``'s kernel; ``persistent`` forces it (the twin of a dual kernel)."""
    plan = group.plan
    rnumel = indexing.numel(plan.r)
    is_reduction = any(n.is_reduction for n in group.nodes)
    static_r = not rnumel.free_symbols
    # a symbolic row length whose example fits in registers: both forms in one function,
    # chosen per launch by the constexpr PERSISTENT (the persistent one where the row fits)
    dual = persistent is None and is_reduction and not static_r and pow2(hint(rnumel)) <= PERSISTENT_MAX
    persistent = is_reduction and (persistent if persistent is not None else static_r and pow2(rnumel) <= PERSISTENT_MAX)
    shape = KernelShape(tuple(plan.outer), tuple(plan.r), is_reduction, not is_reduction and _wants_2d(plan),
                        persistent, dual)
    rows = _row_accesses(plan, *index_substitution(shape)) if is_reduction else []
    if sum(1 if xs == 1 and rs != 1 else -1 for xs, rs in rows) > 0:
        itemsize = max((buffers[n].get_dtype().itemsize for n in _accessed(plan)), default=4)
        shape = dataclasses.replace(shape, outer_reduction=True, wide_warps=wide_tile_warps(len(rows), itemsize))
    return shape


def _accessed(plan: KernelPlan) -> set[str]:
    return {n for p in plan.placements for n, _ in p.node.reads + p.node.writes}


def _accesses(plan: KernelPlan) -> list[Any]:
    xv = indexing.make_vars("x", len(plan.outer))
    rv = indexing.make_vars("r", len(plan.r))
    out = []
    for p in plan.placements:
        idx, ridx = p.index_map(xv, rv)
        sub = dict(zip(p.node.ivars, idx)) | dict(zip(p.node.jvars, ridx))
        out += [sympy.sympify(e).xreplace(sub) for _, e in p.node.reads + p.node.writes]
    return out


def _wants_2d(plan: KernelPlan) -> bool:
    """Tiled (``YBLOCK`` rows of the leading dimensions, ``XBLOCK`` of the last) when an access
    is contiguous along a leading dimension but not along the last: a transpose, such as a
    convolution weight converted to channels-last, whose last dimension (the 3x3 kernel's 9)
    may be short. Without tiles, consecutive elements would be written (or read) ``C`` apart."""
    outer = plan.outer
    if len(outer) < 2 or hint(outer[-1]) < TILE_MIN_X or hint(indexing.numel(outer[:-1])) < 16:
        return False
    xv = indexing.make_vars("x", len(outer))
    ranges = dict(zip(xv, outer))
    for e in _accesses(plan):
        lin = indexing.as_linear(indexing.simplify_index(e, ranges), xv)
        if lin is not None and lin[1][-1] != 1 and any(s == 1 for s in lin[1][:-1]):
            return True
    return False


def _row_accesses(plan: KernelPlan, subs: dict, ranges: dict) -> list[tuple[Any, Any]]:
    """(stride along the kept index, stride along the reduced one) of each load or store
    that varies along both and is linear in them. A reduction whose accesses are mostly
    contiguous along the kept index and strided along the reduced one reduces across rows
    (``outer_reduction``: a column sum, such as a bias or a layer norm weight's gradient over
    a [tokens, features] matrix): a program reads a few contiguous elements of each row, so
    it wants wider tiles (``triton_configs``)."""
    out = []
    for e in _accesses(plan):
        e = sympy.sympify(e).xreplace(subs)
        if not {XI, RI} <= e.free_symbols:
            continue
        lin = indexing.as_linear(indexing.simplify_index(e, ranges), [XI, RI])
        if lin is not None:
            out.append(tuple(lin[1]))
    return out


def needs_int64(plan: KernelPlan, buffers: dict[str, Any]) -> bool:
    """Does an offset of the kernel (a range, or an element of a buffer it reads or writes) not
    fit 32 bits, for the example's sizes or (under a guard) any admitted one?"""
    numel, rnumel = indexing.numel(plan.outer), indexing.numel(plan.r)
    extents = [numel * (rnumel if rnumel.free_symbols else max(rnumel, 1))]
    for name in _accessed(plan):
        lay = buffers[name].layout
        extents.append(sympy.sympify(lay.offset) + 1 + sum((s - 1) * st for s, st in zip(lay.size, lay.stride)))
    if all(not e.free_symbols for e in extents):
        return max(int(e) for e in extents) > INT32_MAX
    # symbolic: 32 bits only under a guard that every extent fits, for every admitted size
    return not all(guard_at_most(e, INT32_MAX) for e in extents)


def index_substitution(shape: KernelShape) -> tuple[dict, dict]:
    """(the IR's range variables -> expressions of ``xindex``/``yindex``/``rindex``, the
    ranges of those)."""
    outer, r = list(shape.outer), list(shape.r)
    xv, rv = indexing.make_vars("x", len(outer)), indexing.make_vars("r", len(r))
    subs: dict = {}
    if shape.tiled:
        subs.update(zip(xv[:-1], indexing.delinearize(YI, outer[:-1])))
        subs[xv[-1]] = XI
        ranges = {YI: indexing.numel(outer[:-1]), XI: outer[-1]}
    else:
        subs.update(zip(xv, indexing.delinearize(XI, outer)))
        ranges = {XI: shape.numel}
    if r:
        subs.update(zip(rv, indexing.delinearize(RI, r)))
        ranges[RI] = shape.rnumel
    return subs, ranges
