"""Torch's global state that a compiled call must leave as eager Python would: grad mode,
inference mode, autocast, the default dtype and device, and the CPU random generator.

Capture evaluates some calls for real (torch functions on fake tensors, helpers on constants).
:func:`snapshot` and :meth:`GlobalState.restore` let it put back whatever such an evaluation
changed, so that capturing never changes the state the program runs in; state changes the
program asks for are recorded in the graph (``contexts.py``) or happen in Python at a break.
"""
from __future__ import annotations

import dataclasses

import torch

_AUTOCAST_DEVICES = ("cpu", "cuda")


@dataclasses.dataclass(frozen=True)
class GlobalState:
    grad: bool
    inference: bool
    autocast: tuple[tuple[str, bool, torch.dtype], ...]
    autocast_cache: bool
    dtype: torch.dtype
    device: torch.device

    def restore(self) -> None:
        """Set the state back to this snapshot. Inference mode is a scoped guard that cannot be
        set from outside; :func:`snapshot` callers refuse what changes it instead."""
        if torch.is_grad_enabled() != self.grad:
            torch._C._set_grad_enabled(self.grad)
        for device, enabled, dtype in self.autocast:
            torch.set_autocast_enabled(device, enabled)
            torch.set_autocast_dtype(device, dtype)
        torch.set_autocast_cache_enabled(self.autocast_cache)
        if torch.get_default_dtype() != self.dtype:
            torch.set_default_dtype(self.dtype)
        if torch.get_default_device() != self.device:
            torch.set_default_device(self.device)


def snapshot() -> GlobalState:
    """The current global state (the random generator is handled by :func:`rng_state`)."""
    return GlobalState(
        grad=torch.is_grad_enabled(),
        inference=torch.is_inference_mode_enabled(),
        autocast=tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _AUTOCAST_DEVICES),
        autocast_cache=torch.is_autocast_cache_enabled(),
        dtype=torch.get_default_dtype(),
        device=torch.get_default_device(),
    )


def rng_state() -> torch.Tensor:
    """The CPU random generator's state (a copy)."""
    return torch.random.get_rng_state()


__all__ = ["GlobalState", "rng_state", "snapshot"]
