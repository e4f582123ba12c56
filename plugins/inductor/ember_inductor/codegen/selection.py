"""Which kernel backend compiles a graph: C++ for CPUs, Triton for GPUs (or everywhere on request).

The backends are imported when first chosen, so a CPU-only process never imports Triton.
"""
from __future__ import annotations

import os

from .common import KernelBackend


def backend_named(name: str) -> KernelBackend:
    """The backend whose ``name`` is ``name`` ("triton", else the C++ one)."""
    if name == "triton":
        from .triton_backend import TritonBackend

        return TritonBackend()
    from .cpp_backend import CppBackend

    return CppBackend()


def backend_for(device_type: str) -> KernelBackend:
    """Triton for CUDA, C++ for CPU; ``EMBER_INDUCTOR_KERNELS=triton`` picks Triton everywhere
    (CPU tensors then need ``TRITON_INTERPRET=1``: that is how CI runs the generated kernels)."""
    if device_type == "cuda" or os.environ.get("EMBER_INDUCTOR_KERNELS") == "triton":
        return backend_named("triton")
    if device_type == "cpu":
        return backend_named("cpp")
    raise NotImplementedError(f"no kernel backend for device {device_type!r} yet")


__all__ = ["backend_for", "backend_named"]
