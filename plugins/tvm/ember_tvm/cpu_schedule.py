"""ember's untuned CPU schedule: parallel outer loops, vectorized inner loops, inlined producers.

TVM's default CPU pipeline leaves every legalized PrimFunc as plain serial loops. Without
tuning, this pass applies to each PrimFunc what MetaSchedule's own rules would do first:
inline cheap elementwise producers (padding, broadcasts, casts) into their consumers, then
annotate the root block for ``RewriteParallelVectorizeUnroll``, which parallelizes outer
spatial loops over the cores and vectorizes inner ones. A function the schedule cannot handle
is left as it was (the result stays right; only slower).
"""
from __future__ import annotations

import os
from typing import Any

import tvm
from tvm.s_tir import Schedule
from tvm.s_tir.meta_schedule.postproc import RewriteParallelVectorizeUnroll

#: Upper bounds handed to RewriteParallelVectorizeUnroll (as MetaSchedule's CPU defaults).
MAX_JOBS_PER_CORE = 16
MAX_VECTORIZE_EXTENT = 64
UNROLL_MAX_STEP = 16
#: ``IterVar.iter_type`` codes (tvm/tirx/expr.h): data parallel and reduction.
SPATIAL = 0
REDUCE = 2


def _is_reduction(sch: Schedule, block: Any) -> bool:
    return any(int(iv.iter_type) == REDUCE for iv in sch.get(block).iter_vars)


def _inline_elementwise(sch: Schedule) -> None:
    """Inline blocks into their consumers when no consumer is a reduction.

    Padding inlined into a convolution would put a bounds test in its innermost loop, so
    producers of reductions stay materialized.
    """
    root = sch.get_sblock("root")
    blocks = sch.get_child_blocks(root)
    for block in blocks[:-1]:
        if any(_is_reduction(sch, c) for c in sch.get_consumers(block)):
            continue
        try:
            sch.compute_inline(block)
        except Exception:  # noqa: BLE001 - TVM raises ScheduleError through its FFI
            continue  # not inlinable (a reduction, or read several times with offsets)


def _reduction_outside_last_spatial(sch: Schedule) -> None:
    """Reorder reduction blocks' loops to (spatial..., reduction..., last spatial).

    The innermost loop then walks the output contiguously and can be vectorized.
    """
    for block in sch.get_child_blocks(sch.get_sblock("root")):
        iter_vars = sch.get(block).iter_vars
        loops = sch.get_loops(block)
        if len(loops) != len(iter_vars) or not _is_reduction(sch, block):
            continue
        kinds = [int(iv.iter_type) for iv in iter_vars]
        spatial = [lp for lp, k in zip(loops, kinds) if k == SPATIAL]
        reduce = [lp for lp, k in zip(loops, kinds) if k == REDUCE]
        if len(spatial) < 2 or not reduce or len(spatial) + len(reduce) != len(loops):
            continue
        try:
            sch.reorder(*spatial[:-1], *reduce, spatial[-1])
        except Exception:  # noqa: BLE001 - keep the original order
            continue


def schedule_primfunc(func: Any, num_cores: int) -> Any:
    """Return ``func`` with ember's CPU schedule applied, or ``func`` itself on failure."""
    try:
        sch = Schedule(func)
        _inline_elementwise(sch)
        _reduction_outside_last_spatial(sch)
        root = sch.get_sblock("root")
        sch.annotate(root, "meta_schedule.parallel", MAX_JOBS_PER_CORE * num_cores)
        sch.annotate(root, "meta_schedule.vectorize", MAX_VECTORIZE_EXTENT)
        sch.annotate(root, "meta_schedule.unroll_explicit", UNROLL_MAX_STEP)
        if not RewriteParallelVectorizeUnroll().apply(sch):
            return func
        return sch.mod["main"]
    except Exception:  # noqa: BLE001 - an unschedulable function keeps its serial loops
        return func


@tvm.transform.module_pass(opt_level=0, name="EmberParallelVectorize")
class ParallelVectorize:
    """Module pass applying :func:`schedule_primfunc` to every TIR function."""

    def transform_module(self, mod: Any, ctx: Any) -> Any:
        target = tvm.target.Target.current(allow_none=True)
        cores = int(target.attrs.get("num-cores", 0)) if target is not None else 0
        cores = cores or os.cpu_count() or 1
        updates = {}
        for gvar, func in mod.functions.items():
            if isinstance(func, tvm.tirx.PrimFunc):
                updates[gvar] = schedule_primfunc(func.with_attr("global_symbol", gvar.name_hint), cores)
        for gvar, func in updates.items():
            mod[gvar] = func
        return mod
