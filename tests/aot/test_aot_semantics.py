"""ember_aot runtime semantics: grad-mode specialization, autograd.Function behaviour, random
ops, input mutations, fallbacks, compiler contract, plugin registration."""
from __future__ import annotations

import copy
import logging
import subprocess
import sys

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch._subclasses import FakeTensor

from aot_helpers import BACKENDS, assert_compiled, check_contract
from ember_aot import aot_autograd, save_all_partition
from ember_aot.backend import aot_eager
from ember_aot.runtime import EagerPlan


def _recorder():
    calls = []

    def compiler(gm, example_inputs):
        check_contract(gm, example_inputs)
        calls.append(gm)
        return gm.forward

    return calls, compiler


def mlp(x, w1, w2):
    return torch.tanh(x @ w1) @ w2


def _mlp_inputs(grad=True):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(4, 5, generator=g), torch.randn(5, 6, generator=g).requires_grad_(grad),
            torch.randn(6, 3, generator=g).requires_grad_(grad)]


def test_inference_graph_when_nothing_needs_grad():
    fw, fwc = _recorder()
    inf, infc = _recorder()
    backend = aot_autograd(fwc, inference_compiler=infc)
    args = _mlp_inputs(grad=False)
    out = backend(torch.fx.symbolic_trace(mlp), args)(*args)
    torch.testing.assert_close(out, mlp(*args))
    assert not fw and len(inf) == 1
    assert not out.requires_grad


def test_grad_mode_is_part_of_the_specialization():
    gm = torch.fx.symbolic_trace(mlp)
    args = _mlp_inputs()
    with torch.no_grad():
        compiled = aot_eager(gm, args)
        out = compiled(*args)
    assert not out.requires_grad
    out = compiled(*args)  # grad mode on now: a training plan, gradients flow
    assert out.requires_grad
    out.sum().backward()
    ref = [a.detach().requires_grad_(a.requires_grad) for a in args]
    mlp(*ref).sum().backward()
    torch.testing.assert_close(args[1].grad, ref[1].grad)
    torch.testing.assert_close(args[2].grad, ref[2].grad)
    assert len(compiled.plans) == 2
    assert_compiled(compiled)
    with torch.no_grad():
        assert not compiled(*args).requires_grad
    assert len(compiled.plans) == 2


def test_specialization_key_names_grad_needs_and_scalar_values():
    key = aot_eager(torch.fx.symbolic_trace(lambda a: a + 1), [torch.randn(2)])._key
    a, b = torch.randn(2), torch.randn(2, requires_grad=True)
    assert key((a, b)) != key((b, a))      # grad mode: which inputs need grad
    assert key((a, b)) != key((a, b, a))
    with torch.no_grad():
        assert key((a, b)) == key((b, a))  # no grad: tensors are interchangeable
        assert key((a, b)) != key((a, b, a))
        assert key((a, 2)) != key((a, 3)) and key((a, 2)) != key((a, 2.0))
        assert key((a, b)) != key((a, 2))


def test_requires_grad_change_respecializes():
    gm = torch.fx.symbolic_trace(mlp)
    args = _mlp_inputs()
    compiled = aot_eager(gm, args)
    x = args[0].clone().requires_grad_()
    compiled(x, *args[1:]).sum().backward()
    ref = x.detach().clone().requires_grad_()
    mlp(ref, args[1].detach(), args[2].detach()).sum().backward()
    torch.testing.assert_close(x.grad, ref.grad)
    assert len(compiled.plans) == 2


def test_saved_tensors_are_per_call():
    gm = torch.fx.symbolic_trace(mlp)
    args = _mlp_inputs()
    compiled = aot_eager(gm, args)
    x1, x2 = torch.randn(4, 5), torch.randn(4, 5) * 3
    out1, out2 = compiled(x1, *args[1:]), compiled(x2, *args[1:])
    out2.sum().backward()
    g2 = args[1].grad.clone()
    args[1].grad = None
    out1.sum().backward()
    g1 = args[1].grad.clone()
    w1 = args[1].detach().requires_grad_()
    mlp(x1, w1, args[2].detach()).sum().backward()
    torch.testing.assert_close(g1, w1.grad)
    w1.grad = None
    mlp(x2, w1, args[2].detach()).sum().backward()
    torch.testing.assert_close(g2, w1.grad)


