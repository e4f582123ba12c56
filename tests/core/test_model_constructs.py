"""Constructs seen failing in real models, captured as torch.compile captures them (issue 46 item 2).

Each case: results (and gradients) equal eager's, ember captured with no fallback warning, and
ember's graph count is not above torch.compile's (counted with the same kind of backend).
"""
from __future__ import annotations

import _thread
import copy
import functools
import threading

import pytest
import torch
import torch.nn as nn

import ember
from core_helpers import CountingBackend, no_fallback

LOCK = threading.Lock()
RAW_LOCK = _thread.allocate_lock()


class Settings:
    def __init__(self, scale: float) -> None:
        self.scale = scale


SETTINGS = Settings(3.0)


def _same(a, b) -> None:
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b)
    else:
        assert a == b


def _graphs_of_torch(fn, *args) -> int:
    import torch._dynamo

    torch._dynamo.reset()
    backend = CountingBackend()
    torch.compile(fn, backend=backend)(*args)
    torch._dynamo.reset()
    return backend.count


def _check(fn, *args, fullgraph: bool = True) -> CountingBackend:
    expected = fn(*args)
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=backend, fullgraph=fullgraph)(*args)
    _same(got, expected)
    assert backend.count >= 1
    return backend


def test_multihead_attention_training_step() -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, 5, 8)

    def step(x):
        out, weights = mha(x, x, x, need_weights=True)
        loss = out.pow(2).mean() + weights.sum()
        return loss

    expected = step(x)
    expected.backward()
    grads = [p.grad.clone() for p in mha.parameters()]
    mha.zero_grad()
    backend = CountingBackend()
    with no_fallback():
        loss = ember.compile(step, backend=backend, fullgraph=True)(x)
    loss.backward()
    torch.testing.assert_close(loss, expected)
    for p, g in zip(mha.parameters(), grads):
        torch.testing.assert_close(p.grad, g)
    assert backend.count <= _graphs_of_torch(step, x)


def test_weight_decay_groups_from_named_parameters() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2))

    def groups(x):
        decay, no_decay = [], []
        for name, p in model.named_parameters():
            (no_decay if name.endswith("bias") or p.ndim == 1 else decay).append(p)
        seen = set(model.parameters())
        penalty = sum(p.pow(2).sum() for p in decay)
        return model(x).sum() + 0.01 * penalty, len(decay), len(no_decay), len(seen), decay[0] in seen

    x = torch.randn(3, 4)
    backend = _check(groups, x)
    assert backend.count <= _graphs_of_torch(groups, x)


def test_shared_parameter_counted_once() -> None:
    model = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False))
    model[1].weight = model[0].weight

    def fn(x):
        return model(x), len(list(model.parameters())), len({id(p) for p in model.parameters()})

    _check(fn, torch.randn(2, 4))


def test_locks_as_context_managers() -> None:
    def fn(x):
        with LOCK:
            y = x + 1
        with RAW_LOCK:
            y = y * 2
        return y

    _check(fn, torch.randn(3))


def test_copy_of_plain_object_and_containers() -> None:
    def fn(x):
        s = copy.copy(SETTINGS)
        s.scale = s.scale + 1
        items = copy.copy([x, 2])
        items.append(3)
        return x * s.scale, SETTINGS.scale, len(items)

    _check(fn, torch.randn(3))


def test_id_of_tensor_and_module() -> None:
    lin = nn.Linear(3, 3)

    def fn(x, y):
        same = id(x) == id(x)
        other = id(x) == id(y)
        return lin(x) * same + (id(lin) == id(lin)) + other

    _check(fn, torch.randn(3), torch.randn(3))


def test_requires_grad_assignment_on_a_new_tensor() -> None:
    def fn(x):
        y = x.detach()
        y.requires_grad = True
        z = y * 2
        return z, z.requires_grad

    _check(fn, torch.randn(3))


def test_import_of_loaded_module_inside_function() -> None:
    def fn(x):
        import math

        import torch.nn.functional as F
        from torch.nn import functional as F2

        return F.relu(x) * math.pi + F2.gelu(x)

    _check(fn, torch.randn(3))


def test_hasattr_on_partial() -> None:
    def fn(x):
        p = functools.partial(torch.add, alpha=2)
        return p(x, x), hasattr(p, "func"), hasattr(p, "keywords"), hasattr(p, "missing"), hasattr(p, "__call__")

    _check(fn, torch.randn(3))


@pytest.mark.parametrize("kind", [set, frozenset])
def test_sets_of_tensors_by_identity(kind) -> None:
    def fn(x):
        y = x + 1
        s = kind([x, y, x])
        return y, len(s), x in s, (x * 1) in s, y in s, len(s | kind([y]))

    _check(fn, torch.randn(3))
