"""Benchmark suite: eager vs ember (backend="inductor") vs torch.compile, side by side in one process.

    python -m benchmarks.run [--device cpu|cuda] [--mode default|reduce-overhead] [--quick | --iters N]
                             [--b2b CALLS] [--only NAME ...] [--no-torch-compile] [--budget SECONDS]

On the GPU machine: ``python -m benchmarks.run --device cuda --budget 400`` and again with
``--mode reduce-overhead`` (CUDA graphs; not applicable on CPU). fp32 and bf16 workloads,
torchvision resnet18 and densenet121 when torchvision imports, HF BERT-base when transformers
does. A workload that fails is logged and skipped.

The three variants are timed in alternating rounds (``benchmarks.timing``): per workload the
first-call (compile) time with fresh caches, the synchronized per-call latency (median, p10,
p90), the back-to-back throughput (calls in a row, one synchronize), the speedups over eager of
both, and a geomean row per kind. The markdown table, headed by date, host, versions and the
command, is printed and written to ``$OUT`` when set, else benchmarks/results/. Inference
workloads run under ``torch.no_grad``; training workloads run forward + loss + backward with
the grads set to None before each call. Sizes follow ../shared/ANCHORS.md (CPU: kernels 2^22
floats / 1024x1024, ResNet-18 batch 4 at 64x64, GPT 2 layers d192 batch 1 seq 128).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import os
import statistics
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

from ember import native_guards  # noqa: E402

# the C++ guard helper is built once per machine (native_guards), not per fresh cache below
os.environ.setdefault("EMBER_NATIVE_DIR", native_guards.native_dir())
# fresh compile caches for both compilers, so first-call times are cold compiles
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember_bench_"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="torchinductor_bench_"))

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.models import GPT, GeluMLP, ResNet18, TinyMLP  # noqa: E402
from benchmarks.timing import Timing, command_line, environment, geomean, measure, sync  # noqa: E402


@dataclasses.dataclass
class Workload:
    name: str
    kind: str  # "kernel" or "model"
    build: Callable[[str], tuple[Any, tuple, bool]]  # device -> (fn or module, inputs, training)
    bytes_moved: int = 0  # for a GB/s column


def _chain(x: torch.Tensor) -> torch.Tensor:
    for _ in range(4):
        x = torch.relu(x * 1.1 + 0.1) - torch.sigmoid(x) * 0.5
    return x


def _trig_chain(x: torch.Tensor) -> torch.Tensor:
    """Issue 26's chain: three transcendental functions of one value."""
    return (torch.sin(x) * 2 + torch.cos(x)).relu() * torch.sigmoid(x) - 1


def _meanstd(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True)


