"""Column sums of a [2048, N] float32 matrix on the GPU: hand-written Triton tiles against
torch.compile, ember and eager, the figures behind ``TritonKernel.outer_reduction`` and the
cold-cache autotuning of ``TritonLauncher._time``.

    python benchmarks/column_sums.py [--warm]

Each variant is timed as a CUDA graph of 50 calls, replayed 15 times (median us per call). By
default each call reads another copy of the matrix (400 MB of copies), so the L2 cache is cold,
as for a bias gradient in a training step; ``--warm`` reads one copy. The torch.compile, ember
and eager rows include a 1 us ``copy_`` of the result into a fixed output (a CUDA graph needs
one); "copy_ only" times it alone.
"""
from __future__ import annotations

import argparse
import statistics
from typing import Callable

import torch
import triton
import triton.language as tl

ROWS, COLUMNS, CALLS = 2048, (384, 1152, 1536), 50


@triton.jit
def _persistent(x, out, N, R: tl.constexpr, XB: tl.constexpr):
    """``XB`` columns of all ``R`` rows in registers per program (ember's persistent form)."""
    cols = tl.program_id(0) * XB + tl.arange(0, XB)[:, None]
    rows = tl.arange(0, R)[None, :]
    v = tl.load(x + cols + N * rows, cols < N, other=0)
    tl.store(out + cols, tl.sum(v, 1, keep_dims=True), cols < N)


@triton.jit
def _split_partial(x, part, N, R: tl.constexpr, CHUNK: tl.constexpr, XB: tl.constexpr, RB: tl.constexpr):
    """First stage of a split reduction: ``XB`` columns of one chunk of rows per program."""
    blocks = tl.cdiv(N, XB)
    chunk = tl.program_id(0) // blocks
    cols = (tl.program_id(0) % blocks) * XB + tl.arange(0, XB)[:, None]
    acc = tl.zeros([XB, RB], tl.float32)
    for r0 in range(0, CHUNK, RB):
        local = r0 + tl.arange(0, RB)[None, :]
        rows = chunk * CHUNK + local
        acc += tl.load(x + cols + N * rows, (cols < N) & (local < CHUNK) & (rows < R), other=0)
    tl.store(part + chunk * N + cols, tl.sum(acc, 1, keep_dims=True), cols < N)


@triton.jit
def _split_final(part, out, N, S: tl.constexpr, XB: tl.constexpr):
    """Second stage: the ``S`` partial sums of each column."""
    cols = tl.program_id(0) * XB + tl.arange(0, XB)[:, None]
    v = tl.load(part + cols + N * tl.arange(0, S)[None, :], cols < N, other=0)
    tl.store(out + cols, tl.sum(v, 1, keep_dims=True), cols < N)


def _time(fn: Callable[[int], object]) -> float:
    """Median us per call of ``fn(i)`` (i: the call's index) in a replayed CUDA graph."""
    for _ in range(3):
        fn(0)
    torch.cuda.synchronize()
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn(0)
        with torch.cuda.graph(graph, stream=stream):
            for i in range(CALLS):
                fn(i)
    torch.cuda.current_stream().wait_stream(stream)
    times = []
    for _ in range(15):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000 / CALLS)
    return statistics.median(times)


def _variants(xs: list[torch.Tensor], out: torch.Tensor) -> dict[str, Callable[[int], object]]:
    n, copies = xs[0].shape[1], len(xs)
    grid = lambda xb: (triton.cdiv(n, xb),)  # noqa: E731
    variants: dict[str, Callable[[int], object]] = {}
    for xb in (1, 2, 4, 8):
        for warps in (4, 8, 16):
            variants[f"{xb} columns a program, {warps} warps"] = (
                lambda i, xb=xb, w=warps: _persistent[grid(xb)](xs[i % copies], out, n, ROWS, xb, num_warps=w))
    for chunks in (16, 32):
        part = torch.empty(chunks, n, device="cuda")
        for xb, rb in ((32, 32), (64, 32), (32, ROWS // chunks)):
            def split(i: int, s: int = chunks, xb: int = xb, rb: int = rb, part: torch.Tensor = part) -> None:
                _split_partial[(triton.cdiv(n, xb) * s,)](xs[i % copies], part, n, ROWS, ROWS // s, xb, rb,
                                                          num_warps=4)
                _split_final[grid(64)](part, out, n, s, 64, num_warps=4)
            variants[f"split in {chunks} chunks, {xb}x{rb} tiles"] = split
    import ember
    for name, compile_fn in (("torch.compile", torch.compile), ("ember", ember.compile)):
        compiled = compile_fn(lambda x: x.sum(0))
        variants[name] = lambda i, c=compiled: out.copy_(c(xs[i % copies]))
    variants["eager"] = lambda i: torch.sum(xs[i % copies], 0, out=out)
    variants["copy_ only"] = lambda i: out.copy_(xs[0][0])
    return variants


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true", help="every call reads the same matrix")
    args = parser.parse_args(argv)
    print(f"# column sums of [{ROWS}, N] float32, us per call ({'warm' if args.warm else 'cold'} L2), "
          f"{torch.cuda.get_device_name()}")
    for n in COLUMNS:
        x = torch.randn(ROWS, n, device="cuda")
        copies = 1 if args.warm else max(1, (400 << 20) // x.nbytes)
        xs = [x] + [torch.randn_like(x) for _ in range(copies - 1)]
        out = torch.empty(n, device="cuda")
        print(f"\n| N = {n} | us |\n|---|---|")
        for name, fn in _variants(xs, out).items():
            fn(0)
            if name != "copy_ only":
                torch.testing.assert_close(out, x.sum(0), rtol=1e-4, atol=1e-3)
            print(f"| {name} | {_time(fn):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
