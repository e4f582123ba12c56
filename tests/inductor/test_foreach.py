"""Foreach ops (an optimizer step's ``foreach=True``) through the inductor: one op per tensor,
fused per parameter, loop-invariant work (the bias correction's ``pow`` of the step) computed
once per kernel, and one C++ function for the same loop over other parameters.

Compiled as aten foreach kernels, AdamW's step on the CPU took 2-3x eager's time (each foreach
pass over all the state, functionalized into new tensors and copied back)."""
from __future__ import annotations

import re

import pytest
import torch

import ember
from ember_inductor.foreach import foreach_decompositions

aten = torch.ops.aten
G = torch.Generator().manual_seed(0)
XS = [torch.randn(3, generator=G), torch.randn(2, 2, generator=G)]
YS = [torch.randn(3, generator=G), torch.randn(2, 2, generator=G)]
ZS = [torch.rand(3, generator=G) + 1, torch.rand(2, 2, generator=G) + 1]
CASES = {
    "add.List alpha": (aten._foreach_add.List, (XS, YS), {"alpha": 2}),
    "add.Scalar": (aten._foreach_add.Scalar, (XS, 3.0), {}),
    "add.ScalarList": (aten._foreach_add.ScalarList, (XS, [1.0, 2.0]), {}),
    "add.Tensor": (aten._foreach_add.Tensor, (XS, torch.tensor(2.0)), {"alpha": 3}),
    "addcmul.Scalar": (aten._foreach_addcmul.Scalar, (XS, YS, ZS), {"value": 0.5}),
    "addcmul.Scalar positional": (aten._foreach_addcmul.Scalar, (XS, YS, ZS, 0.25), {}),
    "addcmul.Tensor": (aten._foreach_addcmul.Tensor, (XS, YS, ZS, torch.tensor([0.5, 2.0])), {}),
    "addcdiv.ScalarList": (aten._foreach_addcdiv.ScalarList, (XS, YS, ZS, [0.5, 2.0]), {}),
    "addcdiv.Tensor": (aten._foreach_addcdiv.Tensor, (XS, YS, ZS, torch.tensor([0.5, 2.0])), {}),
    "lerp.Scalar": (aten._foreach_lerp.Scalar, (XS, YS, 0.3), {}),
    "lerp.List": (aten._foreach_lerp.List, (XS, YS, ZS), {}),
    "sqrt": (aten._foreach_sqrt.default, (ZS,), {}),
    "pow.ScalarAndTensor": (aten._foreach_pow.ScalarAndTensor, (2.0, XS), {}),
    "div.Tensor": (aten._foreach_div.Tensor, (XS, torch.tensor(2.0)), {}),
    "zero": (aten._foreach_zero.default, (XS,), {}),
    "copy": (aten._foreach_copy.default, (XS, YS), {}),
    "clamp_max.Scalar": (aten._foreach_clamp_max.Scalar, (XS, 0.1), {}),
    "maximum.List": (aten._foreach_maximum.List, (XS, YS), {}),
    "sub.List alpha": (aten._foreach_sub.List, (XS, YS), {"alpha": 0.5}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_decomposition_equals_the_foreach_op(case: str) -> None:
    op, args, kwargs = CASES[case]
    for got, expected in zip(foreach_decompositions()[op](*args, **kwargs), op(*args, **kwargs), strict=True):
        torch.testing.assert_close(got, expected)


def test_reductions_and_products_stay_aten_kernels() -> None:
    table = foreach_decompositions()
    assert aten._foreach_norm.Scalar not in table and aten._foreach_mm.default not in table
    assert aten._foreach_add_.List not in table  # in-place forms are functionalized first


OPTIMIZERS = {
    "AdamW": lambda ps: torch.optim.AdamW(ps, lr=1e-2, foreach=True),
    "Adam amsgrad": lambda ps: torch.optim.Adam(ps, lr=1e-2, amsgrad=True, foreach=True),
    "SGD momentum nesterov": lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.9, nesterov=True, foreach=True),
    "RMSprop": lambda ps: torch.optim.RMSprop(ps, lr=1e-2, foreach=True),
}


def _params() -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(1)
    shapes = [(64, 64), (1024,), (64, 64), (1024,), (3, 5, 70)]
    params = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in shapes]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)
    return params


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_compiled_optimizer_steps_match_eager(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from ember_inductor.codegen.cpp_backend import CppBackend

    sources: list[str] = []
    generate = CppBackend.generate

    def spy(self: CppBackend, scheduler: object) -> tuple:
        out = generate(self, scheduler)
        sources.append(out)
        return out

    monkeypatch.setattr(CppBackend, "generate", spy)
    ref, ours = _params(), _params()
    ref_opt, opt = OPTIMIZERS[name](ref), OPTIMIZERS[name](ours)
    step = ember.compile(lambda: opt.step(), backend="inductor")
    for _ in range(3):
        ref_opt.step()
        step()
    for p, q in zip(ref, ours):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
        for key, value in ref_opt.state[p].items():
            torch.testing.assert_close(opt.state[q][key], value, rtol=1e-5, atol=1e-6, msg=f"{name} {key}")
    source, kernels = sources[-1]  # the graph of the steps after the first (which makes the state)
    definitions = re.findall(r'extern "C" \w+ (kernel\d+)\(', source)
    assert sorted(definitions) == sorted({name for name, _ in kernels.values()})
    if name.startswith("SGD"):  # (64, 64) and (1024,) come twice: their updates share one function each
        assert len(definitions) <= len(kernels) - 2, (definitions, kernels)
    if name == "AdamW":  # the bias correction (a pow of the step count) is never computed per element
        loops = re.findall(r"for \(int64_t x0 = 0; x0 < (\d+); x0\+\+\) \{(.*?)\n  \}", source, re.S)
        big = [body for n, body in loops if int(n) >= 1024]
        assert big and not any("e_pow(" in body for body in big)
