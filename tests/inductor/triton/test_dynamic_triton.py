"""Dynamic shapes in the Triton kernels, run in Triton's interpreter: the sizes are kernel
arguments (``xnumel``/``rnumel`` computed from them) and the grid is computed from them at each
launch, so one compiled graph serves every size."""
from __future__ import annotations

import os
import re
import sys

import pytest
import torch

pytest.importorskip("triton", reason="triton is not installed (pip install -e .[test])")
if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
    pytest.skip("needs TRITON_INTERPRET=1 set before triton is imported", allow_module_level=True)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from inductor_dynamic_helpers import compile_symbolic, run_sizes  # noqa: E402

SIZES = [(3, 7), (2, 5), (4, 9), (5, 2), (2, 33), (3, 130)]


@pytest.fixture(autouse=True)
def _triton_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_INDUCTOR_KERNELS", "triton")


def _pointwise(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * y + x[:, 1:].sum() * 0  # a broadcast, and a slice of a symbolic dim


def _reductions(x: torch.Tensor) -> tuple:
    return torch.softmax(x, -1), x.mean(0), x.amax(-1)


def test_pointwise_with_symbolic_numel() -> None:
    x, y = torch.randn(3, 7), torch.randn(7)
    _, compiled = compile_symbolic(_pointwise, x, y)
    assert re.search(r"xnumel = .*s\d+", compiled.source)
    assert re.search(r"def triton_\w+\(.*\bs\d+,", compiled.source)  # sizes are arguments
    cases = [(torch.randn(b, t), torch.randn(t)) for b, t in SIZES]
    assert run_sizes(compiled, _pointwise, cases) == 0


def test_reductions_with_symbolic_lengths() -> None:
    _, compiled = compile_symbolic(_reductions, torch.randn(3, 7))
    assert re.search(r"rnumel = s\d+", compiled.source)
    assert "for roffset in range(0, rnumel, RBLOCK)" in compiled.source  # looped: any length
    assert run_sizes(compiled, _reductions, [(torch.randn(b, t),) for b, t in SIZES]) == 0