def test_retain_graph_and_double_backward_error():
    gm = torch.fx.symbolic_trace(mlp)
    args = _mlp_inputs()
    compiled = aot_eager(gm, args)
    out = compiled(*args).sum()
    out.backward(retain_graph=True)
    first = args[1].grad.clone()
    out.backward()
    torch.testing.assert_close(args[1].grad, 2 * first)
    out = compiled(*args).sum()
    (g,) = torch.autograd.grad(out, args[1], create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(g.sum(), args[2])


def test_noncontiguous_output_and_grad():
    def fn(x, w):
        return (x @ w).t()

    gm = torch.fx.symbolic_trace(fn)
    x, w = torch.randn(3, 4, requires_grad=True), torch.randn(4, 5, requires_grad=True)
    compiled = aot_eager(gm, [x, w])
    out = compiled(x, w)
    assert out.stride() == fn(x, w).stride()
    grad = torch.randn(3, 5).t()  # non-contiguous incoming gradient
    out.backward(grad)
    rx, rw = x.detach().requires_grad_(), w.detach().requires_grad_()
    fn(rx, rw).backward(grad)
    torch.testing.assert_close(x.grad, rx.grad)
    torch.testing.assert_close(w.grad, rw.grad)


def dropout_fn(x, w):
    return F.dropout(x @ w, 0.5, True).sum(1) + F.dropout(torch.sigmoid(x), 0.3, True).mean()


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_dropout_same_mask_and_matches_eager_under_seed(backend):
    gm = torch.fx.symbolic_trace(dropout_fn)
    x, w = torch.randn(8, 6, requires_grad=True), torch.randn(6, 16, requires_grad=True)
    compiled = BACKENDS[backend](gm, [x, w])
    for seed in (1, 2):
        torch.manual_seed(seed)
        out = compiled(x, w)
        out.sum().backward()
        rx, rw = x.detach().requires_grad_(), w.detach().requires_grad_()
        torch.manual_seed(seed)
        ref = dropout_fn(rx, rw)
        ref.sum().backward()
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(x.grad, rx.grad)
        torch.testing.assert_close(w.grad, rw.grad)
        x.grad = w.grad = None
    assert_compiled(compiled)


def test_dropout_mask_consistent_between_forward_and_backward():
    def fn(x):
        return F.dropout(x, 0.5, True)

    x = torch.ones(1000, requires_grad=True)
    compiled = aot_autograd(lambda gm, ex: gm.forward)(torch.fx.symbolic_trace(fn), [x])
    out = compiled(x)
    out.sum().backward()
    torch.testing.assert_close(x.grad, (out != 0).float() * 2)


def test_unsupported_graph_runs_eagerly_with_one_warning(caplog):
    def fn(x):  # a view of the input at a place the data decides (nonzero alone is traced now)
        return x[x.argmax().item()]

    x = torch.randn(10, requires_grad=True)
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        compiled = aot_eager(torch.fx.symbolic_trace(fn), [x])
        out = compiled(x)
        compiled(x)
    torch.testing.assert_close(out, fn(x))
    assert isinstance(next(iter(compiled.plans.values())), EagerPlan)
    assert len([r for r in caplog.records if r.name == "ember.aot"]) == 1


def test_mutation_that_makes_input_require_grad_is_compiled():
    """The input gets, as in eager, a history through the compiled graph's backward."""
    def fn(x, buf):
        buf.add_(x)
        return buf * 2

    x, buf = torch.randn(3, requires_grad=True), torch.zeros(3)
    compiled = aot_eager(torch.fx.symbolic_trace(fn), [x, buf])
    out = compiled(x, buf)
    assert_compiled(compiled)
    assert buf.requires_grad and buf.grad_fn is not None and out.requires_grad
    torch.testing.assert_close(buf.detach(), x.detach())
    (out.sum() + (buf * 3).sum()).backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 5.0))


