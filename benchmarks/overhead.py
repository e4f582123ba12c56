"""Per-call overhead of a compiled function on tiny inputs: guard check + call of the graph.

Eager, ember (backend="eager") and torch.compile(backend="eager") side by side in one process,
so the difference is the cost of the wrapper, the guards and the rebuilding of outputs.
Then a training step (forward, loss, backward) of an MLP of 3 tiny Linear layers, where the
per-call cost dominates: eager, ember and torch.compile with backends "aot_eager" and
"inductor", timed in alternating rounds; ``--phases`` adds where ember's time goes
(``benchmarks.step_phases``). Run: ``python -m benchmarks.overhead [--phases]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import torch

import ember

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.timing import command_line, environment  # noqa: E402


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


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                               torch.nn.ReLU(), torch.nn.Linear(32, 4))


def training_steps(phases: bool, steps: int = 200, rounds: int = 15) -> None:
    """Prints the per-step microseconds of the MLP's training step, variants in alternating
    rounds (and ember's phases)."""
    from benchmarks.step_phases import phases as step_phases

    torch.set_num_threads(1)  # tiny tensors: intra-op threads only add noise on a shared machine
    model = _mlp()
    params = list(model.parameters())
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    variants: dict[str, Callable] = {"eager": model}
    for backend in ("aot_eager", "inductor"):
        variants[f"ember {backend}"] = ember.compile(model, backend=backend)
        torch._dynamo.reset()
        variants[f"torch.compile {backend}"] = torch.compile(model, backend=backend)

    def step(fn: Callable) -> None:
        for p in params:
            p.grad = None
        torch.nn.functional.mse_loss(fn(x), y).backward()

    for fn in variants.values():
        for _ in range(50):  # ember's inductor picks compiled or eager in a graph's first calls
            step(fn)
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            for _ in range(steps):
                step(fn)
            samples[name].append((time.perf_counter() - start) / steps * 1e6)
    eager = statistics.median(samples["eager"])
    print("| variant | us per step | over eager |\n|---|---|---|")
    for name, ts in samples.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.1f} | {m - eager:+.1f} |")
    if phases:
        for backend in ("aot_eager", "inductor"):
            print(f"\nember {backend}, us per step:\n\n| phase | us |\n|---|---|")
            got = step_phases(variants[f"ember {backend}"], x, y, params)
            print("\n".join(f"| {k} | {v:.1f} |" for k, v in got.items()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", action="store_true", help="where ember's training step time goes")
    args = ap.parse_args(argv)
    rows = []
    for name, (fn, inputs) in workloads().items():
        with torch.no_grad():
            compiled_ember = ember.compile(fn, backend="eager")
            compiled_torch = torch.compile(fn, backend="eager")
            compiled_ember(*inputs)
            compiled_torch(*inputs)
            eager = median_us(lambda: fn(*inputs))
            ours = median_us(lambda: compiled_ember(*inputs))
            theirs = median_us(lambda: compiled_torch(*inputs))
        rows.append((name, eager, ours, theirs))
    print("\n".join(environment("cpu", command_line("benchmarks.overhead", argv))))
    print("| workload | eager us | ember(eager) us (overhead) | torch.compile(eager) us (overhead) |")
    print("|---|---|---|---|")
    for name, eager, ours, theirs in rows:
        print(f"| {name} | {eager:.2f} | {ours:.2f} (+{ours - eager:.2f}) | {theirs:.2f} (+{theirs - eager:.2f}) |")
    print()
    print("Training step (forward, MSE loss, backward) of a 3-layer MLP 16-32-32-4, batch 8, one thread:")
    print()
    training_steps(args.phases)


if __name__ == "__main__":
    main()
