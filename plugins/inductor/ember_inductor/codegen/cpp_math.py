"""Math functions of the generated C++ that compute the same bits in every loop of a kernel.

A value recomputed in several loops of one kernel (a reduction's input, read again by the loop
that stores its mask) must compute bit-identically in each, whether gcc vectorizes that loop, runs
its tail in a narrower vector epilogue or leaves it scalar: libm's scalar ``tanhf`` and libmvec's
vector ones differ in the last bit, and ``x == amax(x)`` then misses the maximum.

Each libm function ``f`` the codegen calls is reached through ``em_f`` (float ``em_ff``, double
``em_fd``), declared ``simd`` so that loops still vectorize, whose every form, scalar and each
vector width gcc may choose (SSE, AVX, AVX2, AVX-512), runs ONE implementation: libmvec's widest
variant for the target (AVX-512: 16 floats / 8 doubles, else AVX2: 8 / 4), the lanes given
repeated to its width. libmvec computes each lane from that lane alone, so where a value lands
in a vector does not change it. The scalar
``em_f`` is defined under another name and aliased in assembly, so that gcc does not derive its
own vector clones from its body. Without AVX2 or a libmvec that has every function (glibc 2.35),
``em_f`` is the scalar libm function, never vectorized: slower, and as consistent. A function
libmvec lacks (fmod) has vector forms that call the libm function per lane: exact and the same
bits in every form, and the loop around it still vectorizes.
"""
from __future__ import annotations

import re
from typing import Callable, Iterable

# libm name -> arity; the codegen calls e_<name>(...)
FUNCTIONS: dict[str, int] = {
    "exp": 1, "exp2": 1, "expm1": 1, "log": 1, "log2": 1, "log10": 1, "log1p": 1,
    "sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1,
    "tanh": 1, "asinh": 1, "acosh": 1, "atanh": 1, "erf": 1, "erfc": 1,
    "pow": 2, "atan2": 2, "hypot": 2, "fmod": 2,
}

OWN_DISPATCH = {"exp", "pow", "fmod", "sin", "cos"}  # the prelude's e_exp, e_pow, e_fmod, e_sin, e_cos
# (inline float exp, sin and cos; integers)
# Functions libmvec has no vector form of: their vector forms call the libm function per lane
# (exact, as fmod is), so that the loop around them still vectorizes.
PER_LANE = {"fmod"}
CALLERS = {"sigmoid": "exp", "remainder": "fmod"}  # prelude functions calling one of FUNCTIONS

# The canonical width: libmvec's AVX-512 variants ('e': 16 floats, 8 doubles) where the target
# has AVX-512, its AVX2 ones ('d') otherwise; a scalar or a narrower vector is widened to it by
# repeating its lanes, and its first lanes taken back. gcc's vector types have the ABI of the
# __m128/__m256/__m512 ones (immintrin.h would add much to every build's time).
_WIDTHS = r"""
typedef float em_f4 __attribute__((vector_size(16)));
typedef float em_f8 __attribute__((vector_size(32)));
typedef float em_f16 __attribute__((vector_size(64)));
typedef double em_d2 __attribute__((vector_size(16)));
typedef double em_d4 __attribute__((vector_size(32)));
typedef double em_d8 __attribute__((vector_size(64)));
#ifdef __AVX512F__
typedef em_f16 em_vf; typedef em_d8 em_vd;
#else
typedef em_f8 em_vf; typedef em_d4 em_vd;
#endif
"""

# per element type: (em_ suffix, libm suffix, scalar type, canonical vector type, the vector
# variants gcc may call: (ISA letter, vector type, lanes)), for the AVX2 and AVX-512 targets
_FLOAT = ("f", "f", "float", "em_vf", (("b", "em_f4", 4), ("c", "em_f8", 8), ("d", "em_f8", 8)),
          ("e", "em_f16", 16))
_DOUBLE = ("d", "", "double", "em_vd", (("b", "em_d2", 2), ("c", "em_d4", 4), ("d", "em_d4", 4)),
           ("e", "em_d8", 8))


def _vector(name: str, arity: int, avx512: bool) -> list[str]:
    """The definitions of ``em_<name>f`` and ``em_<name>d``: the scalar form and the vector
    variants gcc may call, each through the canonical libmvec variant."""
    lines = []
    mask = "v" * arity
    for suffix, libm_suffix, scalar, canon, variants, widest in (_FLOAT, _DOUBLE):
        if avx512:
            variants += (widest,)
        if name in PER_LANE:
            lines += _per_lane(name, arity, f"em_{name}{suffix}", f"{name}{libm_suffix}", scalar, variants)
            continue
        isa, _, wide = variants[-1]
        em, base = f"em_{name}{suffix}", f"_ZGV{isa}N{wide}{mask}_{name}{libm_suffix}"
        lines.append(f'extern "C" {canon} {base}({", ".join([canon] * arity)});')
        forms = [(scalar, 1, f"{em}_s")] + [(vtype, lanes, f"_ZGV{letter}N{lanes}{mask}_{em}")
                                            for letter, vtype, lanes in variants]
        for vtype, lanes, symbol in forms:
            params = ", ".join(f"{vtype} a{k}" for k in range(arity))
            args = ", ".join(_widen(f"a{k}", lanes, wide, canon) for k in range(arity))
            lines.append(f'extern "C" __attribute__((visibility("hidden"), used)) {vtype} {symbol}({params}) '
                         f'{{ const {canon} r = {base}({args}); return {_narrow("r", lanes, wide)}; }}')
        lines.append(f'__asm__(".globl {em}\\n.hidden {em}\\n.set {em}, {em}_s");')  # the scalar em_f
    return lines


