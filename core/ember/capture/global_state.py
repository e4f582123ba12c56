"""Torch's global state that a compiled call must leave as eager Python would: grad mode,
inference mode, autocast, the default dtype and device, the backend flags (cuDNN, TF32, matmul
precision, deterministic algorithms, the attention backends...) and the CPU random generator.

Capture evaluates some calls for real (torch functions on fake tensors, helpers on constants).
:func:`snapshot` and :meth:`GlobalState.restore` let it put back whatever such an evaluation
changed, so that capturing never changes the state the program runs in; state changes the
program asks for are recorded in the graph (``contexts.py``) or happen in Python at a break.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

_AUTOCAST_DEVICES = ("cpu", "cuda")
_C = torch._C
# torch's backend flags as (read, write) pairs: a torch function evaluated at capture with no
# tensor argument (``torch.backends.cudnn.flags``'s ``_set_cudnn_enabled``) sets them for real
BACKEND_FLAGS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    name: (getattr(_C, f"_get_{name}"), getattr(_C, f"_set_{name}")) for name in (
        "cudnn_enabled", "cudnn_benchmark", "cudnn_deterministic", "cudnn_allow_tf32", "cublas_allow_tf32",
        "float32_matmul_precision", "mkldnn_enabled", "nnpack_enabled", "blas_preferred_backend",
        "linalg_preferred_backend", "cpu_allow_fp16_reduced_precision_reduction")
    if hasattr(_C, f"_get_{name}") and hasattr(_C, f"_set_{name}")
}
BACKEND_FLAGS["deterministic_algorithms"] = (
    lambda: (_C._get_deterministic_algorithms(), _C._get_deterministic_algorithms_warn_only()),
    lambda value: _C._set_deterministic_algorithms(value[0], warn_only=value[1]))
BACKEND_FLAGS.update({
    f"{kind}_sdp": (getattr(_C, f"_get_{kind}_sdp_enabled"), getattr(_C, f"_set_sdp_use_{kind}"))
    for kind in ("flash", "mem_efficient", "math", "cudnn") if hasattr(_C, f"_set_sdp_use_{kind}")})
_UNREADABLE = object()


def _read(read: Callable[[], Any]) -> Any:
    """A flag's value; torch refuses to read the matmul precision after a mix of its two APIs."""
    try:
        return read()
    except RuntimeError:
        return _UNREADABLE


@dataclasses.dataclass(frozen=True)
class GlobalState:
    grad: bool
    inference: bool
    autocast: tuple[tuple[str, bool, torch.dtype], ...]
    autocast_cache: bool
    dtype: torch.dtype
    device: torch.device
    flags: tuple[Any, ...]  # BACKEND_FLAGS' values, in its order

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
        for (read, write), value in zip(BACKEND_FLAGS.values(), self.flags):
            if value is not _UNREADABLE and _read(read) != value:
                write(value)


def snapshot() -> GlobalState:
    """The current global state (the random generator is handled by :func:`rng_state`)."""
    return GlobalState(
        grad=torch.is_grad_enabled(),
        inference=torch.is_inference_mode_enabled(),
        autocast=tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _AUTOCAST_DEVICES),
        autocast_cache=torch.is_autocast_cache_enabled(),
        dtype=torch.get_default_dtype(),
        device=torch.get_default_device(),
        flags=tuple(_read(read) for read, _ in BACKEND_FLAGS.values()),
    )


def rng_state() -> torch.Tensor:
    """The CPU random generator's state (a copy)."""
    return torch.random.get_rng_state()


__all__ = ["GlobalState", "rng_state", "snapshot"]
