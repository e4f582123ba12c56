"""Capture while a ``TorchDispatchMode`` is active, as torch.compile does.

A user's dispatch mode sees every aten op and may answer it with tensors of its own; capture
runs ops on fake tensors, which such a mode would see and answer (``Unable to cast Python instance
of type Tensor``), and a compiled graph would show it other ops than eager's. So, as torch.compile
does, a call that misses the cache while such a mode is on the stack is not captured: it runs
eagerly (one warning; with ``fullgraph=True`` an error), through an entry guarded on a mode being
active, so that the same function compiles once the mode is gone. Entries compiled before run
under the mode, as torch.compile's do. Torch's own infrastructure modes (fake tensors, proxy,
functionalization) and modes that ask to be left out of compilation (``ignore_compile_internals``)
do not stop capture; those are switched off while it runs.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import _disable_current_modes, _get_current_dispatch_mode_stack


def _blocks_capture(mode: Any) -> bool:
    infra = getattr(mode, "is_infra_mode", None)
    ignores = getattr(mode, "ignore_compile_internals", None)
    return not (infra is not None and infra()) and not (ignores is not None and ignores())


def blocking_mode() -> Any:
    """The innermost dispatch mode on the stack under which capture does not run, or None."""
    if not torch._C._len_torch_dispatch_stack():
        return None
    for mode in reversed(_get_current_dispatch_mode_stack()):
        if _blocks_capture(mode):
            return mode
    return None


def blocking_mode_active() -> bool:
    """What the guard of an entry made under such a mode asks (see GuardSet.dispatch_mode)."""
    return blocking_mode() is not None


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """While ember compiles (capture, the backend): the user's modes that ignore compilation are
    switched off, as torch.compile does; any other mode is left for capture to refuse."""
    if not torch._C._len_torch_dispatch_stack() or blocking_mode() is not None or any(
            getattr(m, "is_infra_mode", lambda: False)() for m in _get_current_dispatch_mode_stack()):
        yield  # nothing to switch off, a mode capture refuses, or torch's own tracing under way
        return
    with _disable_current_modes():
        yield


__all__ = ["blocking_mode", "blocking_mode_active", "suspended"]