def test_mutated_input_aliasing_another_input_runs_eagerly(caplog):
    def fn(a, b):
        a.add_(1.0)
        return a + b

    gm = torch.fx.symbolic_trace(fn)
    a, b = torch.zeros(4), torch.ones(4)
    compiled = aot_eager(gm, [a, b])
    torch.testing.assert_close(compiled(a, b), torch.full((4,), 2.0))
    base = torch.zeros(4)
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        out = compiled(base, base)  # b sees a's update, as in eager
    torch.testing.assert_close(out, torch.full((4,), 2.0))
    assert "shares memory" in caplog.text


def test_keep_inference_input_mutations():
    inf = []

    def compiler(gm, example_inputs):
        inf.append(gm)
        return gm.forward

    def fn(x, running):
        running.mul_(0.5).add_(x.mean())
        return x - running

    backend = aot_autograd(compiler, keep_inference_input_mutations=True)
    x, running = torch.randn(5), torch.ones(())
    with torch.no_grad():
        compiled = backend(torch.fx.symbolic_trace(fn), [x, running])
        out = compiled(x, running)
    expected_running = 0.5 + x.mean()
    torch.testing.assert_close(running, expected_running)
    torch.testing.assert_close(out, x - expected_running)
    assert any(n.target is torch.ops.aten.copy_.default for n in inf[0].graph.nodes)


def test_python_scalars_are_specialized():
    def fn(x, alpha, n):
        return x * alpha + n

    x = torch.randn(3, requires_grad=True)
    compiled = aot_eager(torch.fx.symbolic_trace(fn), [x, 2.0, 1])
    torch.testing.assert_close(compiled(x, 2.0, 1), x * 2.0 + 1)
    torch.testing.assert_close(compiled(x, 3.0, 5), x * 3.0 + 5)
    assert len(compiled.plans) == 2


SEEN: list[type] = []


def spy(t):
    SEEN.append(type(t))
    return t * 2


torch.fx.wrap("spy")


def spied(x):
    return spy(x).sin()


def test_no_real_computation_at_compile_time():
    seen = SEEN
    seen.clear()
    fn = spied
    gm = torch.fx.symbolic_trace(fn)
    x = torch.randn(3, requires_grad=True)
    compiled = aot_eager(gm, [x])
    assert seen and all(issubclass(t, FakeTensor) for t in seen)
    seen.clear()
    torch.testing.assert_close(compiled(x), fn(x))


def test_compiler_error_propagates_on_first_compile():
    def broken(gm, example_inputs):
        raise ValueError("boom")

    x = torch.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="boom"):
        aot_autograd(broken)(torch.fx.symbolic_trace(lambda x: x.sin()), [x])


def test_partitioned_graphs_follow_the_contract():
    fw, fwc = _recorder()
    bw, bwc = _recorder()
    x, w = torch.randn(4, 5, requires_grad=True), torch.randn(5, 3, requires_grad=True)
    backend = aot_autograd(fwc, bwc, partition_fn=save_all_partition)
    compiled = backend(torch.fx.symbolic_trace(lambda x, w: (x @ w).relu()), [x, w])
    compiled(x, w).sum().backward()
    assert len(fw) == 1 and len(bw) == 1
    bw_placeholders = [n.name for n in bw[0].graph.nodes if n.op == "placeholder"]
    assert bw_placeholders[-1].startswith("tangents")


