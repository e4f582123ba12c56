"""Dynamic against specialised inductor graphs on the same size (issue 25's "within 10%").

    python -m benchmarks.dynamic_shapes [--device cpu|cuda] [--iters N]

For each workload the aten graph is traced twice, with static sizes (``make_fx`` fake) and with
symbolic ones (``tracing_mode="symbolic"``, as ember_aot hands a dynamic capture to the
inductor), both compiled by ``ember_inductor.compile_aten_graph``; the median latency of each
on the same inputs (best of 5 interleaved rounds' medians) is printed side by side, with the dynamic graph's latency at a second size
it was not compiled for (no recompilation: the same kernels). Workloads: a pointwise chain, a
softmax (row reduction), a layer norm, the benchmark GPT's block forward, and its training step
(forward and backward in one joint graph). A markdown table goes to stdout and, when set, to
``$OUT/dynamic_shapes.md``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember_bench_dynamic_"))

import torch  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.models import GPTBlock  # noqa: E402
from ember_inductor.compile_fx import CompiledGraph, compile_aten_graph  # noqa: E402
from ember_inductor.decompositions import decompositions  # noqa: E402


def _trace(fn: Callable, inputs: list, mode: str, grad: bool) -> torch.fx.GraphModule:
    if grad:
        from ember_aot.decompositions import for_joint
        return make_fx(fn, decomposition_table=for_joint(decompositions()), tracing_mode=mode)(*inputs)
    with torch.no_grad():
        return make_fx(torch.func.functionalize(fn, remove="mutations"), decomposition_table=decompositions(),
                       tracing_mode=mode)(*inputs)


def _lifted(module: torch.nn.Module, grad: bool) -> tuple[list, Callable]:
    names = [n for n, _ in module.named_parameters()]
    params = [p.detach().requires_grad_(grad) for _, p in module.named_parameters()]

    def forward(*args: Any) -> Any:
        return torch.func.functional_call(module, dict(zip(names, args[:len(names)])), tuple(args[len(names):]))
    if not grad:
        return params, forward

    def step(*args: Any) -> list:
        loss = forward(*args).pow(2).mean()
        return [loss, *torch.autograd.grad(loss, list(args[:len(names)]))]
    return params, step


def _gpt_block(d: int, heads: int) -> torch.nn.Module:
    """HF's GPT-2 block (SDPA attention, no dropout); without transformers, the benchmark
    GPT's block (whose explicit mask makes make_fx specialise the length: its graph is static)."""
    try:
        import transformers
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    except ImportError:
        return GPTBlock(d, heads)
    cfg = transformers.GPT2Config(n_embd=d, n_head=heads, attn_implementation="sdpa", resid_pdrop=0.0,
                                  attn_pdrop=0.0, embd_pdrop=0.0)

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = GPT2Block(cfg)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = self.block(x)
            return out[0] if isinstance(out, tuple) else out
    return Block()


def workloads(device: str) -> list[tuple[str, Callable, Callable, bool]]:
    """(name, fn, inputs(size) -> list, grad); ``size`` is the varying length."""
    gpu = device == "cuda"
    rows, cols = (8192, 4096) if gpu else (1024, 1024)
    d, heads, batch = (384, 6, 8) if gpu else (192, 6, 1)

    def chain(x: torch.Tensor) -> torch.Tensor:
        for _ in range(4):
            x = torch.relu(x * 1.1 + 0.1) - torch.sigmoid(x) * 0.5
        return x

    def mat(n: int) -> list:
        return [torch.randn(n, cols, device=device)]

    ln = torch.nn.LayerNorm(cols).to(device)
    ln_params, ln_fn = _lifted(ln, False)
    eval_params, eval_fn = _lifted(_gpt_block(d, heads).to(device).eval(), False)
    train_params, train_fn = _lifted(_gpt_block(d, heads).to(device).train(), True)
    return [
        (f"pointwise chain {rows}x{cols}", chain, mat, False),
        (f"softmax {rows}x{cols}", lambda x: torch.softmax(x, -1), mat, False),
        (f"layernorm {rows}x{cols}", ln_fn, lambda n: [*ln_params, *mat(n)], False),
        (f"GPT block eval b{batch} d{d}", eval_fn,
         lambda n: [*eval_params, torch.randn(batch, n // 8, d, device=device)], False),
        (f"GPT block train step b{batch} d{d}", train_fn,
         lambda n: [*train_params, torch.randn(batch, n // 8, d, device=device)], True),
    ]


def median_ms(fn: Callable, inputs: list, iters: int, device: str) -> float:
    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()
    for _ in range(3):
        fn(*inputs)
    times = []
    for _ in range(iters):
        sync()
        t0 = time.perf_counter()
        fn(*inputs)
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def interleaved(runs: list[tuple[Callable, list]], iters: int, device: str, rounds: int = 5) -> list[float]:
    """Per run, the best of ``rounds`` medians, the runs alternating round by round (on a shared
    machine, load that comes and goes then hits each run alike)."""
    best = [float("inf")] * len(runs)
    for _ in range(rounds):
        for k, (fn, inputs) in enumerate(runs):
            best[k] = min(best[k], median_ms(fn, inputs, max(1, iters // rounds), device))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--iters", type=int, default=30)
    args = parser.parse_args()
    rows = ["| workload | specialised ms | dynamic ms | dynamic / specialised | dynamic at 3/4 size ms |",
            "|---|---|---|---|---|"]
    full = 8192 if args.device == "cuda" else 1024
    for name, fn, make, grad in workloads(args.device):
        try:
            inputs, other = make(full), make(full * 3 // 4 + 1)
            static = compile_aten_graph(_trace(fn, inputs, "fake", grad), inputs)
            dynamic = compile_aten_graph(_trace(fn, inputs, "symbolic", grad), inputs)
            if not isinstance(dynamic, CompiledGraph):
                print(f"{name}: compiled per shape ({getattr(dynamic, 'reason', '')})", file=sys.stderr)
            t_static, t_dynamic, t_other = interleaved([(static, inputs), (dynamic, inputs), (dynamic, other)],
                                                       args.iters, args.device)
            rows.append(f"| {name} | {t_static:.3f} | {t_dynamic:.3f} | {t_dynamic / t_static:.2f} | {t_other:.3f} |")
        except Exception as exc:  # one failing workload must not hide the others
            rows.append(f"| {name} | failed: {type(exc).__name__}: {str(exc)[:80]} | | | |")
        print(rows[-1], flush=True)
    device = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    table = "\n".join([f"Dynamic vs specialised inductor graphs on {device}, torch {torch.__version__}", ""] + rows)
    print("\n" + table)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "dynamic_shapes.md"), "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
