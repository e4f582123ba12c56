"""A transformers BERT training step through ember_aot with symbolic batch and sequence sizes.

The graph is the model's own code (HF BertForSequenceClassification from a tiny config, called
with input_ids, attention_mask and labels), traced to a graph with symbolic sizes by make_fx;
ember_aot traces its forward and backward once and serves four (batch, sequence) sizes: loss,
logits and every parameter's gradient (None included) equal eager's.
"""
from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call

from ember_aot.backend import aot_eager
from ember_aot.runtime import CompiledPlan

from ember_aot.symbolic import SYMBOLIC_TRACING  # noqa: E402

pytestmark = pytest.mark.skipif(not SYMBOLIC_TRACING, reason="symbolic tracing is checked on torch 2.13; "
                                "older torch compiles a dynamic graph per shape")



def _batch(b: int, s: int) -> list[torch.Tensor]:
    ids = torch.randint(0, 99, (b, s))
    mask = torch.ones(b, s, dtype=torch.long)
    mask[0, s - 2:] = 0  # padding in the first sequence
    return [ids, mask, torch.randint(0, 2, (b,))]


def test_bert_training_step_one_graph_for_many_sizes():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=99, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).train()
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    state = list(model.parameters()) + list(model.buffers())

    def step(*args):
        out = functional_call(model, dict(zip(names, args[:len(names)])), (args[-3],),
                              {"attention_mask": args[-2], "labels": args[-1]})
        return out.loss, out.logits

    gm = make_fx(step, tracing_mode="symbolic")(*[t.detach() for t in state], *_batch(3, 7))
    compiled = aot_eager(gm, state + _batch(3, 7))
    for b, s in [(3, 7), (2, 5), (4, 9), (3, 12)]:
        batch = _batch(b, s)
        model.zero_grad(set_to_none=True)
        loss, logits = compiled(*state, *batch)
        loss.backward()
        grads = [p.grad for p in model.parameters()]
        model.zero_grad(set_to_none=True)
        expected = model(batch[0], attention_mask=batch[1], labels=batch[2])
        expected.loss.backward()
        torch.testing.assert_close(loss, expected.loss)
        torch.testing.assert_close(logits, expected.logits)
        for (name, p), g in zip(model.named_parameters(), grads):
            assert (g is None) == (p.grad is None), name
            if g is not None:
                torch.testing.assert_close(g, p.grad, msg=name)
    assert len(compiled.plans) == 1
    assert isinstance(next(iter(compiled.plans.values())), CompiledPlan)
