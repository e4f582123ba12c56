"""A tensor made from a numpy array the frame reads (``torch.tensor(arr, dtype=..., device=...)``,
``as_tensor``, ``asarray``, ``from_numpy``) has eager's dtype, device, values and aliasing.

wav2vec2's SpecAugment builds its mask as ``torch.tensor(mask, device=hidden.device,
dtype=torch.bool)``; capture used to drop the ``dtype`` and ``device`` arguments, so the mask of
a CUDA model was a CPU tensor and ``torch.tensor(float64_array, dtype=torch.float32)`` stayed
float64: silently different results.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback

ARR = np.array([1.5, 2.25, 3.0])


def _calls():
    x = torch.ones(3)
    return [
        ("tensor dtype", lambda: torch.tensor(ARR, dtype=torch.float32) + x),
        ("tensor dtype device", lambda: torch.tensor(ARR, dtype=torch.float32, device=x.device) * x),
        ("tensor plain", lambda: torch.tensor(ARR) * 2),
        ("as_tensor dtype", lambda: torch.as_tensor(ARR, dtype=torch.float16) * 2),
        ("as_tensor keyword", lambda: torch.as_tensor(ARR, dtype=torch.int32, device="cpu") + 1),
        ("asarray dtype", lambda: torch.asarray(ARR, dtype=torch.bfloat16) * 2),
        ("from_numpy", lambda: torch.from_numpy(ARR) * 2),
        ("bool mask", lambda: torch.where(torch.tensor(ARR > 2, device=x.device, dtype=torch.bool), x, 0) * 2),
    ]


@pytest.mark.parametrize("name, fn", _calls(), ids=[c[0] for c in _calls()])
def test_the_result_has_eager_dtype_device_and_values(name, fn):
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=backend)()
    want = fn()
    assert (got.dtype, got.device) == (want.dtype, want.device)
    torch.testing.assert_close(got, want)
    assert backend.count == 1


def test_copies_and_shares_as_eager():
    arr = np.array([1.0, 2.0])

    def f():
        return torch.tensor(arr), torch.as_tensor(arr), torch.asarray(arr, copy=True), torch.asarray(arr)

    with no_fallback():
        copied, shared, copied2, shared2 = ember.compile(f, backend="eager")()
    arr[0] = 7.0
    assert [t[0].item() for t in (copied, shared, copied2, shared2)] == [1.0, 7.0, 1.0, 7.0]


def test_a_new_leaf_that_requires_grad_breaks_and_is_right():
    def f(x):
        t = torch.tensor(ARR, dtype=torch.float32, requires_grad=True)
        return x * t, t

    out, leaf = ember.compile(f, backend="eager")(torch.ones(3))
    assert leaf.requires_grad and leaf.is_leaf
    out.sum().backward()
    torch.testing.assert_close(leaf.grad, torch.ones(3))
