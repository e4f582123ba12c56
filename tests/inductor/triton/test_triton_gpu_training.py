"""On a CUDA GPU: training steps whose attention takes an additive mask (issue 45, item 9), and
wav2vec2's, which writes into a view the compiled graph returns (item 10).

CUDA's memory-efficient attention reads a bias whose rows are aligned (``scaled_dot_product_attention``
pads it to rows of 8 elements and slices it back). On the H200 (torch 2.11) Whisper's and CLIP's
training steps failed: the compiled forward saved the bias dense for the backward, which was
compiled for the padded strides, so the backward ran with aten and the kernel refused the bias
("attn_bias is not correctly aligned (strideM)"). The same contract is checked on the CPU in
tests/inductor/test_attention_bias.py and test_extern_layout.py. wav2vec2's CTC step masks time
steps of ``hidden_states`` in place after a graph break, and that tensor is a view the compiled
graph returned: autograd refused the write ("Output 0 of AOTFunctionBackward is a view and is
being modified inplace"); on the CPU: tests/aot/test_aot_output_views.py. Skipped without CUDA."""
from __future__ import annotations

import logging
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.gpu
transformers = pytest.importorskip("transformers")


def _no_dropout(config: Any) -> Any:
    for name, value in config.to_dict().items():
        if "drop" in name and isinstance(value, float):
            setattr(config, name, 0.0)
    return config


def _whisper() -> tuple[torch.nn.Module, dict]:
    config = _no_dropout(transformers.WhisperConfig(
        vocab_size=99, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=37, decoder_ffn_dim=37, num_mel_bins=16, max_source_positions=30,
        max_target_positions=40, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1))
    g = torch.Generator().manual_seed(1)
    batch = {"input_features": torch.randn(2, 16, 60, generator=g), "labels": torch.randint(3, 99, (2, 6), generator=g),
             "decoder_attention_mask": torch.tensor([[1] * 6, [1] * 4 + [0] * 2])}
    return transformers.WhisperForConditionalGeneration(config), batch


def _clip_text() -> tuple[torch.nn.Module, dict]:
    """CLIP's text tower: a causal mask and a padding mask, added (6 keys: rows of 6)."""
    config = _no_dropout(transformers.CLIPTextConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
        max_position_embeddings=16, pad_token_id=0, bos_token_id=1, eos_token_id=2))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 99, (2, 6), generator=g)
    ids[:, -1] = 2
    return transformers.CLIPTextModel(config), {"input_ids": ids, "attention_mask": torch.tensor([[1] * 6, [1] * 3 + [0] * 3])}


def _wav2vec2() -> tuple[torch.nn.Module, dict]:
    """CTC training with SpecAugment's time masks (drawn with numpy: seeded per step below)."""
    config = _no_dropout(transformers.Wav2Vec2Config(
        vocab_size=20, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
        conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2, pad_token_id=0, ctc_loss_reduction="mean", mask_time_prob=0.5,
        mask_time_length=2))
    g = torch.Generator().manual_seed(1)
    return transformers.Wav2Vec2ForCTC(config), {"input_values": torch.randn(2, 800, generator=g),
                                                 "labels": torch.randint(1, 20, (2, 5), generator=g)}


def _loss(out: Any) -> torch.Tensor:
    return out.loss if getattr(out, "loss", None) is not None else out.last_hidden_state.square().mean()


def _train_step(build: Callable, compiled: bool) -> tuple[torch.Tensor, dict]:
    torch.manual_seed(0)
    model, batch = build()
    model = model.cuda().train()
    batch = {k: v.cuda() for k, v in batch.items()}

    def step(**b: torch.Tensor) -> torch.Tensor:
        loss = _loss(model(**b))
        loss.backward()
        return loss.detach()
    np.random.seed(0)
    loss = (ember.compile(step) if compiled else step)(**batch)
    return loss, {n: p.grad for n, p in model.named_parameters()}


@pytest.mark.parametrize("build", [_whisper, _clip_text, _wav2vec2], ids=["whisper", "clip_text", "wav2vec2"])
def test_training_step_matches_eager(build: Callable, caplog: pytest.LogCaptureFixture) -> None:
    expected_loss, expected = _train_step(build, compiled=False)
    with caplog.at_level(logging.WARNING, logger="ember"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss, grads = _train_step(build, compiled=True)
    torch.testing.assert_close(loss, expected_loss, rtol=1e-4, atol=1e-5)
    for name, grad in expected.items():
        assert (grads[name] is None) == (grad is None), name
        if grad is not None:
            torch.testing.assert_close(grads[name], grad, rtol=1e-3, atol=1e-4, msg=name)
    falls_back = [r.getMessage() for r in caplog.records if r.name.startswith("ember")]
    falls_back += [str(w.message) for w in caught if str(w.message).startswith("ember:")]
    assert not falls_back, falls_back  # a graph the inductor gave up on, or a call run eagerly
