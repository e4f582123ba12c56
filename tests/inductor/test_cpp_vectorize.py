"""The inner loop of every pointwise op kind the C++ codegen emits is vectorized by the compiler.

One graph holds one output per op kind, each of its own length, so that each becomes a kernel
of its own; the generated source is compiled again with gcc's vectorization report
(``-fopt-info-vec-optimized``), which names the source line of every loop it vectorized. The
outputs are compared with eager too.

Targets: the host's (``-march=native``) and AVX2 without AVX-512 and FMA (a CPU, or a virtual
machine's CPU model, that lacks them: there ``std::fma`` in the inline ``exp`` was a library
call per element, so ``sigmoid``, and with it the chain of issue 26, ran scalar while
``sin + cos`` vectorized).

Not vectorized, and not listed here: integer division and remainder ops, and index expressions
that divide the inner loop variable (``cat`` along the inner dimension, whose index is an int64
modulus; a reshape that merges the inner dimension with a strided one): x86 has no vector
integer division, and int64 division by a constant needs a 64-bit multiply-high, which it lacks
too. On AVX2, conversions between int64 and floating types (no instruction for them).
"""
from __future__ import annotations

import os
import platform
import re
import subprocess
from typing import Callable

import pytest
import torch

from ember_inductor import cache

from helpers import assert_same, compile_fn

F, D, I32, I64 = torch.float32, torch.float64, torch.int32, torch.int64


def _chain(x: torch.Tensor) -> torch.Tensor:
    return (torch.sin(x) * 2 + torch.cos(x)).relu() * torch.sigmoid(x) - 1


# op kind -> (function of two inputs, their dtype); a name ending in "_par" runs a parallel loop
OPS: dict[str, tuple[Callable, torch.dtype]] = {
    "chain": (lambda x, y: _chain(x), F),
    "chain_par": (lambda x, y: _chain(x), F),
    "chain_f64": (lambda x, y: _chain(x), D),
    "chain_bf16": (lambda x, y: _chain(x), torch.bfloat16),
    "chain_f16": (lambda x, y: _chain(x), torch.float16),
    "eq": (lambda x, y: x == y, F), "lt": (lambda x, y: x < y, F), "ge": (lambda x, y: x >= y, F),
    "maximum": (torch.maximum, F), "minimum": (torch.minimum, F),
    "relu": (lambda x, y: torch.relu(x), F), "sigmoid": (lambda x, y: torch.sigmoid(x), F),
    "where": (lambda x, y: torch.where(x > 0, x, y), F),
    "where_scalars": (lambda x, y: torch.where(x > y, 1.0, 0.0) + (x > 0).float(), F),
    "to_int32": (lambda x, y: (x * 10).to(I32), F), "to_bool": (lambda x, y: x.to(torch.bool), F),
    "int_to_float": (lambda x, y: (x * 10).to(I32).to(F) + 1, F),
    "from_bf16": (lambda x, y: x.float() * 2, torch.bfloat16), "to_bf16": (lambda x, y: (x * 2).bfloat16(), F),
    "from_f16": (lambda x, y: x.float() * 2, torch.float16), "to_f16": (lambda x, y: (x * 2).half(), F),
    "int32_ops": (lambda x, y: x * 3 + y - torch.maximum(x, y), I32), "int64_ops": (lambda x, y: x * y - 1, I64),
    "int_abs_relu": (lambda x, y: torch.relu(x) + x.abs() - x.sign(), I32),
    "bitwise": (lambda x, y: (x & y) | (x ^ 3) | ~y, I32),
    "abs": (lambda x, y: x.abs(), F), "neg": (lambda x, y: -x, F), "sign": (lambda x, y: x.sign(), F),
    "clamp": (lambda x, y: x.clamp(-0.5, 0.5), F), "erf": (lambda x, y: torch.erf(x), F),
    "gelu": (lambda x, y: torch.nn.functional.gelu(x), F),
    "gelu_tanh": (lambda x, y: torch.nn.functional.gelu(x, approximate="tanh"), F),
    "exp": (lambda x, y: x.exp(), F), "log": (lambda x, y: x.abs().log(), F),
    "log1p": (lambda x, y: x.abs().log1p(), F), "expm1": (lambda x, y: x.expm1(), F),
    "tanh": (lambda x, y: x.tanh(), F), "sqrt_rsqrt": (lambda x, y: x.abs().sqrt() + y.abs().rsqrt(), F),
    "pow": (lambda x, y: x.abs().pow(y), F), "pow_int": (lambda x, y: x.pow(3), F),
    "floor": (lambda x, y: x.floor(), F), "ceil": (lambda x, y: x.ceil(), F), "round": (lambda x, y: x.round(), F),
    "trunc": (lambda x, y: x.trunc(), F), "fmod": (torch.fmod, F), "remainder": (torch.remainder, F),
    "floordiv": (lambda x, y: torch.div(x, y, rounding_mode="floor"), F),
    "logical": (lambda x, y: torch.logical_and(x > 0, y > 0) ^ torch.logical_or(x > 1, ~(y > 1)), F),
    "logical_xor": (lambda x, y: torch.logical_xor(x > 0, y > 0), F),
    "isnan_isinf": (lambda x, y: x.isnan() | (x * 1e38).isinf(), F),
    # a where between a value and a libm function's (softplus ran scalar: cpp_prelude's e_where)
    "softplus": (lambda x, y: torch.nn.functional.softplus(x), F), "mish": (lambda x, y: torch.nn.functional.mish(x), F),
    "elu": (lambda x, y: torch.nn.functional.elu(x), F), "selu": (lambda x, y: torch.nn.functional.selu(x), F),
    "logsigmoid": (lambda x, y: torch.nn.functional.logsigmoid(x), F),
    "where_libm_f64": (lambda x, y: torch.where(x > 1, x, torch.log1p(x.abs())), D),
}
_AVX2 = ["-mno-avx512f", "-mno-fma"]
NOT_ON_AVX2: set[str] = set()  # every op kind above vectorizes there too