def _per_lane(name: str, arity: int, em: str, libm: str, scalar: str,
              variants: tuple[tuple[str, str, int], ...]) -> list[str]:
    """The scalar ``em`` and its vector variants, each calling the libm function ``libm`` per lane."""
    mask = "v" * arity
    args = lambda lane: ", ".join(f"a{k}{lane}" for k in range(arity))  # noqa: E731
    lines = [f'extern "C" __attribute__((visibility("hidden"), used)) {scalar} {em}_s('
             f'{", ".join(f"{scalar} a{k}" for k in range(arity))}) {{ return {libm}({args("")}); }}']
    for letter, vtype, lanes in variants:
        params = ", ".join(f"{vtype} a{k}" for k in range(arity))
        lines.append(f'extern "C" __attribute__((visibility("hidden"), used)) {vtype} _ZGV{letter}N{lanes}{mask}_{em}'
                     f'({params}) {{ {vtype} r; for (int i = 0; i < {lanes}; i++) r[i] = {libm}({args("[i]")}); return r; }}')
    lines.append(f'__asm__(".globl {em}\\n.hidden {em}\\n.set {em}, {em}_s");')
    return lines


def _widen(arg: str, lanes: int, wide: int, canon: str) -> str:
    """``arg`` (a scalar or a vector of ``lanes``) repeated over the ``wide`` lanes of ``canon``."""
    if lanes == 1:
        return f"({arg} - {canon}{{}})"  # broadcast; x - 0 keeps x, -0 included
    if lanes == wide:
        return arg
    return f"__builtin_shufflevector({arg}, {arg}, {', '.join(str(i % lanes) for i in range(wide))})"


def _narrow(value: str, lanes: int, wide: int) -> str:
    """The first ``lanes`` of ``value``, a vector of ``wide`` lanes."""
    if lanes == 1:
        return f"{value}[0]"
    if lanes == wide:
        return value
    return f"__builtin_shufflevector({value}, {value}, {', '.join(str(i) for i in range(lanes))})"


def _declaration(name: str, arity: int) -> list[str]:
    return [f'extern "C" __attribute__((simd("notinbranch"), const, nothrow, visibility("hidden"))) '
            f'{scalar} em_{name}{suffix}({", ".join([scalar] * arity)});'
            for suffix, scalar in (("f", "float"), ("d", "double"))]


def _scalar(name: str, arity: int) -> list[str]:
    params = lambda t: ", ".join(f"{t} a{k}" for k in range(arity))  # noqa: E731
    args = ", ".join(f"a{k}" for k in range(arity))
    return [f"static inline float em_{name}f({params('float')}) {{ return {name}f({args}); }}",
            f"static inline double em_{name}d({params('double')}) {{ return {name}({args}); }}"]


def _dispatch(name: str, arity: int) -> str:
    """``e_<name>``: float arguments to the float function, anything else to the double one."""
    if name in OWN_DISPATCH:
        return ""
    if arity == 1:
        return (f"template <typename T> static inline auto e_{name}(T a) {{ if constexpr (std::is_same_v<T, float>) "
                f"return em_{name}f(a); else return em_{name}d(static_cast<double>(a)); }}")
    return (f"template <typename T, typename U> static inline auto e_{name}(T a, U b) {{ "
            f"if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) return em_{name}f(a, b); "
            f"else return em_{name}d(static_cast<double>(a), static_cast<double>(b)); }}")


def used_in(code: str) -> set[str]:
    """The functions of FUNCTIONS that generated kernels ``code`` calls, through CALLERS too."""
    called = set(re.findall(r"\be_(\w+)(?:<\w+>)?\(", code))
    called |= {CALLERS[name] for name in called if name in CALLERS}
    return {name for name in FUNCTIONS if name in called}


def source(used: set[str]) -> str:
    """The C++ text: the ``e_`` templates and the ``em_`` functions they call, defined for the
    functions ``used`` only (each adds to the compiler's time), declared for all."""
    def lines(make: Callable[[str, int], list[str]], names: Iterable[str]) -> list[str]:
        return [line for name in names for line in make(name, FUNCTIONS[name])]

    used = sorted(used)
    return "\n".join(
        ["#if defined(__x86_64__) && defined(__AVX2__) && defined(__GLIBC_PREREQ)",
         "#if __GLIBC_PREREQ(2, 35)", "#define EM_VECTOR_MATH 1", "#endif", "#endif",
         "#ifdef EM_VECTOR_MATH", _WIDTHS, *lines(_declaration, FUNCTIONS),
         "#ifdef __AVX512F__", *lines(lambda n, a: _vector(n, a, True), used),
         "#else", *lines(lambda n, a: _vector(n, a, False), used), "#endif",
         "#else", *lines(_scalar, FUNCTIONS), "#endif",
         *(_dispatch(name, arity) for name, arity in FUNCTIONS.items())])
