"""Benchmark: ResNet-18 inference on CPU (batch 4, 3x64x64): eager vs ember tvm vs torch.compile.

Runs all three in one process on the same inputs and prints medians, ratios and build times.
ember's tvm backend is reached through ``ember.compile(model, backend="tvm")`` when the core
has it, else through the backend contract directly (graph traced with parameters lifted).

    python benchmarks/tvm_cpu.py [--tuned TRIALS] [--iters N]
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "tvm"))
from tvm_helpers import lifted  # noqa: E402
from tvm_models import ResNet18  # noqa: E402


def median_ms(fn: Callable[[], Any], iters: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def ember_tvm(model: torch.nn.Module, x: torch.Tensor, options: dict) -> Callable[[], Any]:
    import ember

    if hasattr(ember, "compile"):
        compiled = ember.compile(model, backend="tvm", options=options)
        return lambda: compiled(x)
    from ember_tvm.backend import tvm as backend

    gm, tensors = lifted(model)
    run = backend(gm, [x, *tensors], options=options)
    return lambda: run(x, *tensors)


def timed_build(make: Callable[[], Callable[[], Any]]) -> tuple[Callable[[], Any], float]:
    start = time.perf_counter()
    fn = make()
    fn()  # the first call builds for JIT-style compilers
    return fn, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--tuned", type=int, default=0, help="also run MetaSchedule with N trials")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = ResNet18(width=64, num_classes=1000).eval()
    x = torch.randn(4, 3, 64, 64)
    import tvm

    print(f"# {datetime.date.today()}  {platform.processor() or platform.machine()}  "
          f"{os.cpu_count()} cores  torch {torch.__version__}  tvm {tvm.__version__}")
    rows = []
    with torch.no_grad():
        ref = model(x)
        rows.append(("eager", median_ms(lambda: model(x), args.iters), 0.0))
        variants = [("ember tvm (default schedules)", {"cache": False})]
        if args.tuned:
            variants.append((f"ember tvm (meta_schedule {args.tuned} trials)",
                             {"cache": False, "tuning": "meta_schedule", "trials": args.tuned}))
        for name, options in variants:
            fn, build_s = timed_build(lambda: ember_tvm(model, x, options))
            torch.testing.assert_close(fn(), ref, rtol=1e-3, atol=1e-3)
            rows.append((name, median_ms(fn, args.iters), build_s))
        compiled = torch.compile(model)
        fn, build_s = timed_build(lambda: (lambda: compiled(x)))
        rows.append(("torch.compile (default)", median_ms(fn, args.iters), build_s))
    base = rows[0][1]
    print(f"{'variant':<40}{'median ms':>10}{'vs eager':>10}{'build s':>10}")
    for name, ms, build_s in rows:
        print(f"{name:<40}{ms:>10.2f}{base / ms:>9.2f}x{build_s:>10.1f}")


if __name__ == "__main__":
    main()
