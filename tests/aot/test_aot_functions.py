"""ember_aot against eager PyTorch on functions: views, aliasing outputs, in-place ops, input
mutations, integer inputs, non-differentiable outputs, None gradients, Python scalars."""
from __future__ import annotations

import operator

import pytest
import torch
import torch.nn.functional as F

from aot_helpers import BACKENDS, compare_fn


def setitem(t, index, value):
    """``t[index] = value`` as one graph node (symbolic_trace cannot record item assignment;
    the core records it as ``operator.setitem``)."""
    t[index] = value


torch.fx.wrap("setitem")


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _r(*shape, grad=True, seed=0):
    return torch.randn(*shape, generator=_g(seed)).requires_grad_(grad)


def pointwise_chain(x, y):
    return torch.sin(x) * torch.cos(y) + torch.exp(-x * x) / (1 + y.abs())


def views_used(x):
    a = x.t().reshape(-1)[2:10]
    b = x.unsqueeze(0).expand(3, -1, -1).sum(0)
    return a * 2, b.transpose(0, 1).contiguous()


def output_aliases_input(x, w):
    return x.view(-1), x[1], x, w.t(), (x * w).sum()


def outputs_alias_each_other(x):
    y = torch.tanh(x) * 3
    a, b = y.chunk(2, dim=0)
    return a, b, y.view(-1), y


def detach_alias_and_constant(x):
    y = x.sin() * 2
    return y.detach(), y, 3, y.t()


def inplace_on_intermediate(x, w):
    y = x @ w
    y.add_(1.0)
    z = y.sigmoid() * 1.5
    setitem(z, (slice(None), 0), z[:, 1] * 2)
    z.mul_(w[0])
    return z.relu_()


def mutate_buffers(x, buf, counter):
    buf.mul_(0.9).add_(x.detach().mean(0) * 0.1)
    counter.add_(1)
    return (x * buf).sum(1)


def setitem_on_input(x, a):
    setitem(a, 0, 1.0)
    a[2:4].add_(x.detach().sum())
    return a * x


def mutated_input_returned(x, b):
    b.add_(2.0)
    return b, b.view(-1)[:3] * x.sum()


def view_of_input_then_mutated(x, b):
    v = b.view(-1)
    b.mul_(3.0)
    return v, x * 2


def integer_inputs(table, idx, offsets):
    picked = table.index_select(0, idx) + offsets.float().unsqueeze(1)
    gathered = torch.gather(table, 1, idx.view(-1, 1).remainder(table.shape[1]))
    return picked.sum(1), gathered, idx * 2


def non_differentiable_outputs(x):
    y = x * 3
    return y, y > 0, y.argmax(), y.long(), y.detach()


def mixed_requires_grad(x, c):
    return (x * c).sin(), c * 2


def none_grads(x, unused, through_no_grad, detached):
    with torch.no_grad():
        k = through_no_grad * 2
    return x * k + detached.detach().cos()


def none_grads_graph() -> torch.fx.GraphModule:
    """``none_grads`` as the core captures it: the no_grad block becomes
    ``torch._C._set_grad_enabled`` nodes (symbolic_trace would drop it)."""
    gm = torch.fx.symbolic_trace(none_grads)
    k = next(n for n in gm.graph.nodes if n.target is operator.mul)
    with gm.graph.inserting_before(k):
        gm.graph.call_function(torch._C._set_grad_enabled, (False,))
    with gm.graph.inserting_after(k):
        gm.graph.call_function(torch._C._set_grad_enabled, (True,))
    gm.recompile()
    return gm


def scalar_args(x, alpha, n):
    return x * alpha + n, x.pow(n)


def setitem_grad_flow(x, w):
    y = x.clone()
    setitem(y, (slice(None), 1), w)
    y[0, :3].add_(w)
    return y.exp()


def dropout_p0_training(x):
    return F.dropout(x, 0.0, True) * 2


