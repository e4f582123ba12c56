"""Inputs a graph writes in place where autograd records it: an activation handed across a graph
break and written under grad mode (wav2vec2's ``hidden_states[mask_time_indices] =
masked_spec_embed`` after its numpy mask). ember_aot traces a clone of the input and the runtime
copies the new value into it under grad mode; results, the input's value after the call and the
gradients (also those that flow through the written input into earlier graphs) match eager."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

import ember

CANNOT = "cannot compile this graph"


def _mask(n: int) -> torch.Tensor:
    """A boolean mask made with numpy: a graph break, which the activation crosses."""
    return torch.from_numpy(np.random.RandomState(0).rand(n) > 0.6)


def masked(lin, emb):
    def f(x):
        h = lin(x)
        m = _mask(h.shape[0])
        h[m] = emb.to(h.dtype)
        return h.sum()
    return f


def masked_and_returned(lin, emb):
    def f(x):
        h = lin(x)
        m = _mask(h.shape[0])
        h[m] = emb.to(h.dtype)
        return h, h.sum()
    return f


def written_twice(lin, emb):
    def f(x):
        h = lin(x)
        m = _mask(h.shape[0])
        h[m] = emb.to(h.dtype)
        h.mul_(2)
        h[~m] += 1
        return h.sin().sum()
    return f


def written_through_a_view(lin, emb):
    def f(x):
        h = lin(x)
        m = _mask(h.shape[0])
        h[:, :2].mul_(emb[:2])
        return h, h.sum() * m.sum()
    return f


def view_handed_over(lin, emb):
    """The written input is a view made before the break (its base does not cross it)."""
    def f(x):
        h = lin(x)
        v = h[:, 1:3]
        m = _mask(h.shape[0])
        v[m] = emb[:2]
        return v.sum() * 2
    return f


def strided_view_handed_over(lin, emb):
    """A non-contiguous activation crosses the break; an output is a view of it: regenerated
    with the real input's strides (the analysis' fake of it must keep them)."""
    def f(x):
        h = lin(x)
        v = h[:, 1:3]
        m = _mask(h.shape[0])
        v.mul_(emb[:2])
        return v[1], v.sum() * m.sum()
    return f


def expanded_handed_over(lin, emb):
    """An activation whose memory overlaps (an expanded row) crosses the break, read only."""
    def f(x):
        e = lin(x)[0].expand(3, 4)
        m = _mask(e.shape[0])
        return e[1] * emb, e.sum() * m.sum()
    return f


def view_and_base_handed_over(lin, emb):
    """Both the view and its base cross the break: the graph runs eagerly for the call (a
    mutated input shares memory with another input), with one warning."""
    def f(x):
        h = lin(x)
        v = h[:, 1:3]
        m = _mask(h.shape[0])
        v[m] = emb[:2]
        return h.cos().sum() + v.sum()
    return f


def _run(make, compiled: str | None, grad: bool = True):
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)
    emb = torch.nn.Parameter(torch.randn(4))
    fn = make(lin, emb)
    if compiled:
        fn = ember.compile(fn, backend=compiled)
    x = torch.randn(3, 4, requires_grad=True)
    with torch.set_grad_enabled(grad):
        outs = fn(x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    if grad:
        sum((o * (k + 1.5)).sum() for k, o in enumerate(outs)).backward()
    return [o.detach().clone() for o in outs], [p.grad for p in (x, lin.weight, lin.bias, emb)]


def _assert_same(got, expected):
    (outs, grads), (eager_outs, eager_grads) = got, expected
    torch.testing.assert_close(outs, eager_outs)
    assert [g is None for g in grads] == [g is None for g in eager_grads]
    torch.testing.assert_close([g for g in grads if g is not None], [g for g in eager_grads if g is not None])


CASES = [masked, masked_and_returned, written_twice, written_through_a_view, view_handed_over,
         strided_view_handed_over, expanded_handed_over]


@pytest.mark.parametrize("make", CASES, ids=[c.__name__ for c in CASES])
def test_written_activation_compiles_and_matches_eager(make, caplog):
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        got = _run(make, "aot_eager")
    assert not [r for r in caplog.records if r.name == "ember.aot"]
    _assert_same(got, _run(make, None))
    assert got[1][1].abs().sum() > 0  # the gradient reached the graph before the break


def test_written_activation_through_inductor(caplog):
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        got = _run(masked_and_returned, "inductor")
    assert not [r for r in caplog.records if r.name == "ember.aot"]
    _assert_same(got, _run(masked_and_returned, None))


def test_written_view_whose_base_is_an_input_runs_eagerly_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        got = _run(view_and_base_handed_over, "aot_eager")
    assert [r.getMessage() for r in caplog.records if r.name == "ember.aot"] == [
        "ember_aot: running this graph eagerly for this call: a mutated input shares memory with another input"]
    _assert_same(got, _run(view_and_base_handed_over, None))


def test_written_activation_returned_keeps_its_history():
    """The returned tensor is the caller's input, written: its history runs through the graph."""
    torch.manual_seed(0)
    lin, emb = torch.nn.Linear(4, 4), torch.nn.Parameter(torch.randn(4))
    h, _ = ember.compile(masked_and_returned(lin, emb), backend="aot_eager")(torch.randn(3, 4))
    assert h.grad_fn is not None and h.requires_grad
    h.pow(2).sum().backward()
    assert lin.weight.grad is not None and emb.grad is not None


