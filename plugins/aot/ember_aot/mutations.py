"""Input mutations at run time: the new values copied back into the caller's tensors, the
check that no mutated input shares memory with another input, and (``apart``) copies of the
values saved for the backward that an input written under autograd would overwrite.

Both run on every call of a plan that mutates inputs (a training step's batch-norm statistics:
resnet18 writes back 60 buffers and takes 123 inputs), so each does its per-call work in C
loops: the write-back's grouping by dtype and device is found on the first call and kept (the
guards fix the inputs' dtypes and devices; a mixed group would still copy right, only slower),
and the alias check is skipped when every input has the data address and storage offset of the
last call it passed (so the same storage addresses: what the check compares).
"""
from __future__ import annotations

import collections
import operator
from typing import Any, Callable, Sequence

import torch


def picker(positions: list[int]) -> Callable[[Sequence[Any]], tuple]:
    """``lambda xs: tuple(xs[i] for i in positions)``, in C where it can be."""
    if len(positions) > 1:
        return operator.itemgetter(*positions)
    return lambda xs: tuple(xs[i] for i in positions)


class WriteBack:
    """Copies the new values of the inputs at ``positions`` (the forward's leading outputs, in
    that order) into them: one ``_foreach_copy_`` per dtype and device (one fused kernel on
    CUDA), not one op each. A value that is its input already is not copied: decided on the
    first call, as whether the graph returns a placeholder is the graph's (a view of the input
    that a backend returned instead would be copied onto itself, which changes nothing)."""

    def __init__(self, positions: list[int]) -> None:
        self.positions = positions
        self._groups: list[tuple[Callable, Callable]] | None = None

    def _group(self, primals: Sequence[Any], values: Sequence[Any]) -> list[tuple[Callable, Callable]]:
        groups: dict[tuple, tuple[list[int], list[int]]] = {}
        for k, j in enumerate(self.positions):
            t, v = primals[j], values[k]
            if v is not t:
                dst, src = groups.setdefault((t.dtype, t.device, v.dtype), ([], []))
                dst.append(j)
                src.append(k)
        return [(picker(dst), picker(src)) for dst, src in groups.values()]

    def __call__(self, primals: Sequence[Any], values: Sequence[Any]) -> None:
        if self._groups is None:  # the same grouping on every call: the guards fix dtype and device
            self._groups = self._group(primals, values)
        with torch.no_grad():
            for dst, src in self._groups:
                torch._foreach_copy_(dst(primals), src(values))


class AliasCheck:
    """Whether a mutated input (``positions``) shares its non-empty storage with another input.

    Each storage is looked up once: an optimizer step's graph takes hundreds of inputs and
    mutates most. A call whose inputs all have the data address and storage offset of the last
    call that passed has the same storage addresses, so it passes without looking them up
    (a plan whose inputs include varying ints, ``tensors_only`` False, always looks)."""

    def __init__(self, positions: list[int], tensors_only: bool) -> None:
        self.positions = positions
        self.tensors_only = tensors_only  # every input a tensor (no varying int): stamped
        self._passed: tuple[list[int], list[int]] | None = None

    def __call__(self, primals: list[Any]) -> bool:
        stamp = None
        if self.tensors_only:
            stamp = (list(map(torch.Tensor.data_ptr, primals)), list(map(torch.Tensor.storage_offset, primals)))
            if stamp == self._passed:
                return False
        ptrs = [t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) else None for t in primals]
        if len(set(ptrs)) < len(ptrs):
            counts = collections.Counter(ptrs)
            if any(counts[ptrs[j]] > 1 and primals[j].untyped_storage().nbytes() for j in self.positions):
                return True
        self._passed = stamp
        return False


def apart(values: Sequence[Any], written: Sequence[torch.Tensor]) -> list[Any]:
    """``values``, each tensor sharing storage with one of ``written`` replaced by a copy: a
    compiled forward may save an input itself (or a view of it) for the backward, which needs
    the value the input had before the runtime writes its new value into it."""
    storages = {t.untyped_storage().data_ptr() for t in written}
    return [v.clone() if isinstance(v, torch.Tensor) and v.untyped_storage().data_ptr() in storages else v
            for v in values]
