"""Per-call overhead of a compiled function on tiny inputs: guard check + call of the graph.

Eager, ember (backend="eager") and torch.compile(backend="eager") side by side in one process,
so the difference is the cost of the wrapper, the guards and the rebuilding of outputs.
Run: ``python -m benchmarks.overhead``.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch

import ember


def median_us(fn: Callable[[], Any], repeat: int = 2000, rounds: int = 15) -> float:
    for _ in range(200):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        samples.append((time.perf_counter() - start) / repeat * 1e6)
    return statistics.median(samples)


def workloads() -> dict[str, tuple[Callable[..., Any], tuple]]:
    def pointwise(x, y):
        return x * 2 + y

    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(),
                              torch.nn.Linear(32, 4))
    return {
        "x * 2 + y, 4 floats": (pointwise, (torch.randn(4), torch.randn(4))),
        "3-layer MLP, batch 1": (mlp, (torch.randn(1, 16),)),
    }


def main() -> None:
    rows = []
    for name, (fn, args) in workloads().items():
        with torch.no_grad():
            compiled_ember = ember.compile(fn, backend="eager")
            compiled_torch = torch.compile(fn, backend="eager")
            compiled_ember(*args)
            compiled_torch(*args)
            eager = median_us(lambda: fn(*args))
            ours = median_us(lambda: compiled_ember(*args))
            theirs = median_us(lambda: compiled_torch(*args))
        rows.append((name, eager, ours, theirs))
    print(f"torch {torch.__version__}")
    print("| workload | eager us | ember(eager) us (overhead) | torch.compile(eager) us (overhead) |")
    print("|---|---|---|---|")
    for name, eager, ours, theirs in rows:
        print(f"| {name} | {eager:.2f} | {ours:.2f} (+{ours - eager:.2f}) | {theirs:.2f} (+{theirs - eager:.2f}) |")


if __name__ == "__main__":
    main()
