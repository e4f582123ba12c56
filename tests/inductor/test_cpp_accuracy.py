"""The inline math of the C++ prelude against the exact values: float sin and cos (on floats below
2^18; beyond, libm's: tests/inductor/test_cpp_trig.py) and float exp.

Each bound is the largest error measured on every float of the range while the function was
written; the tests check millions of floats spread over every binade.
"""
from __future__ import annotations

import ctypes

import pytest
import torch

from ember_inductor import cache
from ember_inductor.codegen.cpp_prelude import prelude


def _ulps(got: torch.Tensor, x: torch.Tensor, fn) -> torch.Tensor:
    """|got - fn(x)| in units of the float32 spacing at the rounded exact value."""
    want = fn(x.double())
    rounded = want.float()
    ulp = (torch.nextafter(rounded.abs(), torch.tensor(float("inf"))) - rounded.abs()).double()
    return (got.double() - want).abs() / ulp


def inline_math(fast: bool) -> ctypes.CDLL:
    """k_sin, k_cos (the kernels' EM_FAST pass where ``fast``, else the second pass) and k_exp."""
    form = "<true>" if fast else ""
    code = "\n".join(
        f'extern "C" void k_{name}(const float* __restrict__ x, float* __restrict__ out, int64_t n) {{\n'
        f"#pragma omp parallel for simd\nfor (int64_t i = 0; i < n; i++) out[i] = e_{name}{form if name != 'exp' else ''}(x[i]);\n}}"
        for name in ("sin", "cos", "exp"))
    code += '\nextern "C" int fused() {\n#ifdef __FMA__\nreturn 1;\n#else\nreturn 0;\n#endif\n}'
    return cache.load_library(prelude(code) + "\n" + code + "\n")


def _needs_fma() -> None:
    """Skip where the target has no fused multiply-add: there sin and cos are libm's, and exp's
    products are rounded (its bound is measured with FMA)."""
    if not inline_math(False).fused():
        pytest.skip("the compiler's target has no FMA")


def run_inline(lib: ctypes.CDLL, name: str, x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    fn = getattr(lib, f"k_{name}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    fn(x.data_ptr(), out.data_ptr(), x.numel())
    return out


def _near_floats() -> torch.Tensor:
    """About 8.4 million floats spread over every binade below 2^18, both signs."""
    bits = torch.arange(0, 0x48800000, 145, dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32)
    return torch.cat([x, -x[::7]])


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_inline_form_is_within_1_6_ulp_below_2_to_the_18(name: str) -> None:
    """Checked on every float below 2^18 while it was written: at most 1.56 ulp (libmvec's
    AVX-512 sinf and cosf: 1.94)."""
    _needs_fma()
    x = _near_floats()
    fn = getattr(torch, name)
    for fast in (True, False):
        err = _ulps(run_inline(inline_math(fast), name, x), x, fn)
        worst = int(err.argmax())
        assert float(err.max()) <= 1.6, f"{name}({float(x[worst])!r}): {float(err[worst]):.3f} ulp (fast={fast})"


def test_exp_is_within_1_03_ulp() -> None:
    """Every float in [-104, 88.72] while Estrin's scheme replaced Horner's: at most 1.028 ulp
    (1.023 before). Below, results are 0 or denormal (checked against eager in test_cpp_math)."""
    _needs_fma()
    bits = torch.arange(0, 0x42D00000, 97, dtype=torch.int64).to(torch.int32)  # [0, 104)
    x = bits.view(torch.float32)
    x = torch.cat([-x, x[x <= 88.72]])  # above ln(FLT_MAX) = 88.7228, inf
    err = _ulps(run_inline(inline_math(False), "exp", x), x, torch.exp)
    worst = int(err.argmax())
    assert float(err.max()) <= 1.03, f"exp({float(x[worst])!r}): {float(err[worst]):.3f} ulp"
