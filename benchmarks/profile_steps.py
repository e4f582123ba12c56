"""Where a synchronized call's time goes: GPU busy against idle, and what the CPU did meanwhile.

    python -m benchmarks.profile_steps --only "resnet18 train" [--mode reduce-overhead] [--calls 3]

For each variant (eager, ember, torch.compile) of the named workloads of ``benchmarks.run``:

- the median wall time of a synchronized call, and of calls back to back;
- under CUDA graphs, when (median microseconds after the call started) each graph replay was
  issued: the CPU work before the first one is paid by every synchronized call;
- from torch.profiler over ``--calls`` synchronized calls: per call, the GPU's busy time (the union
  of its kernels and copies), the time from the call's start to the first GPU work, and the idle
  gaps after it, each gap with the CPU-side events (aten ops, CUDA runtime calls) that ran in it;
- cProfile's top Python functions by own time over 20 synchronized calls.

A gap is where the GPU waited for the CPU: what a synchronized call pays and calls back to back
hide. With ``--traces DIR``, each variant's trace goes to ``DIR/trace_<workload>_<variant>.json.gz``.
"""
from __future__ import annotations

import argparse
import cProfile
import gzip
import io
import json
import os
import pstats
import statistics
import tempfile
import time
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from benchmarks.run import step_runner, workloads

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def _timed(run: Callable[[], Any], n: int, b2b: int = 0) -> float:
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(max(1, b2b)):
            run()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) / max(1, b2b))
    return statistics.median(times) * 1e3


def _replay_times(run: Callable[[], Any], n: int) -> list[float]:
    """Median microseconds from a synchronized call's start to each ``CUDAGraph.replay`` it
    issued (ember's recorder and torch's CUDA graph trees both replay through it), then to
    its synchronized end."""
    marks: list[float] = []
    original = torch.cuda.CUDAGraph.replay

    def replay(self: torch.cuda.CUDAGraph) -> None:
        marks.append(time.perf_counter())
        original(self)
    rows = []
    torch.cuda.CUDAGraph.replay = replay  # type: ignore[method-assign]
    try:
        for _ in range(n):
            torch.cuda.synchronize()
            marks.clear()
            t = time.perf_counter()
            run()
            torch.cuda.synchronize()
            rows.append([(m - t) * 1e6 for m in marks] + [(time.perf_counter() - t) * 1e6])
    finally:
        torch.cuda.CUDAGraph.replay = original  # type: ignore[method-assign]
    width = min(len(r) for r in rows)
    return [statistics.median(r[k] for r in rows if len(r) == width) for k in range(width)]


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _timeline(trace: dict, top_gaps: int) -> list[str]:
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    calls = sorted((e for e in events if e.get("name") == "profiled call"
                    and e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    gpu = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in GPU_CATS]
    cpu = [e for e in events if e.get("cat") in ("cpu_op", "cuda_runtime", "python_function")]
    lines = []
    for k, call in enumerate(calls):
        start, end = call["ts"], call["ts"] + call["dur"]
        # the call's GPU work: what starts before the next call (each call ends synchronized)
        limit = calls[k + 1]["ts"] if k + 1 < len(calls) else float("inf")
        busy = _union([(max(a, start), min(b, limit)) for a, b in gpu if b > start and a < limit])
        if not busy:
            lines.append(f"  call {k}: {call['dur']:.0f} us, no GPU work recorded")
            continue
        gpu_end = busy[-1][1]
        total = max(end, gpu_end) - start
        busy_us = sum(b - a for a, b in busy)
        gaps = [(start, busy[0][0])] + [(busy[i][1], busy[i + 1][0]) for i in range(len(busy) - 1)]
        idle = sum(b - a for a, b in gaps)
        lines.append(f"  call {k}: {total:.0f} us (CPU {call['dur']:.0f}), GPU busy {busy_us:.0f} us, "
                     f"idle {idle:.0f} us (before the first GPU work {gaps[0][1] - gaps[0][0]:.0f} us), "
                     f"{len(busy)} busy spans")
        for a, b in sorted(gaps, key=lambda g: g[0] - g[1])[:top_gaps]:
            inside = sorted((e for e in cpu if a <= e["ts"] < b), key=lambda e: -e["dur"])
            names = ", ".join(f"{e['name'][:48]} {e['dur']:.0f}" for e in inside[:6])
            lines.append(f"    gap {b - a:7.0f} us at +{a - start:7.0f}: {names}")
    return lines


def _cprofile(run: Callable[[], Any], n: int, top: int) -> list[str]:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        run()
        torch.cuda.synchronize()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return [l for l in buf.getvalue().splitlines() if l.strip()][-top - 1:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", required=True, help="substrings of workload names")
    ap.add_argument("--mode", choices=["default", "reduce-overhead"], default="reduce-overhead")
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--gaps", type=int, default=5, help="largest idle gaps shown per call")
    ap.add_argument("--top", type=int, default=25, help="cProfile rows")
    ap.add_argument("--variants", default="eager,ember,torch")
    ap.add_argument("--traces", default="", help="directory for the chrome traces (none if empty)")
    args = ap.parse_args(argv)
    os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember_profile_steps_"))
    import ember

    mode = None if args.mode == "default" else args.mode
    out_dir = args.traces
    for w in workloads("cuda"):
        if not any(s in w.name for s in args.only):
            continue
        obj, inputs, training = w.build("cuda")
        module = obj if isinstance(obj, torch.nn.Module) else None
        variants = {"eager": lambda: obj, "ember": lambda: ember.compile(obj, mode=mode),
                    "torch": lambda: torch.compile(obj, mode=mode)}
        for label in args.variants.split(","):
            run = step_runner(variants[label](), inputs, training, module)
            for _ in range(12):
                run()
            torch.cuda.synchronize()
            print(f"\n## {w.name} / {label} ({args.mode}): synchronized {_timed(run, 30):.3f} ms, "
                  f"back to back {_timed(run, 10, 10):.3f} ms per call")
            marks = _replay_times(run, 30)
            if len(marks) > 1:
                print("  replays issued at " + ", ".join(f"+{m:.0f}" for m in marks[:-1]) +
                      f" us; synchronized end at +{marks[-1]:.0f} us")
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
                for _ in range(args.calls):
                    torch.cuda.synchronize()
                    with record_function("profiled call"):
                        run()
                    torch.cuda.synchronize()
            path = tempfile.mktemp(suffix=".json")
            prof.export_chrome_trace(path)
            with open(path) as f:
                trace = json.load(f)
            os.unlink(path)
            print("\n".join(_timeline(trace, args.gaps)))
            if out_dir:
                slug = "".join(c if c.isascii() and c.isalnum() else "_" for c in w.name)
                with gzip.open(os.path.join(out_dir, f"trace_{slug}_{label}.json.gz"), "wt") as f:
                    json.dump(trace, f)
            print("  cProfile, 20 synchronized calls, by own time:")
            print("\n".join("  " + l for l in _cprofile(run, 20, args.top)))
            del run
            torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
