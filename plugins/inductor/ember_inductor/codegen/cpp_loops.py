"""The loop nests of C++ kernels: OpenMP pragmas (``parallel for`` outside, ``simd`` innermost,
``if`` where the size decides at run time), the outer loops of a kernel with the lines that need
no loop hoisted ahead of them, a pointwise inner loop interleaved in streams (``cpp_streams``), a
reduction stage's loops, and a row of sums kept in ``LANES`` partial sums. ``pragma`` arguments
add the kernel's bounds-check reductions to a pragma (``CppKernel.pragma``)."""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import sympy

from .cpp_ops import cexpr
from .cpp_streams import EXPENSIVE, interleaved, streams_for
from .kernel import IDENT

#: Partial sums a row of sums keeps per accumulator (``lanes_loop``): four AVX-512 vectors of
#: floats, so four adds are in flight.
LANES = 64


def at_least(e: Any, n: int) -> bool | str:
    """Is ``e >= n``: a bool for a static ``e``, else the C++ condition checked at run time."""
    e = sympy.sympify(e)
    if not e.free_symbols:
        return int(e) >= n
    return f"{cexpr(e)} >= {n}"


def omp_if(cond: bool | str) -> str:
    return f" if({cond})" if isinstance(cond, str) else ""


def for_loop(var: Any, size: Any, body: list[str], pragma: str = "") -> list[str]:
    return ([pragma] if pragma else []) + [f"for (int64_t {var} = 0; {var} < {cexpr(size)}; {var}++) {{"] + \
        [f"  {line}" for line in body] + ["}"]


def outer_loops(loops: Sequence[tuple[Any, Any]], body: list[str], parallel: bool | str, simd_inner: bool,
                pragma: Callable[[str], str]) -> list[str]:
    """The loops over ``(variable, size)`` pairs, outermost first, around ``body``."""
    n = len(loops)
    invariant: list[str] = []
    outside: list[str] = []
    if simd_inner and n and all(sympy.sympify(size).is_number for _, size in loops):
        # computed once for the whole kernel (an optimizer step's bias correction, a pow of
        # the step count): per element, AdamW's update ran 2-3x eager's time. A loop that
        # may run no time (a symbolic size) computes nothing ahead of it.
        outside, body = hoist_invariant(body, {v.name for v, _ in loops})
    if simd_inner and n >= 2:
        invariant, body = hoist_invariant(body, {loops[-1][0].name})
    for k in reversed(range(n)):
        var, size = loops[k]
        line = ""
        if k == 0 and parallel:
            if n == 1:
                line = "#pragma omp parallel for" + (" simd" if simd_inner else "")
            else:
                collapse = n - 1 if simd_inner else n
                line = "#pragma omp parallel for" + (f" collapse({collapse})" if collapse > 1 else "")
            line += omp_if(parallel)
        elif k == n - 1 and simd_inner:
            line = "#pragma omp simd"
        line = pragma(line)
        streams = streams_for(body) if k == n - 1 and simd_inner else 1
        if streams > 1:
            body = _streams_loops(body, var, size, streams, line, pragma)
        else:
            body = for_loop(var, size, body, line)
        if k == n - 1:
            body = invariant + body
    return outside + body


def _streams_loops(body: list[str], var: Any, size: Any, streams: int, head: str,
                   pragma: Callable[[str], str]) -> list[str]:
    """The inner loop over ``body`` as ``streams`` interleaved copies over as many parts of
    the range (``cpp_streams``), then the last ``size % streams`` elements as before."""
    part, n = f"{var}_part", cexpr(size)
    return ["{", f"  const int64_t {part} = {n} / {streams};", *([f"  {head}"] if head else []),
            f"  for (int64_t {var} = 0; {var} < {part}; {var}++) {{",
            *[f"    {line}" for line in interleaved(body, str(var), streams, part)], "  }",
            f"  {pragma('#pragma omp simd')}",
            f"  for (int64_t {var} = {streams} * {part}; {var} < {n}; {var}++) {{",
            *[f"    {line}" for line in body], "  }", "}"]


