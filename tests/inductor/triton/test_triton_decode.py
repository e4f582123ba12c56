"""gpt-fast's decoding step and an aten call with an undefined output, with the Triton kernels and
wrapper a GPU runs (in Triton's interpreter on CPU tensors): issue 45, item 8.

On the H200 both crashed in the wrapper's first-call check (``'NoneType' object has no attribute
'shape'``): torch prefers cuDNN attention there, whose kernel leaves the logsumexp it is not asked
for undefined where its meta kernel makes a tensor. The decoding step itself then ran eagerly on
the CPU (an ``add_`` that functionalization let through). The GPU run of the same loop, both
modes, is tests/inductor/triton/test_triton_gpu_decode.py.
"""
from __future__ import annotations

import pytest
import torch

import ember
from decode_models import check_decode
from triton_checks import interpreter_only
from undefined_outputs import first_of_pair

interpreter_only()
pytestmark = pytest.mark.usefixtures("triton_kernels")


def test_decode_with_a_static_kv_cache_matches_eager(caplog: pytest.LogCaptureFixture) -> None:
    check_decode("cpu", 4, caplog, options={"eager_fallback": False})


def test_an_output_left_undefined_and_never_read_is_not_bound() -> None:
    x = torch.randn(64)
    compiled = ember.compile(first_of_pair, fullgraph=True, options={"eager_fallback": False, "strict": True})
    torch.testing.assert_close(compiled(x), first_of_pair(x))