def test_written_activation_without_grad():
    _assert_same(_run(masked_and_returned, "aot_eager", grad=False), _run(masked_and_returned, None, grad=False))


def test_written_leaf_fails_as_in_eager():
    def f(p):
        m = _mask(p.shape[0])
        p[m] = 0.0
        return p.sum()

    p = torch.nn.Parameter(torch.randn(3))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        f(p)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        ember.compile(f, backend="aot_eager")(p)


def _wav2vec2_step(backend: str | None):
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    config = Wav2Vec2Config(
        vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
        conv_dim=(4, 4), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2, mask_time_prob=0.5, mask_time_length=2, mask_time_min_masks=1,
        hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
        final_dropout=0.0, layerdrop=0.0, ctc_loss_reduction="mean", pad_token_id=0)
    torch.manual_seed(0)
    model = Wav2Vec2ForCTC(config).train()
    model.freeze_feature_encoder()  # its parameters' gradients stay None

    def step(inputs, labels):
        return model(input_values=inputs, labels=labels).loss

    fn = ember.compile(step, backend=backend) if backend else step
    inputs, labels = torch.randn(2, 200), torch.randint(1, 8, (2, 4))
    np.random.seed(0)  # the time mask is drawn with numpy
    loss = fn(inputs, labels)
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters()}


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_wav2vec2_training_step_masks_time_in_a_compiled_graph(backend, caplog):
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        loss, grads = _wav2vec2_step(backend)
    assert not [r.getMessage() for r in caplog.records if r.name == "ember.aot" and CANNOT in r.getMessage()]
    eager_loss, eager_grads = _wav2vec2_step(None)
    torch.testing.assert_close(loss, eager_loss)
    assert {n for n, g in grads.items() if g is None} == {n for n, g in eager_grads.items() if g is None}
    assert any(g is None for g in eager_grads.values()) and eager_grads["wav2vec2.masked_spec_embed"] is not None
    torch.testing.assert_close({n: g for n, g in grads.items() if g is not None},
                               {n: g for n, g in eager_grads.items() if g is not None})


def test_written_activation_with_symbolic_sizes(caplog):
    """Traced once for every batch size (the mask's ``nonzero`` needs data-dependent output shapes
    allowed in capture: without them that graph runs eagerly, as any such graph under grad)."""
    def run(compiled):
        torch.manual_seed(0)
        lin, emb = torch.nn.Linear(4, 4), torch.nn.Parameter(torch.randn(4))
        fn = masked_and_returned(lin, emb)
        if compiled:
            fn = ember.compile(fn, backend="aot_eager", dynamic=True)
        results = []
        for n in (5, 6, 7):
            x = torch.randn(n, 4, requires_grad=True)
            h, s = fn(x)
            (h.sin().sum() + s).backward()
            results.append((h.detach(), x.grad, lin.weight.grad.clone(), emb.grad.clone()))
        return results

    with ember.config.patch(capture_dynamic_output_shape_ops=True), caplog.at_level(logging.WARNING, "ember.aot"):
        got = run(True)
    assert not [r for r in caplog.records if r.name == "ember.aot"]
    torch.testing.assert_close(got, run(False))
