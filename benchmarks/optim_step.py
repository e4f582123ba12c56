"""The optimizer step compiled: ``compile(opt.step)`` against eager's foreach step, per optimizer.

    python -m benchmarks.optim_step [--device cpu|cuda] [--params 100] [--rounds 30]

100 parameters of assorted shapes (about 1M elements on the CPU, 50M on the GPU), gradients set
once. Rows: AdamW, Adam and SGD (momentum) with a float learning rate, and AdamW whose learning
rate is a tensor changed by an LR scheduler (``LambdaLR``) after every step, as in a training loop;
a compiler that recompiles per learning rate shows it here. Variants in one process: eager
(``foreach=True``, torch's default), ember and torch.compile, each on its own copy of the
parameters, timed in alternating rounds (``benchmarks.timing``). The compiled function is
``def step(): opt.step()``, then ``sched.step()`` outside it.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Callable

import torch

from benchmarks.timing import command_line, environment, measure

SHAPES = [(256, 256), (256,), (1024, 64), (64,), (3, 3, 32, 32)]


def _params(n: int, device: str, scale: int) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(0)
    out = []
    for i in range(n):
        shape = SHAPES[i % len(SHAPES)]
        shape = (shape[0] * scale,) + shape[1:]
        p = torch.nn.Parameter(torch.randn(shape, generator=g).to(device))
        p.grad = torch.randn(shape, generator=g).to(device)
        out.append(p)
    return out


OPTIMIZERS: dict[str, Callable[[list, bool], tuple[torch.optim.Optimizer, Any]]] = {
    "AdamW": lambda ps, tensor_lr: (torch.optim.AdamW(ps, lr=1e-3, foreach=True), None),
    "Adam": lambda ps, tensor_lr: (torch.optim.Adam(ps, lr=1e-3, foreach=True), None),
    "SGD momentum": lambda ps, tensor_lr: (torch.optim.SGD(ps, lr=1e-2, momentum=0.9, foreach=True), None),
}


def _adamw_sched(ps: list, tensor_lr: bool) -> tuple[torch.optim.Optimizer, Any]:
    # torch takes a tensor learning rate with foreach only in its capturable form (CUDA), else
    # the for-loop implementation
    cuda = ps[0].is_cuda
    opt = torch.optim.AdamW(ps, lr=torch.tensor(1e-3, device=ps[0].device), foreach=cuda, capturable=cuda)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step))


OPTIMIZERS["AdamW + LambdaLR (tensor lr)"] = _adamw_sched


def _runner(make: Callable, device: str, n: int, scale: int, compiler: str) -> Callable[[], None]:
    opt, sched = make(_params(n, device, scale), True)

    def step() -> None:
        opt.step()

    if compiler == "ember":
        import ember
        step = ember.compile(step)
    elif compiler == "torch":
        step = torch.compile(step)

    def run() -> None:
        step()
        if sched is not None:
            sched.step()
    return run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--params", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args(argv)
    scale = 1 if args.device == "cpu" else 50
    rows = []
    for name, make in OPTIMIZERS.items():
        runs = [_runner(make, args.device, args.params, scale, c) for c in ("eager", "ember", "torch")]
        eager, ours, theirs = measure(runs, args.device, args.rounds, warmup=9, calls=5)
        rows.append(f"| {name} | {eager.median:.3f} | {ours.median:.3f} ({eager.median / ours.median:.2f}x) | "
                    f"{theirs.median:.3f} ({eager.median / theirs.median:.2f}x) | {ours.first_s:.1f} | "
                    f"{theirs.first_s:.1f} |")
        print(rows[-1], flush=True)
    head = [f"# compiled optimizer step, {args.params} parameters, {args.device}", "",
            *environment(args.device, command_line("benchmarks.optim_step", argv)),
            f"- method: one process, {args.rounds} alternating rounds; ms per step (one synchronized call, median); "
            "eager is torch's foreach step.", "",
            "| optimizer | eager ms | ember ms (x) | torch.compile ms (x) | ember first s | torch.compile first s |",
            "|---|---|---|---|---|---|"]
    report = "\n".join(head + rows) + "\n"
    print(report)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], f"optim_step_{args.device}.md"), "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
