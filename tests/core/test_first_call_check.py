"""A fake kernel that disagrees with the real op must not give silently wrong gradients.

torch 2.11's fake kernel of ``linalg_vector_norm`` over a size-1 dim kept the dim: the AOT
backward, traced for the fake shape, returned wrong gradients (tests/fuzz/test_regressions.py).
The same kind of bug is made here on any torch with a custom op whose registered fake kernel
returns the wrong shape: the first call of the compiled graph notices, warns once, and the
graph runs eagerly, with eager's values and gradients.
"""
import warnings

import pytest
import torch

import ember

LIB = torch.library.Library("ember_test_fake", "FRAGMENT")
LIB.define("rowsum(Tensor x) -> Tensor")


@torch.library.impl(LIB, "rowsum", "CompositeExplicitAutograd")
def _rowsum(x):
    return x.sum(0)  # the real op drops dim 0


@torch.library.register_fake("ember_test_fake::rowsum", lib=LIB)
def _rowsum_fake(x):
    return x.new_empty(x.shape)  # the buggy fake kernel keeps it


def _rowsum_backward(ctx, grad):
    # written for both shapes, so that a backward traced with the fake one runs (and is wrong)
    return (grad if grad.dim() == len(ctx.shape) else grad.unsqueeze(0)).expand(ctx.shape)


def _setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape


torch.library.register_autograd("ember_test_fake::rowsum", _rowsum_backward, setup_context=_setup, lib=LIB)


def model(x, w):
    y = torch.ops.ember_test_fake.rowsum(x * w)
    return (y[[0, 0]] * 3).var(dim=-1)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_wrong_fake_kernel_runs_eagerly_with_eager_gradients(backend):
    x = torch.randn(1, 2, 4)
    w = torch.randn(1, 2, 4, requires_grad=True)
    expected = model(x, w)
    (gw,) = torch.autograd.grad(expected.sum(), [w])
    compiled = ember.compile(model, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            w.grad = None
            out = compiled(x, w)
            out.sum().backward()
            torch.testing.assert_close(out, expected)
            torch.testing.assert_close(w.grad, gw)
    said = [str(c.message) for c in caught if "fake kernels predicted" in str(c.message)]
    assert len(said) == 1, [str(c.message) for c in caught]
    assert "(2,)" in said[0] and "(2, 2)" in said[0]


def test_right_fake_kernels_are_not_flagged():
    x = torch.randn(3, 4, requires_grad=True)
    compiled = ember.compile(lambda x: (x.norm(dim=0) * 2).var(), backend="aot_eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(x).backward()
        compiled(x)
