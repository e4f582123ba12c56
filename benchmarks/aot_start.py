"""Cold compile against package load + first call (``ember.aot_compile`` / ``ember.aot_load``), in fresh processes.

For each model, three new Python processes, each with its own empty cache folder (EMBER_CACHE_DIR):
1. ``ember.compile(model)`` and its first call (the JIT's cold start, for reference);
2. ``ember.aot_compile(model, args, folder)`` (capture, compile, write the package);
3. ``ember.aot_load(folder)`` and its first call (what a deployment pays at start).
Timed inside each process, after ``import torch, ember`` (reported apart), as in
``benchmarks.warm_start``. Models: a small MLP, a conv net and a tiny transformers BertModel
with an attention mask (the test models of ``tests/inductor/test_aot_package.py``).

    python -m benchmarks.aot_start [--device cpu|cuda] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODELS = ("mlp", "conv net", "bert")


def _build(name: str, device: str) -> tuple:
    import torch
    from tests.inductor.test_aot_package import ConvNet, mlp, tiny_bert
    torch.manual_seed(0)
    if name == "mlp":
        return mlp().to(device), (torch.randn(8, 16, device=device),)
    if name == "conv net":
        return ConvNet().eval().to(device), (torch.randn(2, 3, 16, 16, device=device),)
    ids = torch.randint(0, 100, (2, 8), device=device)
    mask = torch.ones(2, 8, dtype=torch.long, device=device)
    mask[1, 5:] = 0
    return tiny_bert().to(device), (ids, mask)


def _child(step: str, name: str, device: str, folder: str) -> None:
    start = time.perf_counter()
    import torch

    import ember
    imported = time.perf_counter()
    model, args = _build(name, device)
    built = time.perf_counter()
    if step == "jit":
        ember.compile(model)(*args)
    elif step == "aot_compile":
        ember.aot_compile(model, args, folder)
    else:
        ember.aot_load(folder)(*args)
    if device == "cuda":
        torch.cuda.synchronize()
    print(json.dumps({"import": imported - start, "seconds": time.perf_counter() - built}))


def _run(step: str, name: str, device: str, folder: str) -> dict:
    env = dict(os.environ, EMBER_CACHE_DIR=tempfile.mkdtemp(prefix="ember-aot-bench-"))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.aot_start", "--child", step, name, device, folder],
                          env=env, capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", nargs="*", default=list(MODELS))
    parser.add_argument("--child", nargs=4, metavar=("STEP", "NAME", "DEVICE", "FOLDER"))
    args = parser.parse_args()
    if args.child:
        return _child(*args.child)
    print(f"| model ({args.device}) | ember.compile + 1st call, s | aot_compile, s | aot_load + 1st call, s "
          "| load / aot_compile | import torch+ember, s |")
    print("|---|---|---|---|---|---|")
    for name in args.only:
        folder = os.path.join(tempfile.mkdtemp(prefix="ember-aot-package-"), "package")
        jit = _run("jit", name, args.device, folder)
        cold = _run("aot_compile", name, args.device, folder)
        warm = _run("aot_load", name, args.device, folder)
        print(f"| {name} | {jit['seconds']:.2f} | {cold['seconds']:.2f} | {warm['seconds']:.3f} "
              f"| {warm['seconds'] / cold['seconds']:.1%} | {warm['import']:.2f} |", flush=True)
    return None


if __name__ == "__main__":
    main()
