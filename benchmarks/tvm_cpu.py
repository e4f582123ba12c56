"""Benchmark: ResNet-18 inference on CPU (batch 4, 3x64x64), eager vs ember tvm, inductor, torch.compile.

Runs every variant in one process on the same inputs and prints medians, ratios and build times.
ember's tvm and inductor backends are reached through ``ember.compile(model, backend=...)``.

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


def ember_compiled(model: torch.nn.Module, x: torch.Tensor, backend: str, options: dict) -> Callable[[], Any]:
    import ember

    compiled = ember.compile(model, backend=backend, options=options)
    return lambda: compiled(x)


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
        variants = [("ember tvm (default schedules)", "tvm", {"cache": False}),
                    ("ember inductor", "inductor", {})]
        if args.tuned:
            variants.append((f"ember tvm (meta_schedule {args.tuned} trials)", "tvm",
                             {"cache": False, "tuning": "meta_schedule", "trials": args.tuned}))
        for name, backend, options in variants:
            fn, build_s = timed_build(lambda: ember_compiled(model, x, backend, options))
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