def reductions(x):
    return (x.sum(1), x.mean(), x.var(0), torch.logsumexp(x, 1), torch.softmax(x, 1),
            F.log_softmax(x, 0), x.amax(1), x.norm())


def broadcast_cat(x, y):
    z = torch.cat([x, y.expand(2, 4)], 0)
    return torch.stack([z, z * 2]).sum(0), torch.where(z > 0, z, y.sum())


def masked_clamp(x, m):
    return x.masked_fill(m, 0.5).clamp(-0.3, 0.7) * x


def matmuls(a, b, c):
    return torch.bmm(a, b), torch.einsum("bij,jk->bik", a, c), (a @ c).sum(-1)


def sdpa_fn(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def channels_last_conv(x, w):
    return F.conv2d(x, w, padding=1).relu()


CASES = {
    "pointwise_chain": (pointwise_chain, lambda: [_r(4, 5), _r(4, 5, seed=1)]),
    "views_used": (views_used, lambda: [_r(4, 5)]),
    "output_aliases_input": (output_aliases_input, lambda: [_r(3, 4), _r(3, 4, seed=1)]),
    "outputs_alias_each_other": (outputs_alias_each_other, lambda: [_r(4, 3)]),
    "detach_alias_and_constant": (detach_alias_and_constant, lambda: [_r(2, 3)]),
    "inplace_on_intermediate": (inplace_on_intermediate, lambda: [_r(3, 4), _r(4, 4, seed=1)]),
    "mutate_buffers": (
        mutate_buffers,
        lambda: [_r(5, 3), torch.ones(3), torch.zeros((), dtype=torch.long)],
    ),
    "setitem_on_input": (setitem_on_input, lambda: [_r(6), _r(6, grad=False, seed=1)]),
    "mutated_input_returned": (mutated_input_returned, lambda: [_r(2), _r(2, 3, grad=False)]),
    "view_of_input_then_mutated": (view_of_input_then_mutated, lambda: [_r(3), _r(2, 2, grad=False)]),
    "integer_inputs": (
        integer_inputs,
        lambda: [_r(6, 4), torch.tensor([0, 2, 5, 2]), torch.tensor([1, 0, 3, 2], dtype=torch.int32)],
    ),
    "non_differentiable_outputs": (non_differentiable_outputs, lambda: [_r(3, 4)]),
    "mixed_requires_grad": (mixed_requires_grad, lambda: [_r(3), _r(3, grad=False, seed=1)]),
    "none_grads": (none_grads, lambda: [_r(3), _r(3, seed=1), _r(3, seed=2), _r(3, seed=3)]),
    "scalar_args": (scalar_args, lambda: [_r(4), 1.5, 3]),
    "setitem_grad_flow": (setitem_grad_flow, lambda: [_r(3, 4), _r(3, seed=1)]),
    "dropout_p0_training": (dropout_p0_training, lambda: [_r(3, 4)]),
    "reductions": (reductions, lambda: [_r(4, 5)]),
    "broadcast_cat": (broadcast_cat, lambda: [_r(3, 4), _r(4, seed=1)]),
    "masked_clamp": (masked_clamp, lambda: [_r(3, 4), torch.rand(3, 4, generator=_g(2)) > 0.5]),
    "matmuls": (matmuls, lambda: [_r(2, 3, 4), _r(2, 4, 5, seed=1), _r(4, 6, seed=2)]),
    "sdpa": (sdpa_fn, lambda: [_r(1, 2, 5, 8), _r(1, 2, 5, 8, seed=1), _r(1, 2, 5, 8, seed=2)]),
    "channels_last_conv": (
        channels_last_conv,
        lambda: [
            _r(2, 3, 5, 5, grad=False).to(memory_format=torch.channels_last).requires_grad_(),
            _r(4, 3, 3, 3, seed=1),
        ],
    ),
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_function_matches_eager(case, backend):
    fn, inputs = CASES[case]
    gm = none_grads_graph() if fn is none_grads else None
    compare_fn(fn, inputs, BACKENDS[backend], tol=1e-5, gm=gm)
