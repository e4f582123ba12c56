"""Benchmark suite: eager vs ember (backend="inductor") vs torch.compile, side by side in one process.

    python -m benchmarks.run [--device cpu|cuda] [--quick | --iters N] [--only NAME ...] [--no-torch-compile]
                             [--budget SECONDS]

On the GPU machine: ``python -m benchmarks.run --device cuda --budget 400`` (CUDA-event timing,
fp32 and bf16 workloads, torchvision resnet18 and densenet121 when torchvision imports, HF
BERT-base when transformers does, a back-to-back column for kernels; the table goes to ``$OUT``
when set). A workload that fails is logged and skipped.

For every workload: first-call time (compile, with fresh caches) and median latency, plus the
speedup over eager; a markdown table is printed and written to benchmarks/results/. Inference
workloads run under ``torch.no_grad``; training workloads run forward + loss + backward with
zero_grad before each call. Sizes follow ../shared/ANCHORS.md (CPU: kernels 2^22 floats /
1024x1024, ResNet-18 batch 4 at 64x64, GPT 2 layers d192 batch 1 seq 128).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import os
import platform
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


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


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


def _time_call(run: Callable[[], Any], device: str) -> float:
    """Milliseconds of one synchronized call (CUDA events on the GPU)."""
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)
    t = time.perf_counter()
    run()
    return (time.perf_counter() - t) * 1e3


def back_to_back(run: Callable[[], Any], calls: int = 30) -> float:
    """Milliseconds per call of ``calls`` GPU calls issued without synchronizing in between."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        run()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


#: untimed calls after the first, for every variant: ember times a CPU graph's compiled and eager
#: versions in its first 2 + 2 * TRIALS calls and keeps the faster (ember_inductor.measured)
WARMUP_CALLS = 9


def measure(variants: list[Callable], inputs: tuple, training: bool, module: Any,
            device: str, iters: int) -> list[tuple[float, float]]:
    """(first call seconds, median ms) per variant; timed calls are interleaved round-robin so
    that load from other processes on a shared machine hits every variant alike."""
    runs = [step_runner(fn, inputs, training, module) for fn in variants]
    firsts = []
    for run in runs:
        t0 = time.perf_counter()
        run()
        _sync(device)
        firsts.append(time.perf_counter() - t0)
        for _ in range(WARMUP_CALLS):
            run()
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(iters):
        for k, run in enumerate(runs):
            times[k].append(_time_call(run, device))
    out = [(f, statistics.median(ts)) for f, ts in zip(firsts, times)]
    if device == "cuda" and not training:
        out = [(f, m, back_to_back(run)) for (f, m), run in zip(out, runs)]
    return out


def copy_bandwidth(device: str, n: int) -> float:
    x = torch.randn(n, device=device)
    y = torch.empty_like(x)
    times = []
    for _ in range(30):
        _sync(device)
        t = time.perf_counter()
        y.copy_(x)
        _sync(device)
        times.append(time.perf_counter() - t)
    return 8 * n / statistics.median(times) / 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--quick", action="store_true", help="fewer timed calls")
    ap.add_argument("--iters", type=int, default=None,
                    help="timed rounds per workload (default 30, 10 with --quick)")
    ap.add_argument("--only", nargs="*", help="substrings of workload names to run")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds after which no further workload is started")
    args = ap.parse_args(argv)
    import ember
    native_guards.ensure_built()

    device = args.device
    iters = args.iters or (10 if args.quick else 30)
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
            variants: list[Callable] = [obj, ember.compile(obj, backend="inductor")]
            if not args.no_torch_compile:
                torch._dynamo.reset()
                variants.append(torch.compile(obj))
            results = measure(variants, inputs, training, module, device, iters)
        except Exception:
            print(f"workload {w.name} failed:\n{traceback.format_exc()}", flush=True)
            continue
        eager, ours = results[0], results[1]
        theirs = results[2] if len(results) > 2 else None
        rows.append((w, eager, ours, theirs))
        print(_row(w, eager, ours, theirs), flush=True)
    bw = copy_bandwidth(device, 1 << (26 if device == "cuda" else 22))
    report = _report(rows, device, bw, iters)
    print(report)
    out_dir = os.environ.get("OUT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M")
    with open(os.path.join(out_dir, f"{device}_{stamp}{'_quick' if args.quick else ''}.md"), "w") as f:
        f.write(report)
    return 0


def _row(w: Workload, eager: tuple, ours: tuple, theirs: tuple | None) -> str:
    gbs = f", {w.bytes_moved / ours[1] / 1e6:.0f} GB/s" if w.bytes_moved else ""
    tc = f"{theirs[1]:.3f} ({eager[1] / theirs[1]:.2f}x) | {theirs[0]:.1f}" if theirs else "- | -"
    row = (f"| {w.name} | {eager[1]:.3f} | {ours[1]:.3f} ({eager[1] / ours[1]:.2f}x{gbs}) | "
           f"{ours[0]:.1f} | {tc} |")
    if len(ours) > 2:  # back-to-back ms per call on the GPU: eager, ember, torch.compile
        b2b = [eager[2], ours[2]] + ([theirs[2]] if theirs else [])
        gb = f" ({w.bytes_moved / ours[2] / 1e6:.0f} GB/s)" if w.bytes_moved else ""
        row += " " + " / ".join(f"{t:.3f}" for t in b2b) + gb + " |"
    return row


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _report(rows: list, device: str, bw: float, iters: int) -> str:
    head = [
        f"# ember inductor vs torch.compile ({device})",
        "",
        f"{datetime.date.today()}, torch {torch.__version__}, python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, median of {iters} calls. Copy bandwidth in the same run: {bw:.0f} GB/s.",
        "",
    ]
    if device == "cuda":
        import triton
        head[2] += (f" {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}, triton {triton.__version__};"
                    " latency per synchronized call with CUDA events; b2b = 30 calls back to back.")
        head += ["| workload | eager ms | ember ms (x) | ember first call s | torch.compile ms (x) | "
                 "torch.compile first call s | b2b ms eager / ember / torch.compile |",
                 "|---|---|---|---|---|---|---|"]
    else:
        head += ["| workload | eager ms | ember ms (x) | ember first call s | torch.compile ms (x) | "
                 "torch.compile first call s |", "|---|---|---|---|---|---|"]
    lines = [_row(*r) for r in rows]
    summary = []
    for kind in ("kernel", "model"):
        ours = [e[1] / o[1] for w, e, o, t in rows if w.kind == kind]
        theirs = [e[1] / t[1] for w, e, o, t in rows if w.kind == kind and t]
        summary.append(f"Geomean over eager, {kind}s: ember {_geomean(ours):.2f}x, "
                       f"torch.compile {_geomean(theirs):.2f}x.")
    return "\n".join(head + lines + [""] + summary) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
