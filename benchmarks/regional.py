"""Cold compile time of a 32-layer Llama-style model, compiled whole and regionally, ember against
torch.compile, each in a fresh process with an empty cache.

    python -m benchmarks.regional [--device cpu|cuda] [--layers 32] [--compilers ember torch]

Whole: ``compile(model)``. Regional: ``compile(block)`` for each block of ``model.blocks`` (the
recipe torch's documentation gives for deep models: blocks of one class share their compiled
code). Timed: the compiling calls and the first forward (a training forward, no KV cache) and
its backward, synchronized; reported with the graph count (a counting wrapper around the
inductor) and the first call's largest difference from eager. The model is ``benchmarks.llama``
with 32 small layers (dim 256 on the CPU, 1024 on CUDA), batch 2 x 64 tokens, float32.
A markdown table goes to stdout and, when set, to ``$OUT/regional.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import torch

from benchmarks.timing import command_line, environment


def _model(device: str, layers: int) -> torch.nn.Module:
    from benchmarks import llama
    dim = 1024 if device == "cuda" else 256
    shape = llama.Shape(dim=dim, layers=layers, heads=8, kv_heads=4, ffn=2 * dim, vocab=4096)
    torch.manual_seed(0)
    return llama.Llama(shape, max_len=128).to(device).train()


def run_one(compiler: str, how: str, device: str, layers: int) -> dict[str, Any]:
    model = _model(device, layers)
    ids = torch.randint(0, 4096, (2, 64), device=device)
    expected = model(ids)
    graphs = [0]
    if compiler == "ember":
        import ember
        from ember_inductor.backend import inductor

        def backend(gm: Any, example_inputs: Any) -> Any:
            graphs[0] += 1
            return inductor(gm, example_inputs)
        compile_fn = lambda m: ember.compile(m, backend=backend)  # noqa: E731
    else:
        from torch._inductor.compile_fx import compile_fx

        def backend(gm: Any, example_inputs: Any) -> Any:
            graphs[0] += 1
            return compile_fx(gm, example_inputs)
        compile_fn = lambda m: torch.compile(m, backend=backend)  # noqa: E731
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    if how == "whole":
        call = compile_fn(model)
    else:
        for i, block in enumerate(model.blocks):
            model.blocks[i] = compile_fn(block)
        call = model
    out = call(ids)
    out.sum().backward()
    sync()
    seconds = time.perf_counter() - start
    return {"compiler": compiler, "how": how, "seconds": seconds, "graphs": graphs[0],
            "diff": (out - expected).abs().max().item()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--compilers", nargs="*", default=["ember", "torch"])
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(run_one(*args.child, args.device, args.layers)), flush=True)
        return 0
    rows = []
    for how in ("whole", "regional"):
        for compiler in args.compilers:
            with tempfile.TemporaryDirectory() as cache:  # a cold start: empty caches
                env = dict(os.environ, EMBER_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=cache)
                cmd = [sys.executable, "-m", "benchmarks.regional", "--device", args.device, "--layers",
                       str(args.layers), "--child", compiler, how]
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
                    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                    res = json.loads(lines[-1][7:]) if lines else {
                        "compiler": compiler, "how": how, "error": proc.stderr.strip().splitlines()[-1:]}
                except subprocess.TimeoutExpired:
                    res = {"compiler": compiler, "how": how, "error": f"over {args.timeout} s"}
            rows.append(res)
            print(res, flush=True)
    table = ["| compile | compiler | cold first call s (forward + backward) | graphs | max diff from eager |",
             "|---|---|---|---|---|"]
    for r in rows:
        name = "torch.compile" if r["compiler"] == "torch" else "ember"
        if "error" in r:
            table.append(f"| {r['how']} | {name} | fails: {r['error']} | | |")
        else:
            table.append(f"| {r['how']} | {name} | {r['seconds']:.1f} | {r['graphs']} | {r['diff']:.1e} |")
    report = "\n".join([f"# Regional compilation, {args.layers}-layer Llama-style model", "",
                        *environment(args.device, command_line("benchmarks.regional", argv)), "", *table]) + "\n"
    print(report)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "regional.md"), "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
