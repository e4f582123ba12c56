"""Cold and warm first-call times: ember (inductor) against torch.compile, each in fresh processes.

For every workload and compiler, new Python processes run the same model one after the other with
one shared, initially empty, cache directory (EMBER_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR): the first
call of the first process is the cold compile, that of the next ones (``--warm-runs``, default 3,
reported as their median and range) the warm start from the disk cache. Timed: the
``compile(model)`` call and the first call together (torch.compile imports torch._dynamo inside
``torch.compile()``; ember's capture imports it inside the first call, through FakeTensorMode),
not process start-up or ``import torch``/``import ember``. Models and sizes are those of
``benchmarks.run``. ember's C++ guard helper (ember.native_guards) is built before the first
process, in its usual place outside these caches: it is built once per machine, not per model.

    python -m benchmarks.warm_start [--device cpu|cuda] [--only NAME ...] [--compilers ember torch]
                                    [--warm-runs N] [--profile DIR]

``--profile DIR`` runs each timed span under cProfile and writes the functions with the most
cumulative and own time to ``DIR/<workload>_<compiler>_<cold|warmN>.txt``.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time

WORKLOADS = ["resnet18 eval", "resnet18 train step", "GPT eval", "GPT train step"]  # name prefixes in benchmarks.run


def _child(name: str, compiler: str, device: str, profile_to: str | None) -> None:
    import torch

    from benchmarks.run import step_runner, workloads

    torch.manual_seed(0)
    w = next(w for w in workloads(device) if w.name.startswith(name))
    obj, inputs, training = w.build(device)
    if compiler == "ember":
        import ember
        compile_fn = ember.compile
    else:
        compile_fn = torch.compile
    profiler = cProfile.Profile() if profile_to else None
    start = time.perf_counter()  # compile() included: torch.compile imports torch._dynamo there
    if profiler:
        profiler.enable()
    run = step_runner(compile_fn(obj), inputs, training, obj)
    run()
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    if profiler:
        profiler.disable()
        with open(profile_to, "w") as f:
            f.write(f"{name} / {compiler}: {elapsed:.2f} s\n")
            for order in ("cumulative", "tottime"):
                pstats.Stats(profiler, stream=f).sort_stats(order).print_stats(80)
    print(json.dumps({"first_call_s": elapsed}))


def _run(name: str, compiler: str, device: str, env: dict, profile_to: str | None) -> float:
    extra = ["--profile", profile_to] if profile_to else []
    proc = subprocess.run([sys.executable, "-m", "benchmarks.warm_start", "--child", name, compiler,
                           "--device", device, *extra], env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])["first_call_s"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--compilers", nargs="+", choices=["ember", "torch"], default=["ember", "torch"])
    ap.add_argument("--warm-runs", type=int, default=3, help="warm processes per workload (median reported)")
    ap.add_argument("--profile", metavar="DIR", help="write a cProfile summary of each timed span to DIR")
    ap.add_argument("--child", nargs=2, metavar=("WORKLOAD", "COMPILER"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], args.device, args.profile)
        return 0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from ember import native_guards
    os.environ.setdefault("EMBER_NATIVE_DIR", native_guards.native_dir())
    native_guards.ensure_built()  # once per machine, like an install: not part of a cold start
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    print(f"| workload ({args.device}) | ember cold s | ember warm s | torch.compile cold s | torch.compile warm s |")
    print("|---|---|---|---|---|")
    for name in WORKLOADS:
        if args.only and not any(s in name for s in args.only):
            continue
        cells = []
        for compiler in ("ember", "torch"):
            if compiler not in args.compilers:
                cells += ["-", "-"]
                continue
            cache = tempfile.mkdtemp(prefix=f"warm_{compiler}_")
            env = dict(os.environ, EMBER_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=cache,
                       PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
            slug = name.replace(" ", "_")
            try:
                profile_to = os.path.join(args.profile, f"{slug}_{compiler}_cold.txt") if args.profile else None
                cells.append(f"{_run(name, compiler, args.device, env, profile_to):.2f}")
                warm = []
                for n in range(max(1, args.warm_runs)):
                    profile_to = os.path.join(args.profile, f"{slug}_{compiler}_warm{n}.txt") if args.profile else None
                    warm.append(_run(name, compiler, args.device, env, profile_to))
                spread = f" ({min(warm):.2f}-{max(warm):.2f})" if len(warm) > 1 else ""
                cells.append(f"{statistics.median(warm):.2f}{spread}")
            except Exception as exc:  # a failing compiler is reported, not fatal
                print(f"{name} / {compiler} failed: {exc}", file=sys.stderr)
                cells += ["failed", "failed"]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