def test_aot_eager_is_registered_and_listing_stays_cheap():
    from ember.backends import REGISTRY

    name, compiler, spec = REGISTRY.lookup("aot_eager")
    assert compiler is aot_eager and "training" in spec.tags
    code = (
        "import sys, ember_aot.plugin, ember_aot\n"
        "assert 'networkx' not in sys.modules and 'ember_aot.api' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _ember_compile():
    import ember

    if not hasattr(ember, "compile"):
        pytest.skip("ember.compile is not available yet")
    return ember.compile


def test_end_to_end_ember_compile_batchnorm_training():
    compile_fn = _ember_compile()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 2),
    )
    ref = copy.deepcopy(model)
    fast = compile_fn(model, backend="aot_eager")
    for step in range(3):
        x = torch.randn(2, 3, 8, 8)
        out = fast(x)
        out.pow(2).sum().backward()
        expected = ref(x)
        expected.pow(2).sum().backward()
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    for p, rp in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, rp.grad, rtol=1e-4, atol=1e-4)
    for b, rb in zip(model.buffers(), ref.buffers()):
        torch.testing.assert_close(b, rb, rtol=1e-4, atol=1e-4)


def test_end_to_end_ember_compile_runs_the_compiled_backward():
    compile_fn = _ember_compile()
    fw, fwc = _recorder()
    bw, bwc = _recorder()

    def fn(x, w):
        return torch.tanh(x @ w).sum()

    fast = compile_fn(fn, backend=aot_autograd(fwc, bwc))
    x, w = torch.randn(3, 4), torch.randn(4, 5, requires_grad=True)
    loss = fast(x, w)
    loss.backward()
    rw = w.detach().requires_grad_()
    fn(x, rw).backward()
    torch.testing.assert_close(w.grad, rw.grad)
    assert len(fw) == 1 and len(bw) == 1


def test_metadata_mutation_of_input_falls_back(caplog):
    def fn(x):
        x.unsqueeze_(0)
        return x * 2

    gm = torch.fx.symbolic_trace(fn)
    x = torch.randn(3)
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        compiled = aot_eager(gm, [x.clone()])
    out = compiled(x)
    assert x.shape == (1, 3) and out.shape == (1, 3)
    assert "metadata" in caplog.text


def test_outputs_without_a_gradient_get_no_materialized_zeros():
    """Only one of two differentiable outputs feeds the loss: the backward gets zeros for the
    other one (made by ember_aot, not by autograd), gradients match eager, and a batch-norm step
    makes no zeros for its non-differentiable buffer outputs."""
    def fn(x, w):
        return torch.tanh(x @ w), (x @ w).sin()

    fast = aot_eager(torch.fx.symbolic_trace(fn), [torch.randn(3, 4), torch.randn(4, 5)])
    x, w = torch.randn(3, 4), torch.randn(4, 5, requires_grad=True)
    a, _ = fast(x, w)
    a.sum().backward()
    rw = w.detach().requires_grad_()
    fn(x, rw)[0].sum().backward()
    torch.testing.assert_close(w.grad, rw.grad)
    b, c = fast(x, w.detach().requires_grad_())
    (b.sum() + c.sum()).backward()  # both gradients present still works

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    fast_model = _ember_compile()(model, backend="aot_eager")
    inp = torch.randn(2, 3, 8, 8)
    fast_model(inp).sum().backward()
    with torch.profiler.profile() as prof:
        fast_model(inp).sum().backward()
    assert "aten::zeros" not in {e.key for e in prof.key_averages()}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_inputs_reached_only_by_outputs_without_a_gradient_keep_none_grads(backend):
    """Eager leaves ``.grad`` None on inputs that only outputs without a gradient depend on
    (a model's pooler when only its hidden states feed the loss); the compiled backward, which
    runs on zero tangents for those outputs, must not hand back zeros for them."""
    def fn(x, w1, w2, b2):
        h = x @ w1
        return torch.tanh(h), h @ w2 + b2

    def leaves():
        g = torch.Generator().manual_seed(0)
        return [torch.randn(3, 4, generator=g).requires_grad_(), torch.randn(4, 5, generator=g).requires_grad_(),
                torch.randn(5, 2, generator=g).requires_grad_(), torch.randn(2, generator=g).requires_grad_()]

    fast = BACKENDS[backend](torch.fx.symbolic_trace(fn), leaves())
    for use_second in (False, True):
        got, ref = leaves(), leaves()
        for f, args in ((fast, got), (fn, ref)):
            a, b = f(*args)
            (a.sum() + (b.pow(2).sum() if use_second else 0)).backward()
        assert_compiled(fast)
        for g, r in zip(got, ref):
            assert (g.grad is None) == (r.grad is None), (use_second, g.grad, r.grad)
            if r.grad is not None:
                torch.testing.assert_close(g.grad, r.grad)
    got = leaves()
    fast(*got)[1].sum().backward()  # only the second output: every input reached
    assert all(t.grad is not None for t in got)


