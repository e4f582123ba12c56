"""Iterators live at a graph break (issue 46): the wav2vec2-family audio classifiers of the registry
sweep ran transformers' hook installer (``recursively_install_hooks``) wholly in eager, as it breaks
the graph inside ``for name, module in parent.named_children():``.

Reduced: a generator that changes only what it made itself (``named_children``'s ``memo`` set) is
run ahead at the break, its items handed to the resume function as a list; an iterator that a break
cannot keep in the capture (one a name shares, one passed in, a generator that changes what the
code after the break sees) is a real Python object there, advanced with ``next()`` at a break per
item. Each: no eager fallback, results (and gradients) equal eager's. torch.compile runs a frame
with a break inside a loop wholly in Python (no graph); the model's graphs are as many as its.
"""
from __future__ import annotations

import warnings

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback, torch_compile_graph_count


def _x(*shape: int, grad: bool = False) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).requires_grad_(grad)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(3, 3)))


def children(module):
    memo = set()  # changed by the generator only: it may run ahead
    for name, child in module._modules.items():
        if child is not None and child not in memo:
            memo.add(child)
            yield name, child


def through_children(model, x):
    for _, child in children(model):
        x = child(x)
        print("", end="")  # a graph break inside the loop, the generator suspended
        x = x + 1
    return x


def test_a_generator_changing_its_own_set_runs_ahead_at_a_break():
    model = _model()
    counting = CountingBackend()
    with no_fallback():
        out = ember.compile(through_children, backend=counting)(model, _x(2, 3, grad=True))
    x = _x(2, 3, grad=True)
    expected = through_children(model, x)
    torch.testing.assert_close(out, expected)
    x2 = _x(2, 3, grad=True)
    ember.compile(through_children, backend="aot_eager")(model, x2).sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(x2.grad, x.grad)
    # a graph per piece of the loop (torch.compile runs the whole frame in Python: a break in a loop)
    assert counting.count == 3


def _hook(module, args, output):
    return output * 2


def install(parent, prefix, names):
    """transformers' ``recursively_install_hooks``, reduced: a break (the hook's handle) in a loop
    over a live ``named_children()``, recursively."""
    for name, child in parent.named_children():
        install(child, f"{prefix}.{name}", names)
    if isinstance(parent, torch.nn.Linear):
        parent.register_forward_hook(_hook)
        names.append(prefix)


def install_then_run(model, x):
    names = []
    install(model, "model", names)
    return model(x), names


def test_hooks_installed_over_named_children_like_eager():
    eager_model, compiled_model = _model(), _model()
    with no_fallback():
        out, names = ember.compile(install_then_run, backend="eager")(compiled_model, _x(2, 3))
    expected, expected_names = install_then_run(eager_model, _x(2, 3))
    torch.testing.assert_close(out, expected)
    assert names == expected_names == ["model.0", "model.1.1"]


def shared_iterator(x, items):
    it = iter(items)  # the loop's iterator and a local: one object
    for a in it:
        x = x + a
        print("", end="")
        if a > 1:
            break
    return x, list(it)


def growing(n):
    seen = []
    for i in range(n):
        seen.append(i)
        yield seen  # the same list, longer at each item: cannot run ahead


def escaping_list(x, n):
    for seen in growing(n):
        x = x + len(seen)
        print("", end="")
        x = x * 2
    return x


def adding_in_place(x):
    for i in range(3):
        x.add_(1)  # Python changes x between the items: cannot run ahead
        yield i


def in_place_generator(x):
    out = []
    for i in adding_in_place(x):
        print("", end="")
        out.append(x.sum() + i)
    return out


def read_lazily(log):
    for i in range(3):
        yield len(log)  # reads what the loop body wrote


def generator_passed_in(x, gen, log):
    for n in gen:
        log.append(n)
        print("", end="")
        x = x + n
    return x


@pytest.mark.parametrize("fn,make_args", [
    (shared_iterator, lambda: (_x(3), [1, 2, 3, 4])),
    (escaping_list, lambda: (_x(3), 3)),
    (in_place_generator, lambda: (_x(3),)),
    (generator_passed_in, lambda: (_x(3), read_lazily(log := []), log)),
], ids=["shared_iterator", "escaping_list", "in_place_generator", "generator_passed_in"])
def test_an_iterator_that_cannot_run_ahead_is_read_by_python(fn, make_args):
    expected = fn(*make_args())
    with no_fallback():
        got = ember.compile(fn, backend="eager")(*make_args())
    torch.testing.assert_close(got, expected)


def test_wav2vec2_audio_classifier_is_captured_without_fallback():
    """The sweep's case: eval under no_grad and a train step (labels, loss, backward) of a tiny
    Wav2Vec2ForSequenceClassification, whose first call installs transformers' output hooks."""
    transformers = pytest.importorskip("transformers")
    config = transformers.Wav2Vec2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
        conv_dim=(32, 32), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4, num_labels=2, classifier_proj_size=16, mask_time_prob=0.0,
        hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
        final_dropout=0.0, layerdrop=0.0)
    values = _x(2, 800)
    mask = torch.ones(2, 800, dtype=torch.long)
    mask[1, 600:] = 0
    labels = torch.tensor([0, 1])

    def evaluate(model, **batch):
        with torch.no_grad():
            return model(**batch).logits

    def train(model, **batch):
        out = model(**batch)
        out.loss.backward()
        return out.logits

    for step, backend in ((evaluate, "eager"), (train, "aot_eager")):
        batch = dict(input_values=values, attention_mask=mask, **({"labels": labels} if step is train else {}))
        torch.manual_seed(0)
        eager_model = transformers.Wav2Vec2ForSequenceClassification(config)
        compiled_model = transformers.Wav2Vec2ForSequenceClassification(config)
        compiled_model.load_state_dict(eager_model.state_dict())
        expected = step(eager_model, **batch)
        counting = CountingBackend() if backend == "eager" else backend
        with warnings.catch_warnings(), no_fallback():
            warnings.filterwarnings("ignore", category=FutureWarning)
            got = ember.compile(step, backend=counting)(compiled_model, **batch)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
        if step is train:
            for (name, p), q in zip(compiled_model.named_parameters(), eager_model.parameters()):
                assert (p.grad is None) == (q.grad is None), name
                if p.grad is not None:
                    torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-4)
        else:
            torch.manual_seed(0)
            fresh = transformers.Wav2Vec2ForSequenceClassification(config)
            assert counting.count <= torch_compile_graph_count(lambda m: step(m, **batch), fresh)