def stage_loops(loops: Sequence[tuple[Any, Any]], body: list[str], clauses: Sequence[str], simd: bool,
                parallel: bool | str, pragma: Callable[[str], str]) -> list[str]:
    """A reduction stage's loops over the reduced ``(variable, size)`` pairs, with the OpenMP
    reduction ``clauses``; ``simd`` where the body vectorizes, ``parallel`` across threads."""
    clause = " ".join(f"reduction({c})" for c in clauses)
    for k in reversed(range(len(loops))):
        var, size = loops[k]
        line = ""
        if k == len(loops) - 1 and simd:
            line = f"#pragma omp simd {clause}"
        if k == 0 and parallel and simd:
            line = f"#pragma omp parallel for {'simd ' if len(loops) == 1 else ''}{clause}{omp_if(parallel)}"
        body = for_loop(var, size, body, pragma(line))
    return body


def lanes_loop(body: list[str], var: Any, size: Any, sums: Sequence[tuple[str, str, str]]) -> list[str] | None:
    """A row of sums with ``LANES`` partial sums per accumulator, combined pairwise after
    the loop; None where the row is not a multiple of ``LANES`` long, or the loop is not
    only sums of cheap values.

    With one accumulator gcc keeps one vector of partial sums: each add waits for the one
    before (4 cycles), and the 16 lanes are then added one after the other. A 1024-float row
    of a layer norm's two sums took more cycles so than its loads (the kernel got faster with
    partial sums, on the suite's ``layernorm`` row, ``benchmarks/run.py``). Measured and left
    out, as both got slower: a loop that computes a transcendental function (there the
    function is the bound: softmax's exp-and-sum loop), and max / min, which gcc then kept on
    the stack between iterations (softmax's max loop)."""
    if not (size.is_Integer and int(size) >= 2 * LANES and int(size) % LANES == 0):
        return None
    if any(EXPENSIVE.search(line) for line in body):
        return None
    lane = f"{var}_l"
    names = re.compile(r"\b(" + "|".join(re.escape(a) for a, _, _ in sums) + r")\b")
    inner = [names.sub(lambda m: f"{m.group(1)}_l[{lane}]", line) for line in body]
    lines = [f"{t} {a}_l[{LANES}];" for a, t, _ in sums]
    lines += [f"for (int64_t {lane} = 0; {lane} < {LANES}; {lane}++) {{"]
    lines += [f"  {a}_l[{lane}] = {init};" for a, _, init in sums] + ["}"]
    lines += [f"for (int64_t {var}_b = 0; {var}_b < {int(size)}; {var}_b += {LANES}) {{",
              "  #pragma omp simd", f"  for (int64_t {lane} = 0; {lane} < {LANES}; {lane}++) {{",
              f"    const int64_t {var} = {var}_b + {lane};"]
    lines += [f"    {line}" for line in inner] + ["  }", "}"]
    half = LANES // 2
    while half:
        lines += ["#pragma omp simd", f"for (int64_t {lane} = 0; {lane} < {half}; {lane}++) {{"]
        lines += [f"  {a}_l[{lane}] += {a}_l[{lane} + {half}];" for a, _, _ in sums] + ["}"]
        half //= 2
    lines += [f"{a} += {a}_l[0];" for a, _, _ in sums]
    return lines


_ASSIGN = re.compile(r"^(?:auto |int64_t |const bool )?(\w+) = (.*);$")


def hoist_invariant(body: list[str], loop_vars: set[str]) -> tuple[list[str], list[str]]:
    """(lines of a pointwise loop body that depend on none of ``loop_vars``, the others), in
    order. Only assignments of a value move (no stores, no lambdas), so that an index loaded once
    per row (an embedding's id, checked against its bound) is computed ahead of the vector loop:
    gcc does not hoist it past a bounds check's reductions."""
    variant = set(loop_vars)
    hoisted: list[str] = []
    rest: list[str] = []
    for line in body:
        m = _ASSIGN.match(line)
        if m and "{" not in line and m.group(1) not in variant and not set(IDENT.findall(m.group(2))) & variant:
            hoisted.append(line)
            continue
        rest.append(line)
        if m:
            variant.add(m.group(1))
    return hoisted, rest
