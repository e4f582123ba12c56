"""bf16 training at real size: eager, torch.compile and ember, step time, tokens/s and MFU.

    python -m benchmarks.train_bf16 [--models gpt2 llama1b] [--precisions autocast bf16] [--steps 10]

The compiled function is what users compile: forward with labels, the loss and ``loss.backward()``;
the optimizer (AdamW, ``fused=True``) steps outside it, eagerly, as in most training loops.
``gpt2``: transformers' GPT2LMHeadModel (124M), batch 8 x 1024 tokens; ``llama1b``: the Llama-style
model of ``benchmarks.llama`` at its 1B shape, batch 4 x 2048 tokens. ``autocast``: float32
parameters under ``torch.autocast("cuda", torch.bfloat16)``; ``bf16``: parameters in bfloat16.
Each compiler runs in its own child process, which times eager on the same model too. The step
time is the median of ``--steps`` synchronized steps after 3 warm-up steps (the first compiles).
MFU = 6 x parameters x tokens per step / step time / the bf16 dense peak (``PEAK``, the H100/H200
datasheet's 989 TFLOP/s). A markdown table goes to stdout and to ``$OUT/train_bf16.md`` when set.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from typing import Any, Callable

import torch
import torch.nn.functional as F

from benchmarks.timing import command_line, environment

PEAK = 989e12
WORKLOADS = {"gpt2": (8, 1024), "llama1b": (4, 2048)}


def _model(name: str, precision: str) -> tuple[torch.nn.Module, Callable]:
    """The model on the GPU and its loss function ``(model, ids) -> loss``."""
    torch.manual_seed(0)
    if name == "gpt2":
        import transformers
        with torch.device("cuda"):
            model = transformers.GPT2LMHeadModel(transformers.GPT2Config())

        def loss_of(m: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
            return m(input_ids=ids, labels=ids).loss
    else:
        from benchmarks.llama import build
        model = build("1b", "cuda", torch.float32)

        def loss_of(m: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
            logits = m(ids[:, :-1])
            return F.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    return model.train(), loss_of


def _step_fn(model: torch.nn.Module, loss_of: Callable, precision: str) -> Callable:
    def step(ids: torch.Tensor) -> torch.Tensor:
        ctx = torch.autocast("cuda", torch.bfloat16) if precision == "autocast" else contextlib.nullcontext()
        with ctx:
            loss = loss_of(model, ids)
        loss.backward()
        return loss.detach()
    return step


def _time_steps(step: Callable, opt: torch.optim.Optimizer, ids: torch.Tensor, steps: int) -> tuple[float, float]:
    """(seconds of the first step, median seconds of a step after warm-up)."""
    times = []
    for i in range(3 + steps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        step(ids)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return times[0], statistics.median(times[3:])


_KERNEL_CLASSES = (("matmul", ("gemm", "nvjet", "cutlass", "sm90_xmma", "cublas")),
                   ("attention", ("flash", "fmha", "attention", "efficient")),
                   ("triton", ("triton",)), ("optimizer", ("adam",)))


def _kernel_class(name: str) -> str:
    low = name.lower()
    return next((c for c, keys in _KERNEL_CLASSES if any(k in low for k in keys)), "other")


def _profile(step: Callable, ids: torch.Tensor, label: str, calls: int = 3) -> None:
    """GPU time of ``calls`` steps under torch.profiler by kernel class and the top kernels,
    written to ``$OUT/profile_<label>.txt``: where the time goes, for a compiler against another."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            step(ids)
        torch.cuda.synchronize()
    kernels = [(e.key, e.count, e.device_time_total) for e in prof.key_averages() if e.device_time_total > 0
               and not e.key.startswith(("aten::", "ProfilerStep", "cuda"))]
    total = sum(t for _, _, t in kernels)
    by_class: dict[str, list[float]] = {}
    for name, count, t in kernels:
        entry = by_class.setdefault(_kernel_class(name), [0, 0.0])
        entry[0] += count
        entry[1] += t
    lines = [f"{label}: {total / calls / 1e3:.2f} ms of kernels per step, "
             f"{sum(c for _, c, _ in kernels) / calls:.0f} launches per step"]
    lines += [f"  {c:10s} {n / calls:6.0f} launches {t / calls / 1e3:8.2f} ms" for c, (n, t) in
              sorted(by_class.items(), key=lambda kv: -kv[1][1])]
    lines += [f"  {t / calls / 1e3:8.3f} ms {c / calls:5.0f}x {name[:150]}" for name, c, t in
              sorted(kernels, key=lambda k: -k[2])[:25]]
    text = "\n".join(lines)
    print(text, file=sys.stderr)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], f"profile_{label}.txt"), "w") as f:
            f.write(text + "\n")


