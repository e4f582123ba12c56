"""A CPU stand-in for CUDA graphs, faithful to what matters to the wrapper's logic.

A "replay" re-runs the function on the inputs the graph would read — static buffers for copied
inputs, and whatever tensor now sits at a recorded in-place address — and writes the results
into the outputs of the recording, as a real graph writes into its pool. It refuses to replay
when an in-place input is not at its recorded address (a real graph would read stale memory).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch.utils import _pytree as pytree


class StaleAddress(AssertionError):
    """The wrapper replayed a graph whose in-place input moved."""


class FakeGraph:
    def __init__(self, fn: Callable, ptrs: list[int | None], writable: list[int], outs: list) -> None:
        self.fn = fn
        self.ptrs = ptrs
        self.writable = writable
        self.outs = outs


class FakeRecorder:
    def __init__(self, capture_error: Exception | None = None) -> None:
        self.capture_error = capture_error
        self.warmups = self.captures = self.replays = 0
        self.pools: list[Any] = []  # the pool of each capture (None: its own)

    def device_reason(self, args: Sequence[Any]) -> str:
        return ""

    def warmup(self, fn: Callable, args: Sequence[Any]) -> Any:
        self.warmups += 1
        return fn(*args)

    def new_pool(self) -> Any:
        return object()

    def capture(self, fn: Callable, args: Sequence[Any], pool: Any = None) -> tuple[FakeGraph, Any]:
        if self.capture_error is not None:
            raise self.capture_error
        self.captures += 1
        self.pools.append(pool)
        ptrs = [a.data_ptr() if isinstance(a, torch.Tensor) else None for a in args]
        with torch.no_grad():
            out = fn(*args)
        leaves = pytree.tree_flatten(out)[0]
        inputs = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor)}
        writable = [k for k, t in enumerate(leaves)
                    if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in inputs]
        return FakeGraph(fn, ptrs, writable, leaves), out

    def replay(self, graph: FakeGraph, plan: Any, args: Sequence[Any]) -> None:
        self.replays += 1
        live = plan.static_args(args)
        for k, (a, p) in enumerate(zip(live, graph.ptrs)):
            if p is not None and a.data_ptr() != p:
                raise StaleAddress(f"input {k} moved from {p:#x} to {a.data_ptr():#x}")
        with torch.no_grad():
            leaves = pytree.tree_flatten(graph.fn(*live))[0]
        for k in graph.writable:
            graph.outs[k].copy_(leaves[k])