def workloads(device: str) -> list[Workload]:
    gpu = device == "cuda"
    n = 1 << (26 if gpu else 22)
    rows = 8192 if gpu else 1024
    cols = 4096 if gpu else 1024

    def vec(dev: str) -> torch.Tensor:
        return torch.randn(n, device=dev)

    def mat(dev: str) -> torch.Tensor:
        return torch.randn(rows, cols, device=dev)

    def ln_module(dev: str) -> tuple:
        return torch.nn.LayerNorm(cols).to(dev), (mat(dev),), False

    def ln_bf16(dev: str) -> tuple:
        return torch.nn.LayerNorm(cols).to(dev, torch.bfloat16), (mat(dev).bfloat16(),), False

    rb, rs = (16, 128) if gpu else (4, 64)
    gpt_cfg = dict(vocab=512, d=384, heads=6, layers=6, max_seq=256) if gpu else dict(
        vocab=512, d=192, heads=6, layers=2, max_seq=128)
    gb, gs = (8, 256) if gpu else (1, 128)
    mlp_b = 4096 if gpu else 64
    out = [
        Workload(f"sincos 2^{int(math.log2(n))}", "kernel",
                 lambda d: (lambda x: torch.sin(x) + torch.cos(x), (vec(d),), False), 8 * n),
        Workload(f"pointwise chain 2^{int(math.log2(n))}", "kernel", lambda d: (_chain, (vec(d),), False), 8 * n),
        Workload(f"sin/cos/sigmoid chain 2^{int(math.log2(n))}", "kernel", lambda d: (_trig_chain, (vec(d),), False),
                 8 * n),
        Workload(f"softmax {rows}x{cols}", "kernel",
                 lambda d: (lambda x: torch.softmax(x, -1), (mat(d),), False), 8 * rows * cols),
        Workload(f"layernorm {rows}x{cols}", "kernel", ln_module, 8 * rows * cols),
        Workload(f"mean/std norm {rows}x{cols}", "kernel", lambda d: (_meanstd, (mat(d),), False),
                 8 * rows * cols),
        Workload(f"gelu MLP {mlp_b}x256", "kernel",
                 lambda d: (GeluMLP().to(d), (torch.randn(mlp_b, 256, device=d),), False)),
        Workload("tiny MLP batch 1", "kernel",
                 lambda d: (TinyMLP().to(d), (torch.randn(1, 64, device=d),), False)),
        Workload(f"resnet18 eval b{rb} {rs}²", "model",
                 lambda d: (ResNet18().to(d).eval(), (torch.randn(rb, 3, rs, rs, device=d),), False)),
        Workload("resnet18 train step", "model",
                 lambda d: (ResNet18().to(d).train(), (torch.randn(rb, 3, rs, rs, device=d),), True)),
        Workload("GPT eval", "model",
                 lambda d: (GPT(**gpt_cfg).to(d).eval(), (torch.randint(0, 512, (gb, gs), device=d),), False)),
        Workload("GPT train step", "model",
                 lambda d: (GPT(**gpt_cfg).to(d).train(), (torch.randint(0, 512, (gb, gs), device=d),), True)),
    ]
    if not gpu:
        return out
    out += [
        Workload(f"softmax {rows}x{cols} bf16", "kernel",
                 lambda d: (lambda x: torch.softmax(x, -1), (mat(d).bfloat16(),), False), 4 * rows * cols),
        Workload(f"layernorm {rows}x{cols} bf16", "kernel", ln_bf16, 4 * rows * cols),
        Workload("GPT eval bf16", "model",
                 lambda d: (GPT(**gpt_cfg).to(d, torch.bfloat16).eval(),
                            (torch.randint(0, 512, (gb, gs), device=d),), False)),
    ]
    try:
        import torchvision
        out += [
            Workload("torchvision resnet18 eval b16 128²", "model",
                     lambda d: (torchvision.models.resnet18().to(d).eval(),
                                (torch.randn(16, 3, 128, 128, device=d),), False)),
            Workload("torchvision resnet18 train step", "model",
                     lambda d: (torchvision.models.resnet18().to(d).train(),
                                (torch.randn(16, 3, 128, 128, device=d),), True)),
            Workload("torchvision densenet121 eval b16 128²", "model",
                     lambda d: (torchvision.models.densenet121().to(d).eval(),
                                (torch.randn(16, 3, 128, 128, device=d),), False)),
        ]
    except ImportError:
        pass
    try:
        from transformers import BertConfig, BertModel
        out.append(Workload("HF BERT-base eval b8 s128", "model",
                            lambda d: (BertModel(BertConfig()).to(d).eval(),
                                       (torch.randint(0, BertConfig().vocab_size, (8, 128), device=d),), False)))
    except ImportError:
        pass
    return out


def step_runner(fn: Callable, inputs: tuple, training: bool, module: Any) -> Callable[[], Any]:
    if training:
        params = list(module.parameters())

        def step() -> Any:
            for p in params:
                p.grad = None
            loss = fn(*inputs).float().pow(2).mean()
            loss.backward()
            return loss
        return step

    def infer() -> Any:
        with torch.no_grad():
            return fn(*inputs)
    return infer


#: untimed calls after the first, for every variant: ember times a CPU graph's compiled and eager
#: versions in its first 2 + 2 * TRIALS calls and keeps the faster (ember_inductor.measured)
WARMUP_CALLS = 9


