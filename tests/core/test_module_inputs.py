"""Modules as inputs, not constants: a module passed as an argument is guarded on its class and
on what the trace read from it (attributes, ``training``, hooks), its parameters and buffers
are graph inputs read at each call, so a new instance of the same structure reuses the graph
(as torch.compile, which inlines nn modules); another structure or mode recompiles."""
from __future__ import annotations

import copy

import torch
import transformers

import ember
from core_helpers import CountingBackend, no_fallback

INPUT_IDS = torch.tensor([[5, 17, 42, 8, 3, 0, 0], [9, 2, 77, 31, 64, 12, 4]])
ATTENTION_MASK = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]])
LABELS = torch.tensor([0, 2])


def _bert(seed: int, layers: int = 1) -> transformers.BertForSequenceClassification:
    torch.manual_seed(seed)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=99, num_labels=3,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                     # set, as the first forward would: assigning it through
                                     # PretrainedConfig.__setattr__ is a graph break of its own
                                     problem_type="single_label_classification")
    return transformers.BertForSequenceClassification(config)


def train_step(model, input_ids, attention_mask, labels):
    loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    loss.backward()
    return loss


def _torch_compile_count(calls) -> int:
    import torch._dynamo

    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = torch.compile(train_step, backend=backend)
    for model in calls:
        compiled(model, INPUT_IDS, ATTENTION_MASK, LABELS)
    torch._dynamo.reset()
    return backend.count


def _run(compiled, models):
    """Each model through the compiled step and a copy through eager: same loss, same grads."""
    for model in models:
        ref = copy.deepcopy(model)
        torch.testing.assert_close(compiled(model, INPUT_IDS, ATTENTION_MASK, LABELS),
                                   train_step(ref, INPUT_IDS, ATTENTION_MASK, LABELS))
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            assert (p.grad is None) == (q.grad is None), name
            if p.grad is not None:
                torch.testing.assert_close(p.grad, q.grad, msg=name)


def test_three_fresh_berts_compile_once_as_torch_compile():
    models = [_bert(seed) for seed in range(3)]
    assert not torch.equal(models[0].classifier.weight, models[1].classifier.weight)
    backend = CountingBackend()
    compiled = ember.compile(train_step, backend=backend)
    with no_fallback():
        _run(compiled, models)
    theirs = _torch_compile_count([_bert(seed) for seed in range(3)])
    assert backend.count <= theirs
    assert backend.count == 1  # one graph for all three models
    # the parameters are graph inputs, not constants baked into the graph
    assert len(backend.example_inputs[0]) >= len(list(models[0].parameters()))


def test_other_structure_or_mode_recompiles():
    backend = CountingBackend()
    compiled = ember.compile(train_step, backend=backend)
    with no_fallback():
        _run(compiled, [_bert(0), _bert(1)])
        assert backend.count == 1
        _run(compiled, [_bert(2, layers=2)])  # another num_hidden_layers
        assert backend.count == 2
        evaluated = _bert(3).eval()  # the training flag was read
        _run(compiled, [evaluated])
        assert backend.count == 3
        _run(compiled, [_bert(4, layers=2)])  # back to a structure seen: no new graph
        assert backend.count == 3


def test_object_identity_is_guarded_when_the_trace_depends_on_it():
    class Scale(torch.nn.Module):
        def __init__(self, factor):
            super().__init__()
            self.factor = factor

        def forward(self, x):
            return x * self.factor

    shared = Scale(2.0)

    def f(a, b, x):
        return a(x) + (1 if a is b else 0)

    backend = CountingBackend()
    compiled = ember.compile(f, backend=backend)
    x = torch.randn(3)
    with no_fallback():
        for a, b in [(shared, shared), (Scale(2.0), Scale(2.0)), (Scale(3.0), Scale(3.0))]:
            torch.testing.assert_close(compiled(a, b, x), f(a, b, x))
    assert backend.count == 3  # `a is b` and `factor` are both guarded


def test_a_hook_added_to_another_instance_is_seen():
    def f(m, x):
        return m(x)

    backend = CountingBackend()
    compiled = ember.compile(f, backend=backend)
    x = torch.randn(2, 4)
    first, second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    second.register_forward_hook(lambda mod, args, out: out * 2)
    with no_fallback():
        torch.testing.assert_close(compiled(first, x), f(first, x))
        torch.testing.assert_close(compiled(second, x), f(second, x))
    assert backend.count == 2


class Options(dict):
    """A dict subclass (as HF's ModelOutput): guarded on its class, its items read for real."""


def _affine(x, scale=1.0, shift=0.0):
    return x * scale + shift


def test_items_of_a_dict_subclass_read_at_capture_are_guarded():
    def f(options, x):
        return _affine(x, **options)

    backend = CountingBackend()
    compiled = ember.compile(f, backend=backend)
    x = torch.randn(3)
    with no_fallback():
        for options in [Options(scale=2.0), Options(scale=2.0, shift=3.0), Options(scale=2.0)]:
            torch.testing.assert_close(compiled(options, x), f(options, x))
