"""Tensors with no elements: a buffer whose iteration space is empty gets no kernel (its index
arithmetic would divide by the zero sizes); the wrapper only allocates it."""
from __future__ import annotations

import re
import warnings

import pytest
import torch

import ember
from helpers import check


def _kernels(compiled) -> list[str]:
    return re.findall(r'extern "C" void (kernel\d+)\(', compiled.compiled.source)


def test_empty_outputs_get_no_kernel_next_to_a_real_one() -> None:
    def fn(x: torch.Tensor) -> tuple:
        return torch.eye(0), (x + 1).relu(), x.sum(0), x.sum(1) * 2 + torch.ones(x.shape[0])

    compiled = check(fn, torch.randn(0, 3))
    # only x.sum(0) has elements to compute (zeros, a reduction over an empty range)
    assert len(_kernels(compiled)) == 1
    assert "ModularIndexing" not in compiled.compiled.source


def test_eye_of_size_zero_compiles() -> None:
    check(lambda x: (torch.eye(0), x * 2), torch.randn(4))


@pytest.mark.parametrize("op", [torch.linalg.det, torch.logdet], ids=["det", "logdet"])
def test_backward_over_a_batch_of_empty_matrices_matches_eager(op) -> None:
    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return op(a).sum() + (b * 3).sum()

    def grads(f, a, b):
        a, b = a.clone().requires_grad_(), b.clone().requires_grad_()
        out = f(a, b)
        out.backward()
        return out.detach(), a.grad, b.grad

    a, b = torch.randn(2, 0, 0), torch.randn(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = grads(ember.compile(fn, backend="inductor"), a, b)
    want = grads(fn, a, b)
    assert not [str(w.message) for w in caught if str(w.message).startswith("ember")]
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w)
