"""Inputs of one recorded graph: read in place at a stable address, or copied into a static buffer.

A CUDA graph reads its inputs from the addresses it saw while recording. An input whose tensor
stays where it was (parameters, buffers, the outputs of another recorded graph) is read in place;
every call checks its ``data_ptr`` and the wrapper re-records when one moved. Any other input is
copied into a static buffer allocated before recording, with the same size and strides as the
caller's tensor, so the recorded kernels see the layout they were compiled for.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import torch


#: CUDA builds of torch: ``(tensors, ptrs, indices) -> bool``, whether ``tensors[i].data_ptr() ==
#: ptrs[i]`` for every ``i`` in ``indices``, in one C++ loop (densenet121 reads 607 parameters and
#: buffers in place, several times faster here than a Python loop).
_PTRS_EQUAL = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)


class UnsupportedInput(Exception):
    """An input that cannot be given a static buffer (it overlaps itself in memory)."""


def signature(args: Sequence[Any]) -> tuple:
    """What a recording is specialized on: layout of tensors, value of everything else."""
    return tuple(
        (a.shape, a.stride(), a.dtype, a.device) if isinstance(a, torch.Tensor) else (type(a), a)
        for a in args
    )


class StaticBuffer:
    """A tensor with the caller's size and strides; expanded (stride 0) dims stored once."""

    def __init__(self, like: torch.Tensor) -> None:
        size, stride = tuple(like.shape), like.stride()
        self.compact = tuple(1 if st == 0 else sz for sz, st in zip(size, stride))
        self.expanded = self.compact != size
        self.base = torch.empty_strided(self.compact, stride, dtype=like.dtype, device=like.device)
        if torch._debug_has_internal_overlap(self.base) != 0:
            raise UnsupportedInput("an input overlaps itself in memory")
        self.stride = stride
        self.tensor = self.base.as_strided(size, stride) if self.expanded else self.base

    def copy_from(self, src: torch.Tensor) -> None:
        if self.expanded:
            src = src.as_strided(self.compact, self.stride, src.storage_offset())
        self.base.copy_(src)


class InputPlan:
    """Which inputs of one recording are copied, and the addresses of those read in place."""

    def __init__(self, args: Sequence[Any], copied: Iterable[int]) -> None:
        tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        wanted = set(copied)
        self.buffers: dict[int, StaticBuffer] = {i: StaticBuffer(args[i]) for i in tensors if i in wanted}
        self._copies = list(self.buffers.items())
        self.stable = [i for i in tensors if i not in wanted]
        self.stable_ptrs = [args[i].data_ptr() for i in self.stable]
        self._ptr_table: list[int | None] = [None] * len(args)  # by input position, for _PTRS_EQUAL
        for i, p in zip(self.stable, self.stable_ptrs):
            self._ptr_table[i] = p

    def static_args(self, args: Sequence[Any]) -> list[Any]:
        """The arguments the graph reads: static buffers for copied inputs, the rest as given."""
        out = list(args)
        for i, buf in self._copies:
            out[i] = buf.tensor
        return out

    def moved(self, args: Sequence[Any]) -> list[int]:
        """Inputs read in place whose address is not the recorded one."""
        if _PTRS_EQUAL is not None and _PTRS_EQUAL(list(args), self._ptr_table, self.stable):
            return []
        return [i for i, p in zip(self.stable, self.stable_ptrs) if args[i].data_ptr() != p]

    def copy_in(self, args: Sequence[Any]) -> None:
        for i, buf in self._copies:
            src = args[i]
            if src.data_ptr() != buf.tensor.data_ptr():
                buf.copy_from(src)

    def release(self) -> None:
        self.buffers = {}
        self._copies = []
