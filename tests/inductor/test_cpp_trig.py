"""Float sin and cos in C++ kernels: the second pass that computes a far argument (beyond 2^18)
with libm, and special values (their accuracy below 2^18: tests/inductor/test_cpp_accuracy.py).

The prelude's ``e_sin``/``e_cos`` reduce x by pi/2 in float and evaluate two polynomials
(``cpp_prelude``); a kernel that computes them runs its loops once with the inline form alone
and, only where an argument was far, once more computing those with libm. A value's bits then
never depend on the other values of its tensor.
"""
from __future__ import annotations

import re

import pytest
import torch

import ember
from helpers import assert_same, compile_fn
from test_cpp_accuracy import inline_math, run_inline

FAR = 2.0 ** 18


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_far_and_special_arguments_match_libm(name: str) -> None:
    special = torch.tensor([0.0, -0.0, FAR, -FAR, FAR * 1.0001, 1e6, -3e30, 3.4e38, 1e-40, -1e-45,
                            float("inf"), float("-inf"), float("nan")])
    got = run_inline(inline_math(False), name, special)
    want = getattr(torch, name)(special.double()).float()
    torch.testing.assert_close(got, want, rtol=5e-7, atol=0.0, equal_nan=True)  # libmvec: 4 ulp
    zeros = got[:2] if name == "sin" else got[:0]
    assert [z.item() for z in zeros.view(torch.int32)] == [0, -2 ** 31][:len(zeros)]  # sin keeps -0.0's sign


def _chain(x: torch.Tensor) -> torch.Tensor:
    return (torch.sin(x) * 2 + torch.cos(x)).relu() * torch.sigmoid(x) - 1


def test_a_far_argument_makes_the_kernel_run_again_and_no_other_value_changes() -> None:
    x = torch.randn(1 << 16) * 4
    compiled = compile_fn(_chain, x)
    source = compiled.compiled.source
    assert re.search(r"if \(kernel\d+_pass<true>\(.*\)\) kernel\d+_pass<false>\(", source)
    assert "reduction(|:em_far)" in source
    near = compiled(x)
    assert_same(near, _chain(x))
    far = x.clone()
    far[[5, 70000 % x.numel(), -1]] = torch.tensor([1e6, -3e30, FAR * 2])
    got = compiled(far)
    assert_same(got, _chain(far))
    keep = torch.ones_like(x, dtype=torch.bool)
    keep[[5, 70000 % x.numel(), -1]] = False
    assert torch.equal(got[keep], near[keep])  # the same bits, computed inline in both passes


def test_trig_in_a_row_kernel_and_its_gradient() -> None:
    """sin in a softmax's row loops (kept in a row array across its stages), with far rows; the
    training step's gradient of sin is cos."""
    def step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (torch.softmax(torch.sin(x * w), -1) * torch.cos(x)).sum()

    x = torch.randn(64, 300) * 3
    x[7, 11] = 5e6
    w = torch.randn(300, requires_grad=True)
    forward = compile_fn(lambda x, w: torch.softmax(torch.sin(x * w), -1) * torch.cos(x), x, w.detach())
    assert re.search(r"kernel\d+_pass<false>", forward.compiled.source) and "row0[" in forward.compiled.source
    assert_same(forward(x, w.detach()), torch.softmax(torch.sin(x * w.detach()), -1) * torch.cos(x))
    compiled = ember.compile(step, backend="inductor", fullgraph=True)
    loss = compiled(x, w)
    loss.backward()
    grad = w.grad.clone()
    w.grad = None
    expected = step(x, w)
    expected.backward()
    assert_same(loss.detach(), expected.detach())
    torch.testing.assert_close(grad, w.grad, rtol=1e-4, atol=1e-5)
