"""Which kernel backend compiles a graph: C++ for CPUs, Triton for GPUs (or everywhere on request).

The backends are imported when first chosen, so a CPU-only process never imports Triton.
"""
from __future__ import annotations

from .common import KernelBackend
from .language import kernel_language


def backend_named(name: str) -> KernelBackend:
    """The backend whose ``name`` is ``name`` ("triton", else the C++ one)."""
    if name == "triton":
        from .triton_backend import TritonBackend

        return TritonBackend()
    from .cpp_backend import CppBackend

    return CppBackend()


def backend_for(device_type: str) -> KernelBackend:
    """The backend of ``device_type``'s kernel language (``language.kernel_language``)."""
    return backend_named(kernel_language(device_type))


__all__ = ["backend_for", "backend_named"]
