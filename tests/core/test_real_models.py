"""Real models compile: hand-written ResNet-18 and GPT with fullgraph=True, and HuggingFace
transformers models (random weights from small configs, no downloads) in one graph each."""
from __future__ import annotations

import copy
import operator
import sys
import warnings
from pathlib import Path

import pytest
import torch

import ember
import ember.compiled
from core_helpers import CountingBackend

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.models import GPT, ResNet18  # noqa: E402


def test_resnet18_fullgraph_inference_and_training_step():
    torch.manual_seed(0)
    model = ResNet18(width=16)
    x = torch.randn(2, 3, 32, 32)
    backend = CountingBackend()
    compiled = ember.compile(model, backend=backend, fullgraph=True)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    model.train()
    compiled(x).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for got, expected in zip(grads, [p.grad for p in model.parameters()]):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert backend.count == 2  # eval and train capture differently (BatchNorm)


def test_gpt_fullgraph():
    torch.manual_seed(0)
    model = GPT(vocab=64, d=32, heads=2, layers=2).eval()
    idx = torch.randint(0, 64, (2, 16))
    compiled = ember.compile(model, backend="eager", fullgraph=True)
    with torch.no_grad():
        torch.testing.assert_close(compiled(idx), model(idx))


def _transformers_models():
    transformers = pytest.importorskip("transformers")
    vocab = 100
    return {
        "bert": (transformers.BertModel(transformers.BertConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=vocab)),
            {}, "last_hidden_state"),
        "gpt2": (transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_embd=32, n_layer=2, n_head=2, vocab_size=vocab, n_positions=64)), {}, "logits"),
        "llama": (transformers.LlamaForCausalLM(transformers.LlamaConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
            intermediate_size=64, vocab_size=vocab)), {}, "logits"),
    }


@pytest.mark.parametrize("name", ["bert", "gpt2", "llama"])
def test_transformers_model_is_one_graph(name):
    torch.manual_seed(0)
    model, extra, key = _transformers_models()[name]
    model.eval()
    backend = CountingBackend()
    compiled = ember.compile(model, backend=backend)
    with torch.no_grad():
        for length in (16, 16, 12):
            ids = torch.randint(0, 100, (2, length))
            torch.testing.assert_close(compiled(input_ids=ids, **extra)[key], model(input_ids=ids, **extra)[key])
    out = ember.explain(model)(input_ids=torch.randint(0, 100, (2, 16)), **extra)
    assert out.graph_count == 1 and out.graph_break_count == 0 and not out.fallbacks, str(out)
    assert backend.count == 2  # one per sequence length


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_t5_training_step_matches_eager(backend):
    """T5's relative position buckets start as the int 0 and grow with ``+=`` a tensor: the graph
    adds (an ``int += tensor`` is ``int + tensor``), and loss and gradients match eager."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                                   relative_attention_num_buckets=8, dropout_rate=0.0,
                                   decoder_start_token_id=0, pad_token_id=0)
    model = transformers.T5ForConditionalGeneration(config).train()
    reference = copy.deepcopy(model)
    input_ids = torch.randint(1, 99, (2, 7))
    attention_mask = torch.ones(2, 7, dtype=torch.long)
    attention_mask[1, 5:] = 0
    labels = torch.randint(1, 99, (2, 5))
    graphs = []

    def observe(event: str, details: dict) -> None:
        if event == "graph":
            graphs.append(details["graph"])

    ember.compiled.OBSERVERS.append(observe)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # parts of the decoder run eagerly (a `with` around a break)
            loss = ember.compile(model, backend=backend)(input_ids=input_ids, attention_mask=attention_mask,
                                                         labels=labels).loss
    finally:
        ember.compiled.OBSERVERS.remove(observe)
    loss.backward()
    expected = reference(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    expected.backward()
    torch.testing.assert_close(loss, expected)
    for (name, got), want in zip(model.named_parameters(), reference.parameters()):
        assert (got.grad is None) == (want.grad is None), name
        if want.grad is not None:
            torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-5, msg=name)
    # the bucket arithmetic was captured: `0 + (relative_position > 0).to(torch.long) * num_buckets`
    assert any(n.target is operator.add and n.args[0] == 0 for gm in graphs for n in gm.graph.nodes), graphs
