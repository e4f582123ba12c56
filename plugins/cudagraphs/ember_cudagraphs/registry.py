"""Weak registry of CUDA-graph wrappers: graphs are freed when their compiled entries are collected.

The core never calls into plugins, so ``ember.reset()`` frees graphs indirectly: it drops the
compiled entries, the wrappers they own are garbage collected, and a ``weakref.finalize`` per
wrapper releases its recordings (graphs, pools, static buffers). A release that falls during a
capture (the garbage collector may run there) is deferred until the capture ends.
``release_memory()`` also collects cycles and hands the freed pools back to the device, when a
wrapper is alive to be freed: a full collection costs time in proportion to the whole heap, and
``ember.reset()`` runs it on every reset once this module is imported.
"""
from __future__ import annotations

import gc
import threading
import weakref
from typing import Any, Callable

_LIVE: "weakref.WeakSet[Any]" = weakref.WeakSet()
_lock = threading.Lock()
_capturing = 0
_pending: list[Callable[[], None]] = []


def track(wrapper: Any, release: Callable[[], None]) -> None:
    """Register ``wrapper``; ``release`` runs once it has been garbage collected."""
    _LIVE.add(wrapper)
    weakref.finalize(wrapper, _release, release)


def _release(release: Callable[[], None]) -> None:
    with _lock:
        if _capturing:
            _pending.append(release)
            return
    release()


class capturing:
    """Context manager marking a capture in progress (releases wait until it ends)."""

    def __enter__(self) -> None:
        global _capturing
        with _lock:
            _capturing += 1

    def __exit__(self, *exc: Any) -> None:
        global _capturing
        with _lock:
            _capturing -= 1
            todo = _pending[:] if not _capturing else []
            if todo:
                _pending.clear()
        for release in todo:
            release()


def live_graphs() -> int:
    """Number of recorded graphs held by live wrappers."""
    return sum(w.graph_count() for w in list(_LIVE))


def release_memory() -> None:
    """Collect unreachable wrappers now and return the freed graph pools to the CUDA device."""
    if len(_LIVE):  # a wrapper not yet collected may be garbage in a cycle
        gc.collect()
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


_pool_ptrs: dict[int, int] = {}


def add_pool(ptrs: list[int]) -> None:
    """Note the storages of a recording's outputs (inputs living there are stable)."""
    with _lock:
        for p in ptrs:
            _pool_ptrs[p] = _pool_ptrs.get(p, 0) + 1


def remove_pool(ptrs: list[int]) -> None:
    with _lock:
        for p in ptrs:
            n = _pool_ptrs.get(p, 0) - 1
            if n > 0:
                _pool_ptrs[p] = n
            else:
                _pool_ptrs.pop(p, None)


def in_pool(ptr: int) -> bool:
    """Whether ``ptr`` is the storage of an output of a live recording."""
    return ptr in _pool_ptrs