def run_one(compiler: str, name: str, precision: str, steps: int, profile: bool = False) -> dict[str, Any]:
    batch, seq = WORKLOADS[name]
    model, loss_of = _model(name, precision)
    params = sum(p.numel() for p in model.parameters())
    vocab = model.get_output_embeddings().weight.shape[0] if hasattr(model, "get_output_embeddings") else model.s.vocab
    ids = torch.randint(0, vocab, (batch, seq + (name == "llama1b")), device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    out: dict[str, Any] = {"compiler": compiler, "model": name, "precision": precision, "params_m": params / 1e6,
                           "tokens": batch * seq}
    eager_step = _step_fn(model, loss_of, precision)
    _, out["eager_s"] = _time_steps(eager_step, opt, ids, steps)
    if compiler != "eager":
        if compiler == "torch":
            compiled = torch.compile(eager_step)
        else:
            import ember
            compiled = ember.compile(eager_step)
        out["first_s"], out["step_s"] = _time_steps(compiled, opt, ids, steps)
        if profile:
            _profile(compiled, ids, f"{compiler}_{name}_{precision}")
    for key in ("eager_s", "step_s"):
        if key in out:
            out[key.replace("_s", "_mfu")] = 6 * params * batch * seq / out[key] / PEAK
    return out


def _row(r: dict[str, Any]) -> str:
    head = f"| {r['model']} | {r['precision']} | {r['compiler']} "
    if "error" in r:
        return head + f"| - | - | - | fails: {r['error']} |"
    eager = f"{1e3 * r['eager_s']:.1f} ({100 * r['eager_mfu']:.1f}%)"
    if "step_s" not in r:
        return head + f"| {eager} | - | - | |"
    tps = r["tokens"] / r["step_s"]
    return (head + f"| {eager} | {1e3 * r['step_s']:.1f} ({r['eager_s'] / r['step_s']:.2f}x, MFU "
            f"{100 * r['step_mfu']:.1f}%, {tps / 1e3:.0f}k tokens/s) | {r['first_s']:.0f} | |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=list(WORKLOADS))
    ap.add_argument("--precisions", nargs="*", default=["autocast", "bf16"])
    ap.add_argument("--compilers", nargs="*", default=["torch", "ember"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--timeout", type=int, default=400)
    ap.add_argument("--profile", action="store_true", help="kernel time by class to $OUT/profile_*.txt")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        compiler, name, precision = args.child
        try:
            res = run_one(compiler, name, precision, args.steps, args.profile)
        except Exception as exc:
            traceback.print_exc()
            res = {"compiler": compiler, "model": name, "precision": precision,
                   "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"}
        print("RESULT " + json.dumps(res), flush=True)
        return 0
    rows = []
    for name in args.models:
        for precision in args.precisions:
            for compiler in args.compilers:
                cmd = [sys.executable, "-m", "benchmarks.train_bf16", "--steps", str(args.steps),
                       *(["--profile"] if args.profile else []), "--child", compiler, name, precision]
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                    res = json.loads(lines[-1][7:]) if lines else {
                        "compiler": compiler, "model": name, "precision": precision,
                        "error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"}
                    if "error" in res:
                        sys.stderr.write(proc.stderr[-3000:])
                except subprocess.TimeoutExpired:
                    res = {"compiler": compiler, "model": name, "precision": precision,
                           "error": f"over {args.timeout} s"}
                rows.append(res)
                print(_row(res), flush=True)
    head = ["# bf16 training step (forward + loss + backward compiled; fused AdamW outside)", "",
            *environment("cuda", command_line("benchmarks.train_bf16", argv)),
            f"- method: one child process per compiler, eager timed in the same process; median of {args.steps} "
            f"synchronized steps after 3 warm-up steps; MFU = 6 x parameters x tokens / step time / {PEAK / 1e12:.0f} "
            "TFLOP/s.", "",
            "| model | precision | compiler | eager ms (MFU) | compiled ms (x eager, MFU, tokens/s) | first step s | |",
            "|---|---|---|---|---|---|---|"]
    report = "\n".join(head + [_row(r) for r in rows]) + "\n"
    print(report)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "train_bf16.md"), "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
