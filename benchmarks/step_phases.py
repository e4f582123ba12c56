"""Where the per-call time of a compiled training step goes, phase by phase (CPU, microseconds).

Wraps, for the duration of a measurement, ember_aot's entry points with ``perf_counter_ns``
counters: the compiled function's call (core: binder, guards, runner), ``AOTCompiledGraph``
(which plan), ``CompiledPlan`` (the autograd Function, outputs), the compiled forward and
backward graphs, and ``AOTFunction.backward``. The differences between nested counters are the
phases. Used by ``benchmarks.overhead --phases``.
"""
from __future__ import annotations

import collections
import contextlib
import gc
import statistics
import time
from typing import Any, Callable, Iterator

import torch

_ns = time.perf_counter_ns


def _counted(acc: dict[str, int], key: str, fn: Callable) -> Callable:
    def run(*args: Any, **kwargs: Any) -> Any:
        t = _ns()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[key] += _ns() - t
    return run


@contextlib.contextmanager
def _instrumented(acc: dict[str, int]) -> Iterator[None]:
    from ember_aot import api, runtime

    saved = (api.AOTCompiledGraph.__call__, runtime.CompiledPlan.__call__, runtime.AOTFunction.backward)
    plans = [o for o in gc.get_objects() if type(o) is runtime.CompiledPlan]  # type(): weak proxies
    graphs = [(p, p.fw, list(p.bw)) for p in plans]
    api.AOTCompiledGraph.__call__ = _counted(acc, "aot", saved[0])
    runtime.CompiledPlan.__call__ = _counted(acc, "plan", saved[1])
    runtime.AOTFunction.backward = staticmethod(_counted(acc, "aot_backward", saved[2]))
    for p, fw, bw in graphs:
        p.fw = _counted(acc, "fw_graph", fw)
        p.bw[:] = [_counted(acc, "bw_graph", b) for b in bw]
    try:
        yield
    finally:
        api.AOTCompiledGraph.__call__, runtime.CompiledPlan.__call__ = saved[0], saved[1]
        runtime.AOTFunction.backward = staticmethod(saved[2])
        for p, fw, bw in graphs:
            p.fw, p.bw[:] = fw, bw


def phases(model: Callable, x: torch.Tensor, y: torch.Tensor, params: list[torch.Tensor],
           calls: int = 2000, rounds: int = 10) -> dict[str, float]:
    """Median microseconds per step of each phase of ``model``'s training step (already compiled
    and warm): forward call, loss, backward, and within them ember's layers."""
    acc: dict[str, int] = collections.defaultdict(int)
    samples: dict[str, list[float]] = collections.defaultdict(list)
    with _instrumented(acc):
        for _ in range(rounds):
            acc.clear()
            for _ in range(calls // rounds):
                for p in params:
                    p.grad = None
                t0 = _ns()
                out = model(x)
                t1 = _ns()
                loss = torch.nn.functional.mse_loss(out, y)
                t2 = _ns()
                loss.backward()
                acc["forward"] += t1 - t0
                acc["backward"] += _ns() - t2
            for k, v in acc.items():
                samples[k].append(v / (calls // rounds) / 1e3)
    m = {k: statistics.median(v) for k, v in samples.items()}
    return {
        "core: binder, guards, runner (inductor: + measured.FasterOf)": m["forward"] - m["aot"],
        "aot: plan lookup": m["aot"] - m["plan"],
        "aot: autograd Function forward, outputs": m["plan"] - m["fw_graph"],
        "forward graph": m["fw_graph"],
        "autograd engine, loss backward": m["backward"] - m["aot_backward"],
        "aot: Function backward (tangents, saved)": m["aot_backward"] - m["bw_graph"],
        "backward graph": m["bw_graph"],
    }
