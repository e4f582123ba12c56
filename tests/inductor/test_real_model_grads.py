"""Training steps of HuggingFace models through ``backend="inductor"``: every parameter's
gradient against eager, including which ones are None.

Tiny configs with random weights, called as their users call them (tokenizer-style
``input_ids`` + ``attention_mask`` with padding, ``labels``; ``pixel_values`` for ViT), in train
mode with dropout probabilities 0 so eager and compiled runs are comparable. These caught
wrong attention gradients (the CPU flash attention decomposition in the joint graph) and zero
gradients where eager leaves None (a pooler whose output the loss does not use).
"""
from __future__ import annotations

import pytest
import torch

import ember

transformers = pytest.importorskip("transformers")

SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99,
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _text_inputs(g: torch.Generator) -> dict:
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 5:] = 0
    return {"input_ids": torch.randint(0, 99, (2, 7), generator=g), "attention_mask": mask}


def _bert(g):
    model = transformers.BertForSequenceClassification(transformers.BertConfig(**SMALL))
    return model, {**_text_inputs(g), "labels": torch.tensor([0, 1])}


def _mobilebert(g):
    model = transformers.MobileBertForSequenceClassification(transformers.MobileBertConfig(
        **SMALL, embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16))
    return model, {**_text_inputs(g), "labels": torch.tensor([0, 1])}


def _bart(g):
    model = transformers.BartForConditionalGeneration(transformers.BartConfig(
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=37, decoder_ffn_dim=37, vocab_size=99, max_position_embeddings=32,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0))
    return model, {**_text_inputs(g), "labels": torch.randint(0, 99, (2, 5), generator=g)}


def _vit(g):
    model = transformers.ViTForImageClassification(transformers.ViTConfig(
        **{k: v for k, v in SMALL.items() if k != "vocab_size"}, image_size=16, patch_size=4, num_labels=3))
    return model, {"pixel_values": torch.randn(2, 3, 16, 16, generator=g), "labels": torch.tensor([0, 2])}


def _bert_hidden_states(g):
    return transformers.BertModel(transformers.BertConfig(**SMALL)), _text_inputs(g)


def _mobilebert_hidden_states(g):
    return transformers.MobileBertModel(transformers.MobileBertConfig(
        **SMALL, embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16)), _text_inputs(g)


MODELS = {"bert": _bert, "mobilebert": _mobilebert, "bart": _bart, "vit": _vit,
          # only last_hidden_state feeds the loss: the pooler's gradients stay None
          "bert_hidden_states": _bert_hidden_states, "mobilebert_hidden_states": _mobilebert_hidden_states}


def _loss(out) -> torch.Tensor:
    return out.loss if getattr(out, "loss", None) is not None else out.last_hidden_state.pow(2).mean()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_step_gradients_match_eager(name: str) -> None:
    torch.manual_seed(0)
    model, inputs = MODELS[name](torch.Generator().manual_seed(1))
    model.train()
    _loss(model(**inputs)).backward()
    expected = {n: p.grad for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    compiled = ember.compile(model, backend="inductor")
    loss = _loss(compiled(**inputs))
    loss.backward()
    assert any(g is None for g in expected.values()) == name.endswith("hidden_states")
    for n, p in model.named_parameters():
        assert (p.grad is None) == (expected[n] is None), n
        if p.grad is not None:
            torch.testing.assert_close(p.grad, expected[n], rtol=1e-4, atol=1e-5, msg=lambda m: f"{n}: {m}")