def test_joint_trace_drops_decompositions_that_are_only_right_for_inference():
    """Torch's decomposition of CPU flash attention returns the attention weights where the op
    returns the logsumexp its backward kernel reads: with a table that holds it (as core aten's
    does), the joint graph must keep the op, or every gradient through attention is wrong."""
    from torch._decomp import core_aten_decompositions
    backend = aot_autograd(lambda gm, _: gm.forward, decompositions=core_aten_decompositions())
    for causal in (False, True):
        def fn(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        g = torch.Generator().manual_seed(0)
        got = [torch.randn(2, 2, 5, 8, generator=g).requires_grad_() for _ in range(3)]
        ref = [t.detach().clone().requires_grad_() for t in got]
        fast = backend(torch.fx.symbolic_trace(fn), got)
        weight = torch.randn(2, 2, 5, 8, generator=g)
        (fast(*got) * weight).sum().backward()
        (fn(*ref) * weight).sum().backward()
        for a, b in zip(got, ref):
            torch.testing.assert_close(a.grad, b.grad)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_and_its_view_return_the_analysed_base(caplog, requires_grad):
    # v6 and its view v8 share storage: the graph must return v6 as their base. Tracing lost the
    # `_base` link of v8, v8 was returned as the base, and the first call fell back to eager
    # ("returned a base with another layout"); on torch 2.11 that check did not catch it and v6
    # came back with v8's shape.
    def fn(x):
        v6 = x.sum().unsqueeze(0).norm(dim=-1)
        return v6.unsqueeze(0), v6

    x = torch.randn(4, requires_grad=requires_grad)
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        out = aot_eager(torch.fx.symbolic_trace(fn), [x])(x)
    expected = fn(x)
    assert [o.shape for o in out] == [e.shape for e in expected]
    torch.testing.assert_close(out, expected)
    assert not [r for r in caplog.records if r.name == "ember.aot"]


def test_mutated_input_repointed_into_another_inputs_storage_runs_eagerly(caplog):
    # the alias check is skipped while every input keeps the addresses of the last call it
    # passed; re-pointing a mutated input into another input's storage must be seen
    def fn(a, b):
        a.add_(1.0)
        return a + b

    a, b = torch.zeros(4), torch.ones(8)
    compiled = aot_eager(torch.fx.symbolic_trace(fn), [a, b[:4]])
    for _ in range(2):
        compiled(a, b[:4])
    torch.testing.assert_close(a, torch.full((4,), 2.0))
    a.set_(b.untyped_storage(), 4, (4,))
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        out = compiled(a, b[:4])
    torch.testing.assert_close(out, torch.full((4,), 3.0))
    torch.testing.assert_close(b, torch.tensor([1.0] * 4 + [2.0] * 4))
    assert "shares memory" in caplog.text


def test_output_that_is_also_a_mutated_inputs_new_value_keeps_its_gradient():
    # b is returned and also written into a: the new value of a mutated input left the autograd
    # Function as a non-differentiable output, and with it b (no gradient reached w)
    def fn(a, w):
        b = a + w
        a.copy_(b.detach())
        return b

    w = torch.randn(3, requires_grad=True)
    compiled = aot_eager(torch.fx.symbolic_trace(fn), [torch.zeros(3), w])
    a = torch.zeros(3)
    out = compiled(a, w)
    ref_w = w.detach().clone().requires_grad_()
    ref_a = torch.zeros(3)
    expected = fn(ref_a, ref_w)
    assert out.requires_grad == expected.requires_grad
    out.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(w.grad, ref_w.grad)
    torch.testing.assert_close(a, ref_a)
