"""Training loops with ``.backward()`` inside the compiled function, as users write them: gradient
accumulation over micro-batches, a loop called repeatedly, ``retain_graph``, two losses of one
forward. Each backend is compared with the same code run eagerly: outputs, parameters, and
gradients, including which of them are None."""
from __future__ import annotations

import copy
import logging

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ember

BACKENDS = ["eager", "aot_eager", "inductor"]


def _compile(fn, backend: str):
    return ember.compile(fn, backend=backend, options={"strict": True} if backend == "inductor" else None)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 3))
        self.unused = nn.Linear(3, 3)  # never called: its grads stay None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def _models() -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    model = Net()
    return model, copy.deepcopy(model)


def _batch(seed: int, n: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 6, generator=g), torch.randn(n, 3, generator=g)


def _assert_same(model: nn.Module, ref: nn.Module, atol: float = 1e-5) -> None:
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, atol=atol, rtol=1e-4, msg=name)
        assert (p.grad is None) == (q.grad is None), name
        if q.grad is not None:
            torch.testing.assert_close(p.grad, q.grad, atol=atol, rtol=1e-4, msg=name)


@pytest.fixture
def no_compiler_fallback(caplog):
    """Fail if ember_aot or the inductor ran a graph eagerly instead of compiling it."""
    caplog.set_level(logging.WARNING, logger="ember")
    yield
    bad = [r.getMessage() for r in caplog.records
           if r.name in ("ember.aot", "ember.inductor", "ember.backends") and r.levelno >= logging.WARNING]
    assert not bad, bad


def accumulate(model, opt, x, y):
    """The issue's step, over 4 micro-batches, summing the loss for logging."""
    total = 0
    for xb, yb in zip(x.chunk(4), y.chunk(4)):
        loss = F.mse_loss(model(xb), yb) / 4
        loss.backward()
        total += loss.detach()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return total


@pytest.mark.parametrize("optimizer", ["SGD", "AdamW"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_accumulation_step(backend, optimizer, no_compiler_fallback):
    model, ref = _models()
    make = {"SGD": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
            "AdamW": lambda p: torch.optim.AdamW(p, lr=0.01)}[optimizer]
    opt, ref_opt = make(model.parameters()), make(ref.parameters())
    step = _compile(accumulate, backend)
    for i in range(3):
        x, y = _batch(i)
        torch.testing.assert_close(step(model, opt, x, y), accumulate(ref, ref_opt, x, y))
        _assert_same(model, ref)


def accumulate_with_graph(model, x, y):
    """Sums the losses without detach: the sum keeps the (already backward'ed) losses' graphs."""
    total = 0
    for xb, yb in zip(x.chunk(2), y.chunk(2)):
        loss = F.mse_loss(model(xb), yb) / 2
        loss.backward()
        total = total + loss
    return total


@pytest.mark.parametrize("backend", BACKENDS)
def test_accumulated_loss_that_keeps_its_graph(backend, no_compiler_fallback):
    model, ref = _models()
    step = _compile(accumulate_with_graph, backend)
    for i in range(2):
        x, y = _batch(i)
        total, ref_total = step(model, x, y), accumulate_with_graph(ref, x, y)
        torch.testing.assert_close(total, ref_total)
        assert total.requires_grad and ref_total.requires_grad
        _assert_same(model, ref)


def train_step(model, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    return loss


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_inside_a_function_called_repeatedly(backend, no_compiler_fallback):
    model, ref = _models()
    step = _compile(train_step, backend)
    for i in range(3):  # grads accumulate over the calls
        x, y = _batch(i)
        torch.testing.assert_close(step(model, x, y), train_step(ref, x, y))
        _assert_same(model, ref)


def backward_twice(model, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward(retain_graph=True)
    (loss * 3).backward()
    return loss


@pytest.mark.parametrize("backend", BACKENDS)
def test_retain_graph_then_a_second_backward(backend, no_compiler_fallback):
    model, ref = _models()
    x, y = _batch(0)
    torch.testing.assert_close(_compile(backward_twice, backend)(model, x, y), backward_twice(ref, x, y))
    _assert_same(model, ref)


def two_losses(model, x, y, together: bool):
    out = model(x)
    a, b = F.mse_loss(out, y), out.abs().mean()
    if together:
        (a + b).backward()
    else:
        a.backward(retain_graph=True)
        b.backward()
    return a, b


@pytest.mark.parametrize("together", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_two_losses_of_one_forward(backend, together, no_compiler_fallback):
    model, ref = _models()
    x, y = _batch(0)
    got = _compile(two_losses, backend)(model, x, y, together)
    torch.testing.assert_close(got, two_losses(ref, x, y, together))
    _assert_same(model, ref)
    if not together:  # the same gradients as one backward of the sum
        summed, _ = _models()
        two_losses(summed, x, y, True)
        _assert_same(model, summed)


def bert_step(model, opt, input_ids, attention_mask, labels):
    for ids, mask, lab in zip(input_ids.chunk(2), attention_mask.chunk(2), labels.chunk(2)):
        out = model(input_ids=ids, attention_mask=mask, labels=lab)
        (out.loss / 2).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transformers_bert_two_micro_batches(backend, no_compiler_fallback):
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99,
        num_labels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        problem_type="single_label_classification",  # as set by the first call: no recompile
    )
    config._attn_implementation = "eager"  # SDPA's inductor gradients are another issue's
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).train()
    ref = copy.deepcopy(model)
    opt, ref_opt = (torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (model, ref))
    step = _compile(bert_step, backend)
    for i in range(2):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 99, (4, 8), generator=g)
        mask = torch.ones(4, 8, dtype=torch.long)
        mask[1, 5:] = 0  # padding
        labels = torch.randint(0, 3, (4,), generator=g)
        step(model, opt, ids, mask, labels)
        bert_step(ref, ref_opt, ids, mask, labels)
        _assert_same(model, ref)
