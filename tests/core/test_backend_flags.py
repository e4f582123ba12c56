"""torch's backend flags (cuDNN, mkldnn, TF32, matmul precision, deterministic algorithms, the
attention backends) around compiled code: the state after each call is eager's.

Capture evaluates a torch function that takes no tensor for real; ``torch.backends.cudnn.flags``
sets ``_set_cudnn_enabled`` that way, so compiling transformers' CTC loss (``with
torch.backends.cudnn.flags(enabled=False): return ctc_loss(...)``) left cuDNN off for the rest of
the process, and the guards of that capture failed on the call that made them (it ran eagerly).
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import pytest
import torch

import ember

CONTEXTS: dict[str, Callable[[], Any]] = {
    "cudnn.flags": lambda: torch.backends.cudnn.flags(enabled=False, benchmark=True, deterministic=True),
    "mkldnn.flags": lambda: torch.backends.mkldnn.flags(enabled=False),
    "sdpa_kernel": lambda: torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]),
}


def _flags() -> dict[str, Any]:
    cudnn, sdp = torch.backends.cudnn, torch.backends.cuda
    return {"cudnn": (cudnn.enabled, cudnn.benchmark, cudnn.deterministic), "mkldnn": torch.backends.mkldnn.enabled,
            "sdp": (sdp.flash_sdp_enabled(), sdp.mem_efficient_sdp_enabled(), sdp.math_sdp_enabled()),
            "deterministic": torch.are_deterministic_algorithms_enabled()}


@pytest.mark.parametrize("after_a_break", [False, True], ids=["plain", "after-a-break"])
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_a_flags_context_leaves_the_flags_as_eager(context: str, after_a_break: bool,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    def f(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        y = x.masked_select(m) if after_a_break else x  # a data-dependent op: a graph break
        with CONTEXTS[context]():
            return y.sum() * 2

    before = _flags()
    compiled = ember.compile(f, backend="eager")
    x = torch.arange(4.0)
    with caplog.at_level(logging.WARNING, "ember"):
        for _ in range(3):
            assert compiled(x, x > 0).item() == f(x, x > 0).item()
            assert _flags() == before
    assert "fail on the call that made them" not in caplog.text


def test_a_flag_the_program_sets_stays_set_as_in_eager() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        torch.set_float32_matmul_precision("high")
        torch.backends.cudnn.benchmark = True
        return x + 1

    try:
        torch.testing.assert_close(ember.compile(f, backend="eager")(torch.ones(2)), torch.full((2,), 2.0))
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.benchmark
    finally:
        torch.set_float32_matmul_precision("highest")
        torch.backends.cudnn.benchmark = False


def test_a_flag_read_in_compiled_code_is_guarded() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return x + 1 if torch.backends.cudnn.enabled else x - 1

    compiled = ember.compile(f, backend="eager")
    assert compiled(torch.zeros(1)).item() == 1
    with torch.backends.cudnn.flags(enabled=False):
        assert compiled(torch.zeros(1)).item() == -1
    assert compiled(torch.zeros(1)).item() == 1
