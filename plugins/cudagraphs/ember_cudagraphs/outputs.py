"""Outputs of one recorded graph, and the policy that keeps a caller's outputs from being overwritten.

Every replay writes into the same memory (the graph's pool). Each call hands out *new* tensor
objects sharing that memory (``detach()``: same storage, no copy). Before a replay, the wrapper
asks :meth:`OutputPlan.busy`: a storage whose use count is above the count measured right after
recording is still referenced outside (by a tensor the caller kept, a view of it, an autograd
graph that saved it, a ``.grad`` that took it over). Such a recording is not replayed; the
wrapper replays another copy of the graph (a replica with its own pool) or records one. So a kept
output is never overwritten and nothing is copied in the common case.

Outputs that alias an input are rebuilt from the caller's tensor on every call, never from a
static buffer: the caller's tensor itself when the graph returned the input (a training forward
returns the weights it saves for the backward), else a view of it.
"""
from __future__ import annotations

import operator
from typing import Any, Sequence

import torch
from torch.utils import _pytree as pytree

POOL, INPUT, CONST, SAME = 0, 1, 2, 3


_use_count = torch._C._storage_Use_Count  # (storage cdata) -> how many references it has
_detach = torch.Tensor.detach


def _aliased_input(out: torch.Tensor, inputs: Sequence[Any]) -> int | None:
    storage = out.untyped_storage()
    if storage.nbytes() == 0:
        return None
    ptr = storage.data_ptr()
    for j, a in enumerate(inputs):
        if isinstance(a, torch.Tensor) and a.untyped_storage().nbytes() and a.untyped_storage().data_ptr() == ptr:
            return j
    return None


class OutputPlan:
    """How to build a call's outputs after a replay (see the module docstring)."""

    def __init__(self, outs: Any, static_args: Sequence[Any]) -> None:
        leaves, self.spec = pytree.tree_flatten(outs)
        flat = type(outs) in (tuple, list) and len(leaves) == len(outs)
        self.kind = type(outs) if flat else None
        self.slots: list[tuple] = []
        self.pool: list[torch.Tensor] = []
        device = next((a.device for a in static_args if isinstance(a, torch.Tensor)), None)
        for k, out in enumerate(leaves):
            if not isinstance(out, torch.Tensor):
                self.slots.append((CONST, out))
                continue
            if device is not None and out.device.type != device.type:
                raise ValueError(f"output {k} is a {out.device.type} tensor, computed once while recording")
            j = _aliased_input(out, static_args)
            if j is None:
                self.slots.append((POOL, len(self.pool)))
                self.pool.append(out)
                continue
            base = static_args[j]
            if out is base:
                self.slots.append((SAME, j))
                continue
            if out.dtype != base.dtype:
                raise ValueError(f"an output views input {j} with another dtype")
            delta = out.storage_offset() - base.storage_offset()
            self.slots.append((INPUT, j, tuple(out.shape), out.stride(), delta))
        self.only_pool = all(s[0] == POOL for s in self.slots)
        self._cdatas: list[int] = []
        self._counts: list[int] = []

    def seal(self) -> None:
        """Measure the storages' use counts with nothing handed out (call right after recording)."""
        self._cdatas = list({t.untyped_storage()._cdata for t in self.pool})
        self._counts = list(map(_use_count, self._cdatas))

    def busy(self) -> bool:
        """True while some output of an earlier replay is still referenced outside (a storage
        referenced more than right after recording); one C call per storage, no Python frame."""
        return any(map(operator.gt, map(_use_count, self._cdatas), self._counts))

    def release(self) -> None:
        self.pool = []
        self._cdatas, self._counts = [], []

    def storage_ptrs(self) -> list[int]:
        return [t.untyped_storage().data_ptr() for t in self.pool]

    def build(self, args: Sequence[Any]) -> Any:
        """This call's outputs: fresh tensors on the graph's memory, input views, constants."""
        fresh = list(map(_detach, self.pool))  # one C call each, no bound method
        if self.only_pool:
            leaves = fresh
        else:
            leaves = []
            with torch.no_grad():
                for slot in self.slots:
                    kind = slot[0]
                    if kind == POOL:
                        leaves.append(fresh[slot[1]])
                    elif kind == SAME:
                        leaves.append(args[slot[1]])
                    elif kind == CONST:
                        leaves.append(slot[1])
                    else:
                        _, j, size, stride, delta = slot
                        base = args[j]
                        leaves.append(base.as_strided(size, stride, base.storage_offset() + delta))
        if self.kind is not None:
            return self.kind(leaves)
        return pytree.tree_unflatten(leaves, self.spec)
