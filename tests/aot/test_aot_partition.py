"""Partitioners: the min-cut partitioner saves fewer activation bytes than save-everything,
never recomputes random ops, and both give the same numbers as eager."""
from __future__ import annotations

import torch
import torch.fx
import torch.nn.functional as F

from aot_helpers import lift, module_tensors
from aot_models import GPT, ResNet18
from ember_aot import (
    aot_autograd,
    min_cut_partition,
    save_all_partition,
    saved_activation_bytes,
    saved_bytes,
)
from ember_aot.partition import is_random


class Recorder:
    """A partition_fn wrapper keeping the graphs and their saved bytes."""

    def __init__(self, partition_fn):
        self.partition_fn = partition_fn
        self.fw = self.bw = None
        self.saved = None

    def __call__(self, joint, joint_inputs, *, num_fwd_outputs):
        self.fw, self.bw = self.partition_fn(joint, joint_inputs, num_fwd_outputs=num_fwd_outputs)
        self.saved = saved_bytes(self.fw, num_fwd_outputs)
        return self.fw, self.bw


def _compile(fn_or_gm, args, partition_fn):
    rec = Recorder(partition_fn)
    gm = fn_or_gm if isinstance(fn_or_gm, torch.fx.GraphModule) else torch.fx.symbolic_trace(fn_or_gm)
    compiled = aot_autograd(lambda g, ex: g.forward, partition_fn=rec)(gm, args)
    return compiled, rec


def pointwise_heavy(x, w):
    h = x @ w
    for _ in range(4):
        h = torch.sigmoid(h) * torch.tanh(h) + h.cos()
    return (h @ w.t()).sum()


def test_min_cut_saves_fewer_bytes_than_save_all_on_pointwise_chain():
    x, w = torch.randn(64, 128), torch.randn(128, 128, requires_grad=True)
    results = {}
    for name, pf in (("min_cut", min_cut_partition), ("save_all", save_all_partition)):
        compiled, rec = _compile(pointwise_heavy, [x, w], pf)
        out = compiled(x, w)
        out.backward()
        grad = w.grad.clone()
        w.grad = None
        rw = w.detach().requires_grad_()
        pointwise_heavy(x, rw).backward()
        torch.testing.assert_close(grad, rw.grad, rtol=1e-4, atol=1e-4)
        runtime = saved_activation_bytes(compiled, x, w)
        assert runtime == rec.saved  # the static count is what autograd really keeps
        results[name] = rec.saved
    eager = saved_activation_bytes(pointwise_heavy, x, w)
    assert results["min_cut"] < results["save_all"] / 3
    assert results["min_cut"] < eager


def test_min_cut_never_recomputes_random_ops():
    def fn(x, w):
        h = F.dropout(torch.relu(x @ w), 0.5, True)
        return (h * h.sigmoid()).sum()

    x, w = torch.randn(8, 16), torch.randn(16, 16, requires_grad=True)
    _, rec = _compile(fn, [x, w], min_cut_partition)
    assert any(is_random(n) for n in rec.fw.graph.nodes)
    assert not any(is_random(n) for n in rec.bw.graph.nodes)


def _model_bytes(model, inputs):
    gm, names = lift(model)
    params = module_tensors(model, names)
    out = {"eager": saved_activation_bytes(model, *inputs)}
    for name, pf in (("min_cut", min_cut_partition), ("save_all", save_all_partition)):
        compiled, rec = _compile(gm, params + list(inputs), pf)
        out[name] = saved_activation_bytes(lambda *xs: compiled(*params, *xs), *inputs, extra=params)
    return out


def test_saved_activation_bytes_resnet18():
    torch.manual_seed(0)
    b = _model_bytes(ResNet18(width=8), [torch.randn(2, 3, 32, 32)])
    assert b["min_cut"] < b["save_all"] and b["min_cut"] < b["eager"]


def test_saved_activation_bytes_gpt():
    torch.manual_seed(0)
    tokens = torch.randint(0, 128, (2, 32))
    b = _model_bytes(GPT(), [tokens, tokens.roll(1, 1)])
    assert b["min_cut"] < b["save_all"] and b["min_cut"] < b["eager"]


