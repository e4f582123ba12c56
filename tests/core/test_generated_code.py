"""Generated code always builds: in-place operators on Python values."""
from __future__ import annotations

import torch

import ember
from core_helpers import CountingBackend, no_fallback


def test_augmented_assignment_to_a_python_value_is_not_in_place():
    def fn(x, scale):
        total = 0
        total += (x > 0).to(torch.long) * 3  # T5's _relative_position_bucket
        acc = ()
        acc += (x.sin(),)
        scale *= x.cos()
        return total, acc, scale

    backend = CountingBackend()
    x = torch.randn(5)
    with no_fallback():
        got = ember.compile(fn, backend=backend, fullgraph=True)(x, 2.0)
    expected = fn(x, 2.0)
    torch.testing.assert_close(got, expected)
    assert type(got[1]) is tuple
    assert "iadd" not in backend.ops() and "imul" not in backend.ops(), backend.ops()


def test_augmented_assignment_to_a_tensor_stays_in_place():
    def fn(x):
        y = x.clone()
        y += 1
        return y

    backend = CountingBackend()
    x = torch.randn(3)
    torch.testing.assert_close(ember.compile(fn, backend=backend, fullgraph=True)(x), x + 1)
    assert "iadd" in backend.ops()
