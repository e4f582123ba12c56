"""Guard cost per call with symbolic sizes, against the static guard of the same call.

    python -m benchmarks.guard_cost [--rounds 15] [--calls 2000]

Times the guard function alone (``entry.guard(L)`` of the entry that accepts the call, on the
locals the call binds; ``--calls`` calls back to back per round, every guard once per round,
alternating, ``benchmarks.timing.measure``; the median over rounds) of (a) a small function of three
dynamic inputs with duck sizing, bounds, a divisibility and a linear relation, (a') the same on
2-d inputs, whose ``view`` adds relations over a product of sizes (Python checks), and (b) the
decode step of the GPT-2 of ``benchmarks.generate`` (4 layers, hidden 256), each compiled
``dynamic=False`` (a static guard: every size in the tensor check) and with symbolic sizes. The
table says how many of the shape relations the C++ tensor check holds and how many stay Python
checks. Guards check tensors in C++ (``ember.native_guards``).
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
from typing import Any, Callable

import torch

import ember
from ember import native_guards

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.generate import _inputs, _model  # noqa: E402
from benchmarks.timing import command_line, environment, measure  # noqa: E402


def small(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Duck sizing (x, y), bounds, ``x.size(0) % 2 == 0`` from a view, a linear branch."""
    h = (x + y).view(2, -1, *x.shape[1:]).sum(0)
    return h.sum(0) + z[:4].sum() if x.size(0) + z.size(0) > 10 else h.sum(0)


def _accepting(compiled: Callable, L: dict) -> Any:
    entries = [e for e in compiled.__ember__.entries if e.guard(L) is not None]
    assert entries, "no entry accepts the call"
    return entries[0]


Guarded = dict[str, tuple[Any, dict]]  # variant -> (entry, the locals its guard accepts)


def small_function(*shape: int) -> Guarded:
    """``small`` on x and y of sizes (n, *shape), z of size m."""
    guarded = {}
    for label, dynamic in (("static", False), ("symbolic", True)):
        compiled = ember.compile(small, backend="eager", dynamic=dynamic)
        for n, m in ((8, 6), (12, 9)):  # the second call has symbolic sizes with dynamic=True
            args = (torch.randn(n, *shape), torch.randn(n, *shape), torch.randn(m))
            compiled(*args)
        L = compiled.__ember__.bind(*args)
        guarded[label] = (_accepting(compiled, L), L)
    return guarded


def gpt2_decode(step: int = 4, tokens: int = 6) -> Guarded:
    """The guard of GPT-2's ``step``-th decode step: ``generate`` runs once to compile every
    step, then again, binding step ``step``'s locals to a copy of its arguments (the call
    itself grows the KV cache)."""
    guarded = {}
    for label, dynamic in (("static", False), ("symbolic", None)):
        model = _model("cpu")
        compiled = ember.compile(model.forward, backend="eager", dynamic=dynamic)
        calls = {"n": 0}

        def forward(*args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == tokens + step:  # the second generate's decode step ``step``
                L = compiled.__ember__.bind(model, *copy.deepcopy(args), **copy.deepcopy(kwargs))
                guarded[label] = (_accepting(compiled, L), L)
            return compiled(*args, **kwargs)

        model.forward = forward
        for _ in range(2):
            model.generate(**_inputs("cpu"), max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                           pad_token_id=0)
    return guarded


def relations(entry: Any) -> tuple[int, int]:
    """(shape relations in the C++ check, shape relations in Python) of an entry's guard."""
    total = sum(d.startswith("shape relation") for d in entry.guard_descriptions)
    in_cpp = sum(getattr(v, "relations", 0) for k, v in entry.guard.__globals__.items()
                 if k.startswith("___tensor_match"))
    return in_cpp, total - in_cpp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000, help="guard calls per round")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    native_guards.ensure_built()
    with torch.no_grad():  # guards check grad mode: every guard is built and timed in one mode
        workloads = {"small function, 3 dynamic 1-d inputs": small_function(),
                     "the same, 2-d inputs (a product of sizes)": small_function(4),
                     "GPT-2 decode step (4 layers, hidden 256)": gpt2_decode()}
        runs = [(name, label, entry.guard, L) for name, guarded in workloads.items()
                for label, (entry, L) in guarded.items()]
        assert all(guard(L) is not None for _, _, guard, L in runs), "a guard rejects the call it is timed on"
        timings = measure([lambda g=g, L=L: g(L) for _, _, g, L in runs], "cpu", args.rounds, 100, args.calls)
    us = {(name, label): t.throughput * 1e3 for (name, label, _, _), t in zip(runs, timings)}
    print("\n".join(environment("cpu", command_line("benchmarks.guard_cost", argv))))
    print("| workload | static guard us | symbolic guard us | symbolic - static us | relations in C++ / Python |")
    print("|---|---|---|---|---|")
    for name, guarded in workloads.items():
        static, symbolic = us[name, "static"], us[name, "symbolic"]
        in_cpp, python = relations(guarded["symbolic"][0])
        print(f"| {name} | {static:.2f} | {symbolic:.2f} | {symbolic - static:+.2f} | {in_cpp} / {python} |")


if __name__ == "__main__":
    main()