def test_saved_activation_bytes_counts_distinct_non_input_storages():
    x = torch.randn(100, requires_grad=True)
    assert saved_activation_bytes(lambda t: t.sin(), x) == 0  # sin saves its input only
    assert saved_activation_bytes(lambda t: t.exp(), x) == 400  # exp saves its output
    assert saved_activation_bytes(lambda t: (t * 2).sin(), x) == 400


def test_a_node_the_joint_pass_marks_is_saved_not_recomputed():
    """``meta[SAVE]`` (set by a joint pass, as the inductor's channels-last pass does on weights'
    layout conversions): the min-cut saves the node for the backward instead of recomputing it
    there, although saving the weight it is computed from costs the same bytes."""
    from ember_aot.partition import SAVE

    def fn(x, w):
        return (x @ (w * 2)).relu().sum()

    def mark(joint):
        for n in joint.graph.nodes:
            if n.target is torch.ops.aten.mul.Tensor:
                n.meta[SAVE] = True

    def muls(gm):  # w * 2 (the backward's other mul scales a gradient)
        return sum(n.target is torch.ops.aten.mul.Tensor and n.args[0].op == "placeholder"
                   for n in gm.graph.nodes)

    x, w = torch.randn(8, 16, requires_grad=True), torch.randn(16, 16, requires_grad=True)
    for joint_pass, recomputed in ((None, 1), (mark, 0)):
        rec = Recorder(min_cut_partition)
        gm = torch.fx.symbolic_trace(fn)
        compiled = aot_autograd(lambda g, ex: g.forward, partition_fn=rec, joint_pass=joint_pass)(gm, [x, w])
        compiled(x, w).backward()
        grads = (x.grad, w.grad)
        x.grad = w.grad = None
        fn(x, w).backward()
        torch.testing.assert_close(grads, (x.grad, w.grad))
        x.grad = w.grad = None
        assert muls(rec.fw) == 1
        assert muls(rec.bw) == recomputed


def test_an_input_is_saved_rather_than_its_view():
    """A batch norm's weight seen as ``[C, 1, 1]``: the forward hands the backward the weight
    itself (no view to rebuild on every call) and the backward views it again."""
    def fn(x, w):
        return (x * w.view(-1, 1, 1)).relu().sum()

    x, w = torch.randn(2, 3, 4, 4, requires_grad=True), torch.randn(3, requires_grad=True)
    compiled, rec = _compile(fn, [x, w], min_cut_partition)
    compiled(x, w).backward()
    grads = (x.grad, w.grad)
    x.grad = w.grad = None
    fn(x, w).backward()
    torch.testing.assert_close(grads, (x.grad, w.grad))
    saved = list(next(n for n in rec.fw.graph.nodes if n.op == "output").args[0])[1:]
    assert saved and all(n.op == "placeholder" or n.target is not torch.ops.aten.view.default for n in saved), saved
    assert any(n.target is torch.ops.aten.view.default for n in rec.bw.graph.nodes)


def test_a_language_models_loss_saves_neither_log_softmax_nor_one_hot():
    """Cross-entropy over a vocabulary in autocast style (bf16 logits, float32 log-softmax): the
    backward recomputes the float32 log-softmax from the bf16 logits and the one-hot gradient from
    the labels, instead of saving two float32 tensors of tokens x vocabulary (GPT-2's 1.65 GB each)."""
    def loss_of(h, w, labels):
        logits = (h.to(torch.bfloat16) @ w.to(torch.bfloat16).t()).float()
        return F.cross_entropy(logits, labels)

    h, w = torch.randn(64, 32, requires_grad=True), torch.randn(999, 32, requires_grad=True)
    labels = torch.randint(0, 999, (64,))
    compiled, rec = _compile(loss_of, [h, w, labels], min_cut_partition)
    compiled(h, w, labels).backward()
    saved = [n.meta["val"] for n in next(n for n in rec.fw.graph.nodes if n.op == "output").args[0][1:]
             if isinstance(n, torch.fx.Node) and isinstance(n.meta.get("val"), torch.Tensor)]
    assert not [t for t in saved if t.shape == (64, 999) and t.dtype == torch.float32], [
        (tuple(t.shape), t.dtype) for t in saved]
    ref = [t.detach().requires_grad_() for t in (h, w)]
    loss_of(*ref, labels).backward()
    torch.testing.assert_close(h.grad, ref[0].grad, rtol=2e-2, atol=1e-3)
    torch.testing.assert_close(w.grad, ref[1].grad, rtol=2e-2, atol=1e-3)
