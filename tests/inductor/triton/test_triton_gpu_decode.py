"""On a CUDA GPU: LLM decoding with a static KV cache, compiled as people compile it (issue 45,
item 8). On the H200 (torch 2.11) both died in the wrapper's first-call check with
``'NoneType' object has no attribute 'shape'``: torch prefers cuDNN attention there, and its kernel
leaves the logsumexp it is not asked for undefined where its meta kernel makes a tensor. The CPU
side (Triton's interpreter, and the C++ kernels) is test_triton_decode.py and
tests/inductor/test_static_kv_decode.py. Skipped without CUDA."""
from __future__ import annotations

import logging

import pytest
import torch

import ember
from decode_models import check_decode

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_gpt_fast_decode_matches_eager(mode: str | None, caplog: pytest.LogCaptureFixture) -> None:
    check_decode("cuda", 20, caplog, mode=mode, vocab=256, dim=256, heads=4, layers=2, length=64)


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_llama_static_cache_generate_with_compiled_forward(mode: str | None,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """transformers' ``generate(cache_implementation="static")`` with ``model.forward`` compiled
    (``fullgraph=False``: its rotary embedding opens a ``contextlib.nullcontext``), twice.
    ``disable_compile``: on CUDA with a static cache, generate would otherwise wrap the model's call
    in torch.compile by itself (ember then steps aside for torch's tracer, and this tests nothing)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=96, max_position_embeddings=128)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()
    ids = torch.randint(3, 128, (1, 7), device="cuda")

    def generate() -> torch.Tensor:
        return model.generate(ids, max_new_tokens=12, do_sample=False, cache_implementation="static",
                              disable_compile=True)
    expected = generate()
    model.forward = ember.compile(model.forward, mode=mode)
    with caplog.at_level(logging.WARNING, logger="ember.inductor"):
        assert torch.equal(generate(), expected)
        assert torch.equal(generate(), expected)
    assert not [r for r in caplog.records if r.name == "ember.inductor"], [r.getMessage() for r in caplog.records]
