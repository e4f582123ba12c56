"""Resume functions that torch.compile would not trace run as plain Python (ember.frame_skip),
on HuggingFace's ``ModelOutput`` classes, with graphs and breaks counted against torch.compile's."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import ember
from core_helpers import CountingBackend, no_fallback

SequenceClassifierOutput = __import__("pytest").importorskip("transformers.modeling_outputs").SequenceClassifierOutput


class Classifier(torch.nn.Module):
    """A loss over the labelled rows only, as HF heads select them: ``nonzero`` is data-dependent,
    a graph break in both compilers."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 3)
        self.unused = torch.nn.Linear(8, 3)  # its gradients stay None

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> SequenceClassifierOutput:
        logits = self.linear(x)
        keep = (labels >= 0).nonzero().squeeze(1)
        return SequenceClassifierOutput(loss=F.cross_entropy(logits[keep], labels[keep]), logits=logits)


def train_step(model, **batch):
    out = model(**batch)
    out.loss.backward()
    return out


def finish(out):
    return out["loss"] * 2 + 1


def step_through_a_global(model, **batch):
    out = model(**batch)
    return finish(out)


def _batch() -> dict:
    return dict(x=torch.randn(6, 8), labels=torch.tensor([0, 2, -100, 1, -100, 0]))


def _torch_compile_counts(fn, model, batch) -> tuple[int, int]:
    import torch._dynamo
    from torch._dynamo.utils import counters

    backend = CountingBackend()
    torch._dynamo.reset()
    counters.clear()
    try:
        torch.compile(fn, backend=backend)(model, **batch)
        return backend.count, sum(counters["graph_break"].values())
    finally:
        torch._dynamo.reset()


def test_a_resume_holding_only_a_model_output_runs_as_python_as_in_torch_compile():
    torch.manual_seed(0)
    model, batch = Classifier(), _batch()
    reference = Classifier()
    reference.load_state_dict(model.state_dict())
    expected = train_step(reference, **batch)
    with no_fallback():
        got = ember.compile(train_step, backend="aot_eager")(model, **batch)
    torch.testing.assert_close(got.loss, expected.loss)
    torch.testing.assert_close(model.linear.weight.grad, reference.linear.weight.grad)
    assert model.unused.weight.grad is None and reference.unused.weight.grad is None
    info = ember.explain(train_step)(Classifier(), **batch)
    graphs, breaks = _torch_compile_counts(train_step, Classifier(), batch)
    assert not info.fallbacks and 1 <= info.graph_count <= graphs, (str(info), graphs)
    assert info.graph_break_count <= breaks, (str(info), breaks)


def test_a_resume_that_reaches_a_global_stays_compiled():
    torch.manual_seed(0)
    model, batch = Classifier(), _batch()
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(step_through_a_global, backend=backend)(model, **batch)
    torch.testing.assert_close(got, step_through_a_global(model, **batch))
    assert any("mul" in backend.ops(i) for i in range(backend.count)), [backend.ops(i) for i in range(backend.count)]


def test_the_rule_reads_only_live_locals_and_refuses_what_reaches_outside():
    from ember.frame_skip import runs_as_python

    def plain(out, unused):
        return out["loss"]

    def imports(out):
        import torch as t
        return t.ones(1) + out["loss"]

    output = SequenceClassifierOutput(loss=torch.ones(()))
    assert runs_as_python(plain, {"out": output, "unused": torch.nn.Linear(1, 1)})  # not read: dead
    assert not runs_as_python(plain, {"out": {"loss": torch.ones(())}, "unused": None})  # a dict of tensors
    assert not runs_as_python(imports, {"out": output})
    assert not runs_as_python(step_through_a_global, {"model": None})


def test_a_resume_holding_a_function_or_an_object_stays_compiled():
    """Values the break left on the stack or in locals that lead to code: a helper function, an
    object whose method runs a model (found by review: both ran the model eagerly)."""
    from ember.frame_skip import runs_as_python

    class Holder:
        def go(self):
            return 1

    def call_it(f, out):
        return f(out)

    def method(h):
        return h.go()

    output = SequenceClassifierOutput(loss=torch.ones(()))
    assert not runs_as_python(call_it, {"f": finish, "out": output})
    assert not runs_as_python(method, {"h": Holder()})
    assert runs_as_python(lambda out: out["loss"], {"out": output})