def _inputs(names: list[str]) -> list[torch.Tensor]:
    out = []
    for k, name in enumerate(names):
        dtype = OPS[name][1]
        size = (1 << 16 if name.endswith("_par") else 1000) + k
        g = torch.Generator().manual_seed(k)
        for _ in range(2):
            v = torch.randn(size, generator=g, dtype=D) * 4
            out.append(v.to(dtype) if dtype.is_floating_point else (v * 10).to(dtype))
    return out


def _vectorized(source: str, flags: list[str], tmp_path: str) -> list[bool]:
    """Per kernel of ``source`` (in order): whether gcc vectorized a loop of it."""
    path = os.path.join(tmp_path, f"kernels{len(flags)}.cpp")
    with open(path, "w") as f:
        f.write(source)
    proc = subprocess.run([cache.CXX, *cache.CFLAGS, *flags, "-fopt-info-vec-optimized", path,
                           "-o", path + ".so", *cache.LIBS], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = {int(m.group(1)) for m in re.finditer(r":(\d+):\d+: optimized: loop vectorized", proc.stderr)}
    starts = [i for i, line in enumerate(source.splitlines(), 1) if re.match(r'extern "C" \w+ kernel\d+\(', line)]
    ends = starts[1:] + [len(source.splitlines()) + 1]
    return [any(a <= n < b for n in lines) for a, b in zip(starts, ends)]


def _gcc_avx2() -> bool:
    """gcc on an x86 host with AVX2 and glibc 2.35 (else libm's functions are not vectorized: cpp_math)."""
    libc, version = platform.libc_ver()
    if platform.machine() != "x86_64" or libc != "glibc" or tuple(map(int, version.split(".")[:2])) < (2, 35):
        return False
    if not os.path.exists("/proc/cpuinfo"):
        return False
    with open("/proc/cpuinfo") as f:
        if " avx2" not in f.read():
            return False
    out = subprocess.run([cache.CXX, "--version"], capture_output=True, text=True).stdout
    return "Free Software Foundation" in out


@pytest.mark.skipif(not _gcc_avx2(), reason="reads gcc's vectorization report for an x86 host with AVX2")
def test_every_pointwise_op_kind_vectorizes(tmp_path) -> None:
    names = list(OPS)

    def fn(*args: torch.Tensor) -> tuple:
        return tuple(OPS[n][0](args[2 * k], args[2 * k + 1]) for k, n in enumerate(names))
    inputs = _inputs(names)
    compiled = compile_fn(fn, *inputs)
    assert_same(compiled(*inputs), fn(*inputs))
    source = compiled.compiled.source
    assert source.count('extern "C" void kernel') == len(names)  # one kernel per op kind, in order
    assert "#pragma omp parallel for simd" in source  # chain_par's loop
    scalar = {}
    for target, flags, allowed in (("native", [], set()), ("AVX2 without FMA", _AVX2, NOT_ON_AVX2)):
        scalar[target] = [n for n, vec in zip(names, _vectorized(source, flags, str(tmp_path)))
                          if not vec and n not in allowed]
    assert not any(scalar.values()), f"loops not vectorized, per target: {scalar}"


def _vectorized_lines(source: str, tmp_path: str) -> set[int]:
    """The lines of ``source`` at which gcc's report says it vectorized a loop."""
    path = os.path.join(tmp_path, "rows.cpp")
    with open(path, "w") as f:
        f.write(source)
    proc = subprocess.run([cache.CXX, *cache.CFLAGS, "-fopt-info-vec-optimized", path, "-o", path + ".so",
                           *cache.LIBS], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {int(m.group(1)) for m in re.finditer(r":(\d+):\d+: optimized: loop vectorized", proc.stderr)}


def _row_loops_vectorized(source: str, tmp_path: str) -> list[bool]:
    """Per row loop (``for (int64_t r...``) of ``source``, in order: whether gcc vectorized it
    (it reports a loop at its pragma's line, at the ``for`` or, once unswitched, at a line of its
    body)."""
    lines = _vectorized_lines(source, tmp_path)
    text = source.splitlines()
    result = []
    for start, line in enumerate(text, 1):
        if not re.match(r"\s*for \(int64_t r\d+ ", line):
            continue
        end, depth = start, 0
        for end in range(start, len(text) + 1):  # to the loop's closing brace
            depth += text[end - 1].count("{") - text[end - 1].count("}")
            if depth == 0:
                break
        result.append(any(start - 1 <= n <= end for n in lines))
    return result


@pytest.mark.skipif(not _gcc_avx2(), reason="reads gcc's vectorization report for an x86 host with AVX2")
def test_every_row_loop_of_masked_softmax_and_any_vectorizes(tmp_path) -> None:
    """Each of a row's loops, not only one per kernel: a causal softmax over a symbolic length
    (its mask reads ``x0 % s0``, computed once per row: inside the loop, gcc vectorized none of
    it, and the GPT block's attention ran at a tenth of its speed) and an ``any`` beside a sum
    (a bool ``||`` reduction kept its loop scalar)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from ember_inductor.compile_fx import compile_aten_graph
    from ember_inductor.decompositions import decompositions

    def causal_softmax(x: torch.Tensor) -> torch.Tensor:  # as the SDPA decomposition builds it
        n = x.shape[-1]
        keep = (torch.arange(n)[None, :] - torch.arange(n)[:, None]) <= 0
        scores = x + torch.where(keep, 0.0, float("-inf"))
        weights = scores.softmax(-1)
        return torch.where((scores == float("-inf")).all(-1, keepdim=True), 0.0, weights)

    def any_and_sum(x: torch.Tensor) -> tuple:
        return torch.where(x > 0, x.exp(), 0).sum(-1), (x > 3).any(-1)

    for fn, x in ((causal_softmax, torch.randn(6, 40, 40)), (any_and_sum, torch.randn(64, 100))):
        gm = make_fx(fn, decomposition_table=decompositions(), tracing_mode="symbolic")(x)
        compiled = compile_aten_graph(gm, [x])
        assert_same(compiled(x), fn(x))
        loops = _row_loops_vectorized(compiled.source, str(tmp_path))
        assert loops and all(loops), (fn.__name__, loops)
        # no division inside a row's loops: gcc cannot move one out (it might trap), and x86
        # divides no vector of int64, so `x0 % s0` per element ran at a tenth of the speed
        divisions = [line for line in _row_loop_lines(compiled.source) if re.search(r"%|\bx\d+ / ", line)]
        assert not divisions, (fn.__name__, divisions)


def _row_loop_lines(source: str) -> list[str]:
    """The lines inside the row loops (``for (int64_t r...``) of ``source``."""
    out, depth = [], 0
    for line in source.splitlines():
        if depth == 0 and re.match(r"\s*for \(int64_t r\d+ ", line):
            depth = line.count("{") - line.count("}")
            continue
        if depth > 0:
            depth += line.count("{") - line.count("}")
            if depth > 0:
                out.append(line)
    return out


def test_an_indirect_index_inside_a_row_is_not_moved_out_of_it() -> None:
    """A gather from a ``cat``, summed over the row: the cat's bounds test reads the gathered
    index, declared inside the row loop, so it stays there (review: hoisted, it failed to compile)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from ember_inductor.compile_fx import compile_aten_graph
    from ember_inductor.decompositions import decompositions

    def gather_from_cat(a: torch.Tensor, b: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return torch.cat([a, b])[idx].sum(-1)

    inputs = [torch.randn(5), torch.randn(7), torch.randint(0, 12, (4, 30))]
    compiled = compile_aten_graph(make_fx(gather_from_cat, decomposition_table=decompositions())(*inputs), inputs)
    assert_same(compiled(*inputs), gather_from_cat(*inputs))


@pytest.mark.skipif(not _gcc_avx2(), reason="reads gcc's vectorization report for an x86 host with AVX2")
def test_row_reductions_keep_partial_results_in_lanes_and_vectorize(tmp_path) -> None:
    """A static row of sums that is a multiple of ``cpp.LANES`` long is reduced into that many
    partial sums, combined pairwise after the loop (``CppKernel._lanes_loop``): the layer norm's
    two sums and a row sum. Its loops vectorize, NaN still propagates, and the values are
    eager's; softmax's exp-and-sum (a transcendental function), a max and a row of another length
    keep the one-accumulator loop."""
    from ember_inductor.codegen.cpp import LANES

    def fn(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> tuple:
        ln = torch.nn.functional.layer_norm(x, (x.shape[-1],))
        return ln, z.sum(-1), z.softmax(-1), z.amax(-1), y.sum(-1)

    x, y, z = torch.randn(8, 16 * LANES), torch.randn(8, LANES + 36), torch.randn(6, 4 * LANES)
    x[3, 100] = float("nan")
    z[2, 7] = float("nan")
    compiled = compile_fn(fn, x, y, z)
    out = compiled(x, y, z)
    assert_same(out, fn(x, y, z))
    assert out[0][3].isnan().all() and out[1][2].isnan() and out[3][2].isnan()
    source = compiled.compiled.source
    kernels = source.split('extern "C"')[1:]
    # the layer norm's two sums; z's sum shares its loop with the max, which keeps one accumulator
    assert sum(k.count(f"_l[{LANES}];") for k in kernels) == 2, source
    short = [k for k in kernels if f"< {LANES + 36};" in k]
    assert short and not any(f"_l[{LANES}];" in k for k in short), short
    vectorized = _vectorized_lines(source, str(tmp_path))
    text = source.splitlines()
    lane_loops = [i for i, line in enumerate(text, 1) if re.match(rf"\s*for \(int64_t r\d+_l = 0; r\d+_l < {LANES};", line)
                  and "r0_b" in text[i - 3]]
    assert lane_loops, source
    missed = [text[i - 1] for i in lane_loops if not any(i - 1 <= n <= i + 12 for n in vectorized)]
    assert not missed, missed
