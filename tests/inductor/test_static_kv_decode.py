"""gpt-fast's decoding step compiled whole: a static KV cache written in place into module buffers,
attention under a boolean mask row, bfloat16, ``fullgraph=True`` (issue 45, item 8).

Its RMSNorm's composite kernel adds the epsilon with ``add_`` on the mean it has just computed, below
the functionalization layer (torch 2.13): the in-place op reached the traced graph, ember_aot
refused it ("mutating op aten.add_.Scalar survived functionalization") and the decoding step ran
eagerly. The Triton side of it is tests/inductor/triton/test_triton_decode.py, the GPU one
tests/inductor/triton/test_triton_gpu_decode.py.
"""
from __future__ import annotations

import pytest

from decode_models import check_decode


def test_decode_with_a_static_kv_cache_compiles_and_matches_eager(caplog: pytest.LogCaptureFixture) -> None:
    check_decode("cpu", 6, caplog, options={"eager_fallback": False})
