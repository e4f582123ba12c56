"""CUDA graphs on the GPU: eager vs ember mode="reduce-overhead" vs torch.compile(mode="reduce-overhead").

    python benchmarks/cudagraphs_gpu.py [--budget SECONDS] [--iters N] [--only NAME ...]

Workloads (ANCHORS.md settings): torchvision resnet18 eval and train step (batch 16, 3x128x128)
and densenet121 eval if torchvision imports, HF BERT-base eval (random weights, batch 8, seq 128)
if transformers imports, the GPT train step (benchmarks/models.py), the tiny MLP at batch 1.
Inference runs under no_grad; a train step is forward + cross-entropy + backward inside the
compiled function, with zero_grad(set_to_none) before each call. Each call is timed with CUDA
events and a synchronize (per-call latency, CPU overhead included); median of ``--iters``
calls, variants interleaved. A failing variant or workload is reported, never fatal; workloads
past the time budget are skipped. Writes a markdown table to $OUT/cudagraphs_gpu.md if OUT is
set, and prints it.
"""
from __future__ import annotations

import argparse
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
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember_bench_"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="torchinductor_bench_"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.models import GPT, TinyMLP  # noqa: E402

Build = Callable[[], tuple[torch.nn.Module, tuple, Any]]  # -> model, inputs, targets (None: eval)


def _torchvision(name: str, train: bool) -> Build:
    def build() -> tuple:
        import torchvision.models as tv
        model = getattr(tv, name)().cuda().train(train)
        x = torch.randn(16, 3, 128, 128, device="cuda")
        return model, (x,), torch.randint(0, 1000, (16,), device="cuda") if train else None
    return build


def _bert() -> tuple:
    from transformers import BertConfig, BertModel
    model = BertModel(BertConfig()).cuda().eval()
    ids = torch.randint(0, BertConfig().vocab_size, (8, 128), device="cuda")
    return model, (ids,), None


def _gpt_train() -> tuple:
    model = GPT(vocab=512, d=384, heads=6, layers=6, max_seq=256).cuda().train()
    idx = torch.randint(0, 512, (8, 256), device="cuda")
    return model, (idx,), torch.randint(0, 512, (8, 256), device="cuda")


def _tiny() -> tuple:
    return TinyMLP().cuda().eval(), (torch.randn(1, 64, device="cuda"),), None


WORKLOADS: list[tuple[str, Build]] = [
    ("torchvision resnet18 eval b16 128²", _torchvision("resnet18", False)),
    ("torchvision resnet18 train step", _torchvision("resnet18", True)),
    ("torchvision densenet121 eval", _torchvision("densenet121", False)),
    ("HF BERT-base eval b8 s128", _bert),
    ("GPT 6L d384 train step b8 s256", _gpt_train),
    ("tiny MLP batch 1", _tiny),
]


def _step_fn(model: torch.nn.Module, targets: Any) -> Callable:
    if targets is None:
        return model

    def step(*inputs: Any) -> torch.Tensor:
        out = model(*inputs)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
        loss.backward()
        return loss
    return step


def _caller(fn: Callable, inputs: tuple, model: torch.nn.Module, train: bool) -> Callable[[], Any]:
    if train:
        def call() -> Any:
            model.zero_grad(set_to_none=True)
            return fn(*inputs)
        return call

    def infer() -> Any:
        with torch.no_grad():
            return fn(*inputs)
    return infer


def _variants(model: torch.nn.Module, targets: Any) -> dict[str, Callable]:
    import ember
    step = _step_fn(model, targets)
    out: dict[str, Callable] = {"eager": lambda: step}
    out["ember"] = lambda: ember.compile(step, mode="reduce-overhead")
    out["torch"] = lambda: (torch._dynamo.reset(), torch.compile(step, mode="reduce-overhead"))[1]
    return out