def copy_bandwidth(device: str, n: int) -> float:
    x = torch.randn(n, device=device)
    y = torch.empty_like(x)
    times = []
    for _ in range(30):
        sync(device)
        t = time.perf_counter()
        y.copy_(x)
        sync(device)
        times.append(time.perf_counter() - t)
    return 8 * n / statistics.median(times) / 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--mode", choices=["default", "reduce-overhead"], default="default",
                    help="compile mode of ember and torch.compile (reduce-overhead: CUDA graphs, CUDA only)")
    ap.add_argument("--quick", action="store_true", help="fewer timed rounds")
    ap.add_argument("--iters", type=int, default=None,
                    help="timed rounds per workload (default 30, 10 with --quick)")
    ap.add_argument("--b2b", type=int, default=10, help="back-to-back calls per round (throughput)")
    ap.add_argument("--only", nargs="*", help="substrings of workload names to run")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds after which no further workload is started")
    args = ap.parse_args(argv)
    command = command_line("benchmarks.run", argv)
    device, mode = args.device, args.mode
    if mode == "reduce-overhead" and device != "cuda":
        print("--mode reduce-overhead records CUDA graphs: not applicable on CPU (use --device cuda)")
        return 0
    import ember
    native_guards.ensure_built()
    rounds = args.iters or (10 if args.quick else 30)
    compile_mode = None if mode == "default" else mode
    torch.manual_seed(0)
    rows = []
    started = time.perf_counter()
    for w in workloads(device):
        if args.only and not any(s in w.name for s in args.only):
            continue
        if args.budget is not None and time.perf_counter() - started > args.budget:
            print(f"budget of {args.budget:.0f} s spent; skipping {w.name}", flush=True)
            continue
        try:
            obj, inputs, training = w.build(device)
            module = obj if isinstance(obj, torch.nn.Module) else None
            variants: list[Callable] = [obj, ember.compile(obj, backend="inductor", mode=compile_mode)]
            if not args.no_torch_compile:
                torch._dynamo.reset()
                variants.append(torch.compile(obj, mode=compile_mode))
            runs = [step_runner(fn, inputs, training, module) for fn in variants]
            results = measure(runs, device, rounds, WARMUP_CALLS, args.b2b)
        except Exception:
            print(f"workload {w.name} failed:\n{traceback.format_exc()}", flush=True)
            continue
        rows.append((w, results))
        print(_row(w, results), flush=True)
    bw = copy_bandwidth(device, 1 << (26 if device == "cuda" else 22))
    report = _report(rows, device, mode, bw, rounds, args.b2b, command)
    print(report)
    out_dir = os.environ.get("OUT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M")
    suffix = ("_reduce-overhead" if mode != "default" else "") + ("_quick" if args.quick else "")
    with open(os.path.join(out_dir, f"{device}_{stamp}{suffix}.md"), "w") as f:
        f.write(report)
    return 0


def _cell(t: Timing, eager: Timing, gbs: int = 0) -> str:
    """Latency median [p10-p90] (speedup) | back-to-back per call (speedup)."""
    bw = f", {gbs / t.median / 1e6:.0f} GB/s" if gbs else ""
    return (f"{t.median:.3f} [{t.quantile(0.1):.3f}-{t.quantile(0.9):.3f}] ({eager.median / t.median:.2f}x{bw}) | "
            f"{t.throughput:.3f} ({eager.throughput / t.throughput:.2f}x)")


def _row(w: Workload, results: list[Timing]) -> str:
    eager, ours = results[0], results[1]
    theirs = results[2] if len(results) > 2 else None
    tc = f"{_cell(theirs, eager)} | {theirs.first_s:.1f}" if theirs else "- | - | -"
    return (f"| {w.name} | {eager.median:.3f} [{eager.quantile(0.1):.3f}-{eager.quantile(0.9):.3f}] | "
            f"{eager.throughput:.3f} | {_cell(ours, eager, w.bytes_moved)} | {ours.first_s:.1f} | {tc} |")


def _report(rows: list, device: str, mode: str, bw: float, rounds: int, b2b: int, command: str) -> str:
    timer = "CUDA events" if device == "cuda" else "perf_counter"
    head = [
        f"# eager vs ember (inductor) vs torch.compile: {device}, mode {mode}",
        "",
        *environment(device, command),
        f"- method: one process, {rounds} alternating rounds, the order rotating (eager ember torch.compile, ember torch.compile eager, ...); "
        f"latency = one synchronized call ({timer}), median [p10-p90] ms; b2b = {b2b} calls back to back "
        f"then one synchronize, ms per call (median of rounds); (x) = speedup over eager; first call = "
        f"compile with fresh caches, s. Copy bandwidth in the same run: {bw:.0f} GB/s.",
        "",
        "| workload | eager ms | eager b2b | ember ms (x) | ember b2b (x) | ember first s "
        "| torch.compile ms (x) | torch.compile b2b (x) | torch.compile first s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines = [_row(*r) for r in rows]
    summary = []
    for kind in ("kernel", "model"):
        picked = [res for w, res in rows if w.kind == kind]
        if not picked:
            continue
        cells = []
        for k, name in ((1, "ember"), (2, "torch.compile")):
            lat = [r[0].median / r[k].median for r in picked if len(r) > k]
            thr = [r[0].throughput / r[k].throughput for r in picked if len(r) > k]
            if lat:
                cells.append(f"{geomean(lat):.2f}x | {geomean(thr):.2f}x")
            else:
                cells.append("- | -")
        summary.append(f"| **geomean, {kind}s** | | | {cells[0]} | | {cells[1]} | |")
    return "\n".join(head + lines + summary) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
