"""How the benchmarks time code: variants measured in one process, in alternating rounds.

Each round times every variant once, the order rotating from round to round (A B C, B C A,
C A B, ...), so drift of the host (other processes, clocks, thermals) and what one variant
leaves for the next (caches, the allocator's state) fall on all variants alike: with a fixed
order, torch.compile's sin+cos on 2^22 CPU floats, always right after ember's, took 3.57 ms a
call against 1.62 with the order rotating. Two figures per variant:

* latency: one call, synchronized before and after (CUDA events on the GPU), sampled once per
  round; reported as median with p10 and p90;
* throughput: ``calls`` calls back to back and one synchronize, per call, once per round;
  reported as the median over rounds.

``environment()`` is the header every result table carries: date, host, versions, command.
"""
from __future__ import annotations

import dataclasses
import datetime
import math
import os
import platform
import shlex
import statistics
import sys
import time
from typing import Any, Callable

import torch


@dataclasses.dataclass
class Timing:
    """One variant's figures, in milliseconds (first call in seconds)."""

    first_s: float
    latency: list[float]
    per_call_b2b: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.latency)

    def quantile(self, q: float) -> float:
        xs = sorted(self.latency)
        return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]

    @property
    def throughput(self) -> float:
        """Milliseconds per call, back to back."""
        return statistics.median(self.per_call_b2b)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def one_call_ms(run: Callable[[], Any], device: str) -> float:
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


def back_to_back_ms(run: Callable[[], Any], device: str, calls: int) -> float:
    """Milliseconds per call of ``calls`` calls issued without synchronizing in between."""
    sync(device)
    t = time.perf_counter()
    for _ in range(calls):
        run()
    sync(device)
    return (time.perf_counter() - t) * 1e3 / calls


def measure(runs: list[Callable[[], Any]], device: str, rounds: int, warmup: int,
            calls: int = 10) -> list[Timing]:
    """First call (compile) of each variant, ``warmup`` untimed calls, then ``rounds``
    alternating rounds (the order rotating) of one synchronized call and of ``calls``
    back-to-back calls each."""
    firsts = []
    for run in runs:
        t = time.perf_counter()
        run()
        sync(device)
        firsts.append(time.perf_counter() - t)
        for _ in range(warmup):
            run()
    sync(device)
    out = [Timing(f, [], []) for f in firsts]
    n = len(runs)
    for r in range(rounds):
        order = [(out[(r + k) % n], runs[(r + k) % n]) for k in range(n)]
        for timing, run in order:
            timing.latency.append(one_call_ms(run, device))
        for timing, run in order:
            timing.per_call_b2b.append(back_to_back_ms(run, device, calls))
    return out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def host(device: str) -> str:
    """The CPU model (and the GPU's name on CUDA)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    cpu = f"{cpu}, {os.cpu_count()} CPUs"
    if device == "cuda":
        return f"{torch.cuda.get_device_name()} (CUDA {torch.version.cuda}), {cpu}"
    return cpu


def versions() -> str:
    try:
        import triton
        tri = triton.__version__
    except ImportError:
        tri = "not installed"
    return f"python {platform.python_version()}, torch {torch.__version__}, triton {tri}"


def environment(device: str, command: str) -> list[str]:
    """Header lines of a result table: date, host, versions and the exact command."""
    return [
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- host: {host(device)}",
        f"- versions: {versions()}",
        f"- command: `{command}`",
    ]


def command_line(module: str, argv: list[str] | None = None) -> str:
    """``python -m module args...`` as it was run."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m", module, *(shlex.quote(a) for a in args)])
