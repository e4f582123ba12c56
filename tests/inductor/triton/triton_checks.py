"""Helpers of the Triton tests: compile through the inference path on any device, compare with eager."""
from __future__ import annotations

from typing import Any, Callable

import torch

from ember_inductor.backend import compile_inference
from helpers import assert_same


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
