"""Every math form the C++ codegen emits computes the same bits in a vectorized loop, in its
vector epilogue, in its scalar tail and in a loop that does not vectorize.

A value recomputed in several loops of one kernel (tanh feeding amax, then amax's backward mask
``x == amax(x)``) must be the same in each: libm's scalar ``tanhf`` and libmvec's vector one
differ in the last bit, and the mask misses the maximum (a silently wrong gradient).
"""
from __future__ import annotations

import ctypes

import pytest
import torch

from ember_inductor import cache
from ember_inductor.codegen.cpp import _BINARY, _UNARY
from ember_inductor.codegen.cpp_prelude import prelude

_NOT_FLOAT = ("bitwise", "logical", "truncdiv")  # integer or bool operands only
N = 20011  # odd: the vector loop has an epilogue and a scalar tail


def _forms() -> dict[str, str]:
    """The codegen's own tables: op name -> its C++ form over operands ``a`` (and ``b``)."""
    forms = {name: form.format("a") for name, form in _UNARY.items() if not name.startswith(_NOT_FLOAT)}
    forms |= {name: form.format("a", "b") for name, form in _BINARY.items() if not name.startswith(_NOT_FLOAT)}
    forms |= {f"{name}_fast": f"e_{name}<true>(a)" for name in ("sin", "cos")}  # a kernel's first pass
    return forms


def _source(ctype: str) -> str:
    kernels = []
    for name, form in _forms().items():
        body = f"for (int64_t i = 0; i < n; i++) {{ {ctype} a = x[i], b = y[i]; out[i] = ({ctype})({form}); }}"
        sig = f"(const {ctype}* __restrict__ x, const {ctype}* __restrict__ y, {ctype}* __restrict__ out, int64_t n)"
        kernels += [f'extern "C" void vec_{name}{sig} {{\n#pragma omp simd\n{body}\n}}',
                    f'extern "C" __attribute__((optimize("no-tree-vectorize"))) void sca_{name}{sig} {{ {body} }}']
    code = "\n".join(kernels)
    return prelude(code) + "\n" + code + "\n"


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, -1e-30, 1e-40, 88.7, -103.9, -745.5, 1e4, -1e4, 3e5, -1e30,
                            float("inf"), float("-inf"), float("nan")], dtype=torch.float64)
    span = torch.linspace(-30.0, 30.0, N // 2, dtype=torch.float64)
    rest = N - len(special) - len(span)
    x = torch.cat([special, span, torch.randn(rest, generator=g, dtype=torch.float64) * 4])
    y = torch.cat([special.flip(0), torch.randn(N - len(special), generator=g, dtype=torch.float64) * 3])
    return x.to(dtype).contiguous(), y.to(dtype).contiguous()


_TARGETS = {"native": [], "no-avx512": ["-mno-avx512f"],  # the AVX2 code where the host has AVX-512
            "256-bit loops": ["-mprefer-vector-width=256"],  # 8-lane calls widened to the 16-lane variant
            "no-fma": ["-mno-avx512f", "-mno-fma"]}  # AVX2 alone: exp's multiply-adds are not fused


@pytest.mark.parametrize("target", list(_TARGETS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_vector_and_scalar_forms_are_bit_identical(dtype: torch.dtype, target: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "CFLAGS", cache.CFLAGS + _TARGETS[target])
    ctype = {torch.float32: "float", torch.float64: "double"}[dtype]
    lib = cache.load_library(_source(ctype))
    x, y = _inputs(dtype)
    differ = {}
    for name in _forms():
        got = {}
        for form in ("vec", "sca"):
            out = torch.empty_like(x)
            fn = getattr(lib, f"{form}_{name}")
            fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64]
            fn(x.data_ptr(), y.data_ptr(), out.data_ptr(), N)
            got[form] = out
        a, b = got["vec"], got["sca"]
        same = (a.view(torch.int64 if dtype == torch.float64 else torch.int32) ==
                b.view(torch.int64 if dtype == torch.float64 else torch.int32)) | (a.isnan() & b.isnan())
        if not bool(same.all()):
            i = int((~same).nonzero()[0])
            differ[name] = f"{int((~same).sum())} values, e.g. at {i}: {float(a[i])!r} vs {float(b[i])!r}"
    assert not differ, differ
