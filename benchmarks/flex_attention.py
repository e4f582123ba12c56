"""``flex_attention`` forward and backward: eager, torch.compile and ember, causal and sliding-window masks.

    python -m benchmarks.flex_attention [--device cuda|cpu] [--rounds 20]

The compiled function calls ``torch.nn.attention.flex_attention.flex_attention(q, k, v,
score_mod=..., block_mask=...)`` and, for the backward rows, ``out.sum().backward()``. Masks are
made once with ``create_block_mask`` outside the compiled function, as its documentation does.
GPU: batch 4, 16 heads, 2048 tokens, head dim 64, bf16; CPU: batch 1, 4 heads, 512 tokens,
float32. Times in one process, alternating rounds (``benchmarks.timing``). On the CPU torch's
flex_attention refuses inputs that require grad (eager and torch.compile alike), so the CPU rows
are forward only.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Callable

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from benchmarks.timing import command_line, environment, measure

WINDOW = 256


def causal(b: Any, h: Any, q: Any, kv: Any) -> Any:
    return q >= kv


def sliding(b: Any, h: Any, q: Any, kv: Any) -> Any:
    return (q >= kv) & (q - kv <= WINDOW)


def relative_bias(score: Any, b: Any, h: Any, q: Any, kv: Any) -> Any:
    return score + (q - kv) * 0.01


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask: Any) -> torch.Tensor:
    return flex_attention(q, k, v, score_mod=relative_bias, block_mask=block_mask)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args(argv)
    dev = args.device
    b, h, s, d, dtype = (4, 16, 2048, 64, torch.bfloat16) if dev == "cuda" else (1, 4, 512, 64, torch.float32)
    import ember
    rows = []
    for mask_name, mask_mod in (("causal", causal), ("sliding window 256", sliding)):
        block_mask = create_block_mask(mask_mod, None, None, s, s, device=dev)
        for backward in (False, True) if dev != "cpu" else (False,):
            qkv = [torch.randn(b, h, s, d, device=dev, dtype=dtype, requires_grad=backward) for _ in range(3)]

            def make(fn: Callable) -> Callable[[], Any]:
                def run() -> Any:
                    out = fn(*qkv, block_mask)
                    if backward:
                        out.sum().backward()
                    return out
                if backward:
                    return run
                return lambda: torch.no_grad()(run)()
            variants = [make(attend), make(ember.compile(attend)), make(torch.compile(attend))]
            eager, ours, theirs = measure(variants, dev, args.rounds, warmup=3, calls=3)
            what = f"{mask_name}, {'forward + backward' if backward else 'forward'}"
            rows.append(f"| {what} | {eager.median:.3f} | {ours.median:.3f} ({eager.median / ours.median:.2f}x) | "
                        f"{theirs.median:.3f} ({eager.median / theirs.median:.2f}x) | {ours.first_s:.1f} | "
                        f"{theirs.first_s:.1f} |")
            print(rows[-1], flush=True)
    head = [f"# flex_attention, {dev}, batch {b}, {h} heads, {s} tokens, head dim {d}, {dtype}", "",
            *environment(dev, command_line("benchmarks.flex_attention", argv)),
            f"- method: one process, {args.rounds} alternating rounds, ms per synchronized call (median).", "",
            "| mask, pass | eager ms | ember ms (x) | torch.compile ms (x) | ember first s | torch.compile first s |",
            "|---|---|---|---|---|---|"]
    report = "\n".join(head + rows) + "\n"
    print(report)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], f"flex_attention_{dev}.md"), "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
