"""``optimizer.step()`` compiled by the AOT backends, in a training function written as users write
it: ``loss = model(...).loss; loss.backward(); opt.step(); opt.zero_grad()``.

The step's graph writes into its inputs: the parameters (leaves that require grad, updated under
``no_grad``), the optimizer's state and its 0-d ``step`` counters. ember_aot compiles it as an
inference graph whose input mutations are written back, so it runs through the backend's
compiler (no eager fallback, no warning); after three steps the parameters, the state and the
step counts equal eager's. A graph that writes into an input requiring grad and also needs a
backward is still refused, with one warning.
"""
from __future__ import annotations

import copy
import logging
import warnings

import pytest
import torch

import ember

transformers = pytest.importorskip("transformers")

#: the optimizers with their defaults on CPU (foreach off: one update per parameter). Adam's
#: ``eps`` is raised: the key bias of attention has a zero gradient in exact arithmetic (softmax
#: ignores a shift), so with the default eps Adam turns its rounding noise into full-size updates
OPTIMIZERS = {
    "SGD": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "Adam": lambda params: torch.optim.Adam(params, lr=1e-2, eps=1e-3),
    "AdamW": lambda params: torch.optim.AdamW(params, lr=1e-2, eps=1e-3),
    "AdamW-foreach": lambda params: torch.optim.AdamW(params, lr=1e-2, eps=1e-3, foreach=True),  # CUDA's default
}


@pytest.fixture
def no_eager_fallback(caplog):
    """Fail if ember, ember_aot or the inductor ran anything eagerly instead of compiling it."""
    caplog.set_level(logging.WARNING, logger="ember")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    bad = [str(w.message) for w in caught if str(w.message).startswith("ember")]
    bad += [r.getMessage() for r in caplog.records if r.name.startswith("ember") and r.levelno >= logging.WARNING]
    assert not bad, bad


def _bert():
    config = transformers.BertConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37, vocab_size=99,
        num_labels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        problem_type="single_label_classification",  # as set by the first call: no recompile
    )
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).train()
    return model, copy.deepcopy(model)


def _batch(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 6:] = 0  # padding
    return {"input_ids": torch.randint(0, 99, (2, 8), generator=g), "attention_mask": mask,
            "labels": torch.randint(0, 3, (2,), generator=g)}


def train(model, opt, batch):
    loss = model(**batch).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def _assert_same_training_state(model, opt, ref, ref_opt) -> None:
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, msg=name)
        assert p.grad is None and q.grad is None, name
        state, ref_state = opt.state[p], ref_opt.state[q]
        assert state.keys() == ref_state.keys(), name
        for key in state:  # momentum buffers, exp_avg(_sq), and the step counts
            torch.testing.assert_close(state[key], ref_state[key], msg=f"{name} {key}")


@pytest.mark.parametrize("backend,optimizer", [  # the foreach step through aot_eager only (CI time)
    ("inductor", "SGD"), ("inductor", "Adam"), ("inductor", "AdamW"), ("aot_eager", "AdamW-foreach")])
def test_bert_training_step_compiles_the_optimizer_step(backend, optimizer, no_eager_fallback):
    model, ref = _bert()
    opt, ref_opt = OPTIMIZERS[optimizer](model.parameters()), OPTIMIZERS[optimizer](ref.parameters())
    options = {"strict": True} if backend == "inductor" else None
    step = ember.compile(train, backend=backend, options=options)
    for i in range(3):
        torch.testing.assert_close(step(model, opt, _batch(i)), train(ref, ref_opt, _batch(i)))
    _assert_same_training_state(model, opt, ref, ref_opt)
    if optimizer != "SGD":
        assert int(opt.state[next(model.parameters())]["step"]) == 3


def shrink_then_forward(w, b, x):
    """A write into a parameter under no_grad, then a forward that needs its gradient: one graph."""
    with torch.no_grad():
        w.mul_(0.5)
    return (x @ w.t() + b).sum()


def test_write_into_an_input_requiring_grad_in_a_graph_with_a_backward_is_refused(caplog):
    torch.manual_seed(0)
    w, b, x = torch.randn(2, 3, requires_grad=True), torch.randn(2, requires_grad=True), torch.randn(4, 3)
    ref_w, ref_b = w.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    caplog.set_level(logging.WARNING, logger="ember")
    out = ember.compile(shrink_then_forward, backend="aot_eager")(w, b, x)
    expected = shrink_then_forward(ref_w, ref_b, x)
    out.backward()
    expected.backward()
    torch.testing.assert_close(out, expected)
    for p, q in ((w, ref_w), (b, ref_b)):
        torch.testing.assert_close(p, q)
        torch.testing.assert_close(p.grad, q.grad)
    messages = [r.getMessage() for r in caplog.records if r.name == "ember.aot"]
    assert len(messages) == 1 and "which requires grad, in a graph that needs a backward" in messages[0]


def test_write_that_makes_an_input_require_grad_gives_it_a_history_without_a_backward_otherwise():
    """``buf.add_(x)`` with grad mode on is recorded by autograd (``buf`` gets a grad_fn) even
    when nothing the graph returns needs a backward: the compiled graph gets one, for ``buf``."""
    from aot_helpers import assert_compiled
    from ember_aot.backend import aot_eager

    def fn(x, buf):
        buf.add_(x)
        return buf.detach() * 2

    x, buf = torch.randn(3, requires_grad=True), torch.zeros(3)
    compiled = aot_eager(torch.fx.symbolic_trace(fn), [x, buf])
    out = compiled(x, buf)
    assert_compiled(compiled)
    assert buf.requires_grad and buf.grad_fn is not None and not out.requires_grad
    torch.testing.assert_close(out, x.detach() * 2)
    buf.sum().backward()
    torch.testing.assert_close(x.grad, torch.ones(3))
