"""Training functions: the forward and loss are captured, ``backward`` is a clean graph break
(never the whole function eagerly), ``optimizer.step()`` is captured (its state and the
parameters' gradients are graph inputs, updated in place), ``zero_grad`` (torch disables it for
compilers) runs at a break, gradients of parameters are read as graph inputs, and
``p.grad = None`` is replayed on the parameter."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
import transformers

import ember
from core_helpers import CountingBackend, no_fallback


def _torch_compile_count(fn, calls) -> int:
    import torch._dynamo

    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = torch.compile(fn, backend=backend)
    for args in calls:
        compiled(*args)
    return backend.count


def train(model, opt, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def _net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))


#: graphs torch.compile makes for 3 calls of ``train`` (forward + loss, then the step; SGD's
#: momentum buffers are created by its first step, so its second step recompiles once)
_GRAPHS = {"SGD": 3, "Adam": 2, "AdamW": 2}


@pytest.mark.parametrize("name,options", [("SGD", {"momentum": 0.9}), ("Adam", {}), ("AdamW", {}),
                                          ("AdamW", {"foreach": True})])  # CUDA's default
def test_optimizer_steps_are_captured_and_match_eager(name, options):
    torch.manual_seed(0)
    model = _net()
    ref, theirs = copy.deepcopy(model), copy.deepcopy(model)
    make = getattr(torch.optim, name)
    opt, ref_opt = make(model.parameters(), lr=0.1, **options), make(ref.parameters(), lr=0.1, **options)
    batches = [(torch.randn(4, 3), torch.randn(4, 2)) for _ in range(3)]
    backend = CountingBackend()
    compiled = ember.compile(train, backend=backend)
    with no_fallback():
        for x, y in batches:
            torch.testing.assert_close(compiled(model, opt, x, y), train(ref, ref_opt, x, y))
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q)
        assert p.grad is None and q.grad is None
        state, ref_state = opt.state[p], ref_opt.state[q]
        assert state.keys() == ref_state.keys()
        for key in state:
            torch.testing.assert_close(state[key], ref_state[key], msg=key)
    # the update runs in a graph: parameters and state are written in place there
    assert any(op.endswith("_") for op in backend.ops(1))
    assert backend.count == _GRAPHS[name]
    their_opt = make(theirs.parameters(), lr=0.1, **options)
    assert backend.count <= _torch_compile_count(train, [(theirs, their_opt, x, y) for x, y in batches])


def manual_sgd(params, model, x, y, lr=0.1):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return loss


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_gradients_are_read_and_cleared_in_a_graph(backend):
    torch.manual_seed(0)
    model = _net()
    ref = copy.deepcopy(model)
    counting = CountingBackend()
    compiled = ember.compile(manual_sgd, backend=counting if backend == "eager" else backend)
    with no_fallback():
        for _ in range(3):
            x, y = torch.randn(4, 3), torch.randn(4, 2)
            compiled(list(model.parameters()), model, x, y)
            manual_sgd(list(ref.parameters()), ref, x, y)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q)
        assert p.grad is None
    if backend == "eager":
        assert counting.count == 2  # forward + loss, then the update after backward's break
        assert counting.ops(1).count("isub") == 4


def manual_sgd_over_generator(model, x, y, lr=0.1):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():  # a generator: the capture must not use it up
            p -= lr * p.grad
    model.zero_grad()
    return loss


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_update_over_the_parameters_generator_matches_eager(backend):
    torch.manual_seed(0)
    model = _net()
    ref = copy.deepcopy(model)
    compiled = ember.compile(manual_sgd_over_generator, backend=backend)
    for _ in range(3):
        x, y = torch.randn(4, 3), torch.randn(4, 2)
        torch.testing.assert_close(compiled(model, x, y), manual_sgd_over_generator(ref, x, y))
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q)
        assert p.grad is None and q.grad is None


def test_hf_training_step_matches_eager():
    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=99, num_labels=3)
    model = transformers.BertForSequenceClassification(config)
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = 0.0
    model.eval()  # no dropout: eager and compiled draw no random numbers
    ref = copy.deepcopy(model)
    opt, ref_opt = torch.optim.AdamW(model.parameters(), lr=1e-2), torch.optim.AdamW(ref.parameters(), lr=1e-2)
    input_ids = torch.randint(0, 99, (2, 7))
    attention_mask = torch.ones(2, 7, dtype=torch.long)
    attention_mask[0, 5:] = 0
    labels = torch.tensor([0, 2])

    def step(m, o):
        loss = m(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        o.step()
        o.zero_grad()
        return loss

    compiled = ember.compile(step, backend="eager")
    with no_fallback():
        for _ in range(2):
            torch.testing.assert_close(compiled(model, opt), step(ref, ref_opt))
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, msg=name)
