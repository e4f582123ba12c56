"""Which kernel language a device's graphs are written in: Triton for CUDA, C++ for the CPU, or
Triton everywhere with ``EMBER_INDUCTOR_KERNELS=triton`` (CPU tensors then need
``TRITON_INTERPRET=1``: that is how CI runs the generated kernels). Imports nothing of ember's,
so a lowering may ask (``selection`` builds the backend)."""
from __future__ import annotations

import os


def kernel_language(device_type: str) -> str:
    """"triton" or "cpp" for ``device_type``'s kernels."""
    if device_type == "cuda" or os.environ.get("EMBER_INDUCTOR_KERNELS") == "triton":
        return "triton"
    if device_type == "cpu":
        return "cpp"
    raise NotImplementedError(f"no kernel backend for device {device_type!r} yet")
