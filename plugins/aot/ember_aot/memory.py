"""Measures the bytes of activations kept alive between forward and backward.

``saved_activation_bytes(fn, *args)`` runs ``fn`` once with ``saved_tensors_hooks`` and sums the
storages autograd saves for the backward, excluding the storages of the inputs (tensors in
``args``, and parameters/buffers when ``fn`` is an ``nn.Module`` or ``extra`` is given), which
are alive anyway. It measures eager PyTorch and compiled functions alike, so the numbers are
comparable.
"""
from __future__ import annotations

from typing import Any, Iterable

import torch
from torch.utils import _pytree as pytree


def _storage_key(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def saved_activation_bytes(
    fn: Any, *args: Any, extra: Iterable[torch.Tensor] = (), **kwargs: Any
) -> int:
    """Bytes of the distinct non-input storages autograd saves while running ``fn(*args)``."""
    inputs = [a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
    inputs += list(extra)
    if isinstance(fn, torch.nn.Module):
        inputs += list(fn.parameters()) + list(fn.buffers())
    excluded = {_storage_key(t) for t in inputs}
    saved: dict[tuple[int, int], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = _storage_key(t)
        if key not in excluded:
            saved[key] = key[1]
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*args, **kwargs)
    del out
    return sum(saved.values())