def _time(call: Callable[[], Any]) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def run_workload(build: Build, iters: int, names: list[str]) -> dict[str, tuple[float, float] | str]:
    """name -> (first call s, median ms), or the error text."""
    torch.manual_seed(0)
    model, inputs, targets = build()
    train = targets is not None
    results: dict[str, tuple[float, float] | str] = {}
    calls: dict[str, Callable] = {}
    for name, make in _variants(model, targets).items():
        if name not in names:
            continue
        try:
            fn = make()
            call = _caller(fn, inputs, model, train)
            t0 = time.perf_counter()
            call()
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            for _ in range(3):  # reduce-overhead: warm-up, record, replay
                call()
            calls[name] = call
            results[name] = (first, 0.0)
        except Exception as exc:
            results[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
            traceback.print_exc()
    times: dict[str, list[float]] = {n: [] for n in calls}
    for _ in range(iters):
        for name, call in list(calls.items()):
            try:
                times[name].append(_time(call))
            except Exception as exc:
                results[name] = f"{type(exc).__name__} while timing: {str(exc).splitlines()[0][:120]}"
                del calls[name]
    for name, ts in times.items():
        if name in calls and ts:
            results[name] = (results[name][0], statistics.median(ts))  # type: ignore[index]
    return results


def _cell(res: Any, eager: Any) -> str:
    if res is None:
        return "- | -"
    if isinstance(res, str):
        return f"failed: {res} | -"
    x = f" ({eager[1] / res[1]:.2f}x)" if isinstance(eager, tuple) and res[1] else ""
    return f"{res[1]:.3f}{x} | {res[0]:.1f}"


def report(rows: list[tuple[str, dict]], iters: int, skipped: list[str]) -> str:
    try:
        import triton
        versions = f"triton {triton.__version__}, "
    except ImportError:
        versions = ""
    head = [
        "# CUDA graphs: ember reduce-overhead vs torch.compile reduce-overhead",
        "",
        f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"{versions}python {platform.python_version()}; median of {iters} calls, CUDA events + synchronize.",
        "",
        "| workload | eager ms | ember ms (x) | ember first call s | torch.compile ms (x) | torch.compile first call s |",
        "|---|---|---|---|---|---|",
    ]
    lines, ours, theirs = [], [], []
    for name, res in rows:
        eager = res.get("eager")
        e = f"{eager[1]:.3f}" if isinstance(eager, tuple) else f"failed: {eager}"
        lines.append(f"| {name} | {e} | {_cell(res.get('ember'), eager)} | {_cell(res.get('torch'), eager)} |")
        for key, acc in (("ember", ours), ("torch", theirs)):
            r = res.get(key)
            if isinstance(eager, tuple) and isinstance(r, tuple) and r[1] and "MLP" not in name:
                acc.append(eager[1] / r[1])
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")  # noqa: E731
    tail = ["", f"Geomean speedup over eager (models): ember {geo(ours):.2f}x, torch.compile {geo(theirs):.2f}x."]
    if skipped:
        tail.append(f"Skipped: {', '.join(skipped)}.")
    return "\n".join(head + lines + tail) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=480.0, help="seconds for the whole run")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--only", nargs="*", help="substrings of workload names to run")
    ap.add_argument("--variants", nargs="+", default=["eager", "ember", "torch"],
                    choices=["eager", "ember", "torch"], help="which to run (one compiler per process)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA device")
        return 1
    native_guards.ensure_built()
    deadline = time.perf_counter() + args.budget
    rows: list[tuple[str, dict]] = []
    skipped: list[str] = []
    for name, build in WORKLOADS:
        if args.only and not any(s in name for s in args.only):
            continue
        if time.perf_counter() > deadline:
            skipped.append(f"{name} (time budget)")
            continue
        try:
            res = run_workload(build, args.iters, args.variants)
        except ImportError as exc:
            skipped.append(f"{name} ({exc.name or exc} not importable)")
            continue
        except Exception as exc:
            traceback.print_exc()
            res = {"eager": f"{type(exc).__name__}: {exc}"[:150]}
        rows.append((name, res))
        print(f"{name}: {res}", flush=True)
        torch.cuda.empty_cache()
    text = report(rows, args.iters, skipped)
    print(text)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "cudagraphs_gpu.md"), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
