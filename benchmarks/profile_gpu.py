"""Where the GPU time of a workload goes: eager, ember and torch.compile under torch.profiler.

For each variant: kernels launched per call, GPU time per call, and the kernels that take the most
of it (name, calls, total microseconds). Workloads are those of ``benchmarks.run``.

    python -m benchmarks.profile_gpu --only "resnet18 train" [--top 12] [--unique-names]

``--unique-names`` numbers ember's Triton kernels (``triton_red_sum_k17``) so that each row is one
kernel; its source is then the one file of ember's kernel cache defining that name. (Identical
kernels then compile once each instead of once in all: for diagnosis only.)
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


def _number_kernels() -> None:
    import itertools

    from ember_inductor.codegen import triton_backend
    named, counter = triton_backend.kernel_name, itertools.count()
    triton_backend.kernel_name = lambda group: f"{named(group)}_k{next(counter)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", required=True, help="substrings of workload names")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--unique-names", action="store_true", help="one name per ember Triton kernel")
    ap.add_argument("--variants", default="eager,ember,torch.compile")
    args = ap.parse_args(argv)
    import ember
    if args.unique_names:
        _number_kernels()

    for w in workloads("cuda"):
        if not any(s in w.name for s in args.only):
            continue
        obj, inputs, training = w.build("cuda")
        module = obj if isinstance(obj, torch.nn.Module) else None
        torch._dynamo.reset()
        make = {"eager": lambda: obj, "ember": lambda: ember.compile(obj), "torch.compile": lambda: torch.compile(obj)}
        for label in args.variants.split(","):
            fn = make[label]()
            rows = _profile(step_runner(fn, inputs, training, module))
            launches = sum(r[1] for r in rows) / CALLS
            total = sum(r[2] for r in rows) / CALLS
            print(f"\n## {w.name} / {label}: {launches:.0f} kernels per call, {total:.0f} us GPU time per call")
            for key, count, t in rows[:args.top]:
                print(f"{t / CALLS:9.1f} us  {count / CALLS:5.1f}x  {key[:110]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
