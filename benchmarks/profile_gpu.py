"""Where the GPU time of a workload goes: eager, ember and torch.compile under torch.profiler.

For each variant: kernels launched per call, GPU time per call, and the kernels that take the most
of it (name, calls, total microseconds). Workloads are those of ``benchmarks.run``.

    python -m benchmarks.profile_gpu --only "resnet18 train" [--top 12]
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.run import step_runner, workloads

CALLS = 5


def _profile(run: Callable[[], Any]) -> list[tuple[str, int, float]]:
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            run()
        torch.cuda.synchronize()
    rows = [(e.key, e.count, e.device_time_total) for e in prof.key_averages() if e.device_time_total > 0]
    return sorted(rows, key=lambda r: -r[2])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", required=True, help="substrings of workload names")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args(argv)
    import ember

    for w in workloads("cuda"):
        if not any(s in w.name for s in args.only):
            continue
        obj, inputs, training = w.build("cuda")
        module = obj if isinstance(obj, torch.nn.Module) else None
        torch._dynamo.reset()
        variants = {"eager": obj, "ember": ember.compile(obj), "torch.compile": torch.compile(obj)}
        for label, fn in variants.items():
            rows = _profile(step_runner(fn, inputs, training, module))
            launches = sum(r[1] for r in rows) / CALLS
            total = sum(r[2] for r in rows) / CALLS
            print(f"\n## {w.name} / {label}: {launches:.0f} kernels per call, {total:.0f} us GPU time per call")
            for key, count, t in rows[:args.top]:
                print(f"{t / CALLS:9.1f} us  {count / CALLS:5.1f}x  {key[:110]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
