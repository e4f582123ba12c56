"""Helpers of the Triton tests: compile through the inference path on any device, compare with eager."""
from __future__ import annotations

import os
from typing import Any, Callable

import pytest
import torch

from ember_inductor.backend import compile_inference
from helpers import assert_same


def interpreter_only() -> None:
    """Skip the calling test module unless Triton is installed and its interpreter runs the
    kernels (``TRITON_INTERPRET=1``, set before triton is imported: conftest.py does so without CUDA)."""
    pytest.importorskip("triton", reason="triton is not installed (pip install -e .[test])")
    if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("needs TRITON_INTERPRET=1 set before triton is imported", allow_module_level=True)


def fresh(x: torch.Tensor) -> torch.Tensor:
    """New values with the same size, strides and device."""
    out = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    return out.copy_(torch.randn(x.shape).to(x.dtype))


def check(fn: Callable, *inputs: Any, lowered: bool = True) -> Any:
    """Compile ``fn``, compare with eager on ``inputs`` and on fresh values; return the compiled."""
    compiled = compile_inference(fn, list(inputs))
    assert_same(compiled(*inputs), fn(*inputs))
    again = [fresh(x) if isinstance(x, torch.Tensor) and x.dtype.is_floating_point else x for x in inputs]
    assert_same(compiled(*again), fn(*again))
    if lowered:
        assert compiled.compiled.fallback_ops == [], compiled.compiled.fallback_ops
    return compiled


def kernel_source(compiled: Any) -> str:
    return compiled.compiled.source
