"""A model's guard per call: reads in Python against reads in C++ (``SourceWalk``).

    python -m benchmarks.guard_walk [--rounds 15] [--calls 500]

Each model is compiled three times (backend "eager", under ``torch.no_grad()``), so that its
guard is written three ways: all checks in Python (``config.native_guards`` off); the tensor
checks in C++ (``TensorMatch``) and the reads of modules, parameters and attributes in Python;
both in C++ (``SourceWalk`` then ``TensorMatch``, the default). Times the guard function alone on
the locals of the call it accepts, the three in alternating rounds (``benchmarks.timing``),
median us per call. Models: the ResNet-18 and GPT of ``benchmarks.models``, the 4-layer GPT-2
decode step of ``benchmarks.guard_cost``, and torchvision's densenet121 when it is installed.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
from typing import Callable, Iterator

import torch

import ember
from ember import config, native_guards

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.guard_cost import _accepting, gpt2_decode  # noqa: E402
from benchmarks.models import GPT, ResNet18  # noqa: E402
from benchmarks.timing import command_line, environment, measure  # noqa: E402

VARIANTS = ("python", "tensors in C++", "walk + tensors in C++")


@contextlib.contextmanager
def _variant(name: str) -> Iterator[None]:
    old_native, old_walk = config.native_guards, native_guards.source_walk
    config.native_guards = name != "python"
    if name == "tensors in C++":
        native_guards.source_walk = lambda: None
    try:
        yield
    finally:
        config.native_guards, native_guards.source_walk = old_native, old_walk


def _module_guard(make: Callable[[], torch.nn.Module], example: Callable[[], tuple]) -> tuple[Callable, dict]:
    model = make().eval()
    compiled = ember.compile(model, backend="eager")
    args = example()
    compiled(*args)
    call = compiled.__dict__["_ember_call"]
    L = call.__ember__.bind(*args)
    return _accepting(call, L).guard, L


def _densenet() -> torch.nn.Module:
    from torchvision.models import densenet121
    return densenet121()


def workloads() -> dict[str, Callable[[], tuple[Callable, dict]]]:
    out = {
        "ResNet-18 eval": lambda: _module_guard(ResNet18, lambda: (torch.randn(1, 3, 32, 32),)),
        "GPT eval (6 layers)": lambda: _module_guard(GPT, lambda: (torch.randint(0, 100, (1, 16)),)),
        "GPT-2 decode step (4 layers)": _gpt2,
    }
    if importlib.util.find_spec("torchvision") is not None:
        out["torchvision densenet121 eval"] = lambda: _module_guard(_densenet, lambda: (torch.randn(1, 3, 32, 32),))
    return out


def _gpt2() -> tuple[Callable, dict]:
    entry, L = gpt2_decode()["static"]
    return entry.guard, L


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=500, help="guard calls per round")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    native_guards.ensure_built()
    runs: list[tuple[str, str, Callable, dict]] = []
    with torch.no_grad():
        for name, build in workloads().items():
            for variant in VARIANTS:
                with _variant(variant):
                    guard, L = build()
                runs.append((name, variant, guard, L))
        assert all(guard(L) is not None for _, _, guard, L in runs), "a guard rejects the call it is timed on"
        timings = measure([lambda g=g, L=L: g(L) for _, _, g, L in runs], "cpu", args.rounds, 20, args.calls)
    us = {(name, variant): t.throughput * 1e3 for (name, variant, _, _), t in zip(runs, timings)}
    lines = {(name, variant): len(guard.__ember_source__.splitlines()) for name, variant, guard, _ in runs}
    print("\n".join(environment("cpu", command_line("benchmarks.guard_walk", argv))))
    print("| model | " + " | ".join(f"{v} us" for v in VARIANTS) + " | python / walk |")
    print("|---|---|---|---|---|")
    for name in dict.fromkeys(n for n, _, _, _ in runs):
        cells = " | ".join(f"{us[name, v]:.1f}" for v in VARIANTS)
        print(f"| {name} | {cells} | {us[name, VARIANTS[0]] / us[name, VARIANTS[2]]:.1f}x |")


if __name__ == "__main__":
    main()
