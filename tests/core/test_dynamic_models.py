"""Dynamic shapes on a real model: HF BERT (tiny config, random weights) evaluated at 10
sequence lengths and 2 batch sizes compiles at most 2 graphs, as torch.compile does on the same
calls, and matches eager at every size."""
from __future__ import annotations

import pytest
import torch

import ember

from core_helpers import CountingBackend, no_fallback

transformers = pytest.importorskip("transformers")


class DynamicCounting(CountingBackend):
    dynamic = True  # runs the graph as it is: right for every size its guards admit


def _bert_calls() -> tuple[torch.nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=99)
    model = transformers.BertModel(config).eval()
    lengths = [5, 9, 12, 7, 16, 21, 3, 11, 14, 8]
    shapes = [(2 + i % 2, t) for i, t in enumerate(lengths)] + [(3 - i % 2, t) for i, t in enumerate(lengths)]
    calls = []
    for batch, length in shapes:  # tokenizer-style: padded batches with an attention mask
        input_ids = torch.randint(1, 99, (batch, length))
        attention_mask = torch.ones(batch, length, dtype=torch.long)
        attention_mask[0, length // 2:] = 0
        input_ids[0, length // 2:] = 0
        calls.append((input_ids, attention_mask))
    return model, calls


def test_bert_over_sequence_lengths_and_batch_sizes_compiles_two_graphs():
    model, calls = _bert_calls()

    def encode(input_ids, attention_mask):
        with torch.no_grad():
            return model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ours = DynamicCounting()
    compiled = ember.compile(encode, backend=ours)
    with no_fallback():
        for input_ids, attention_mask in calls:
            torch.testing.assert_close(compiled(input_ids, attention_mask), encode(input_ids, attention_mask))
    assert ours.count <= 2

    torch._dynamo.reset()
    theirs = DynamicCounting()
    reference = torch.compile(encode, backend=theirs)
    for input_ids, attention_mask in calls:
        reference(input_ids, attention_mask)
    torch._dynamo.reset()
    assert ours.count <= theirs.count, (ours.count, theirs.count)
