"""Linear + ReLU on the GPU: one aten ``_addmm_activation`` call (the ReLU in cuBLASLt's
epilogue) against ``mm`` plus a fused Triton bias-and-ReLU kernel; the figures behind
``graph.ADDMM_RELU_MAX_NUMEL``, the largest product that takes the first form.

    python -m benchmarks.addmm_relu [--rounds N] [--out FILE]

For each (batch, features, dtype): eager, then ember compiled with the threshold above the
product's size (one aten call) and below it (mm + Triton), in one process in alternating
rounds (``timing.measure``): synchronized per-call latency and back-to-back per call, medians
in us. Eval under ``no_grad``, as a user's inference would call it.
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import tempfile
from typing import Any, Callable

import torch

import ember
from ember_inductor import graph as lowering_graph

from .timing import measure

BATCHES = (1, 8, 64, 256, 1024, 4096)
FEATURES = (256, 1024, 4096)
DTYPES = (torch.float32, torch.bfloat16)


def _compiled(model: torch.nn.Module, x: torch.Tensor, threshold: int) -> Callable[[], Any]:
    """``model`` compiled by ember with ``ADDMM_RELU_MAX_NUMEL = threshold`` (read at compile),
    in a cache folder of its own: the plan cache's key does not hold the threshold."""
    compiled = ember.compile(model, backend="inductor")
    saved = lowering_graph.ADDMM_RELU_MAX_NUMEL, os.environ.get("EMBER_CACHE_DIR")
    lowering_graph.ADDMM_RELU_MAX_NUMEL = threshold
    os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="ember-addmm-relu-")
    try:
        with torch.no_grad():
            compiled(x)
    finally:
        lowering_graph.ADDMM_RELU_MAX_NUMEL = saved[0]
        if saved[1] is None:
            del os.environ["EMBER_CACHE_DIR"]
        else:
            os.environ["EMBER_CACHE_DIR"] = saved[1]

    def run() -> Any:
        with torch.no_grad():
            return compiled(x)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    rows = ["| dtype | batch x features | product elements | eager us | eager b2b | one aten call us (x) | b2b (x) "
            "| mm + Triton us (x) | b2b (x) | faster per call |", "|---|---|---|---|---|---|---|---|---|---|"]
    for dtype in DTYPES:
        for features in FEATURES:
            for batch in BATCHES:
                numel = batch * features
                model = torch.nn.Sequential(torch.nn.Linear(features, features), torch.nn.ReLU()).cuda().to(dtype).eval()
                x = torch.randn(batch, features, device="cuda", dtype=dtype)

                def eager() -> Any:
                    with torch.no_grad():
                        return model(x)
                one = _compiled(copy.deepcopy(model), x, numel)
                split = _compiled(copy.deepcopy(model), x, numel - 1)
                with torch.no_grad():
                    want = model(x)
                    for fn in (one, split):
                        torch.testing.assert_close(fn(), want, rtol=2e-2, atol=2e-2)
                timings = measure([eager, one, split], "cuda", args.rounds, 5)
                lat = [statistics.median(t.latency) * 1e3 for t in timings]
                b2b = [statistics.median(t.per_call_b2b) * 1e3 for t in timings]
                cells = [f"{lat[0]:.1f}", f"{b2b[0]:.1f}"]
                for k in (1, 2):
                    cells += [f"{lat[k]:.1f} ({lat[0] / lat[k]:.2f}x)", f"{b2b[k]:.1f} ({b2b[0] / b2b[k]:.2f}x)"]
                rows.append(f"| {str(dtype).replace('torch.', '')} | {batch}x{features} | {numel} | {' | '.join(cells)} "
                            f"| {'aten' if lat[1] < lat[2] else 'mm + Triton'} |")
                print(rows[-1], flush=True)
                ember.reset()
    text = "\n".join(rows)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
