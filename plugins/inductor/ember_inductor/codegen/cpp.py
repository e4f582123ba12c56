"""C++ kernel generation: one ``extern "C"`` function per fused group.

Outer loops run in parallel with OpenMP; the innermost loop carries ``#pragma omp simd`` (with
a reduction clause for reductions) so gcc vectorizes it; every form an op is emitted in must
keep it vectorizable (tests/inductor/test_cpp_vectorize.py reads gcc's report). Half and bfloat16
values are computed in float, converted by the prelude's integer and float operations. Values
are C++ ``auto`` temporaries, common subexpressions are shared within a scope.

A row kernel runs one inner loop per stage (softmax: max, then sum of exp, then exp / sum). A
transcendental value that a later stage would compute again (softmax's exp) is instead kept in a
per-row array on the stack by the first stage and read back by the later ones: a probe
generation finds such values, the real one reuses them (a double array where the kernel reads
float64 or the value is computed in double, read back as the type it was computed in). A later
stage that divides by an earlier stage's floating reduction (softmax's sum) multiplies by its
reciprocal, computed once per row (a denormal sum, whose reciprocal overflows, keeps the
division): a vector division costs many times a multiplication, and eager's softmax multiplies
too. A value rounded to half or bfloat16 and then stored in a tensor of that dtype is rounded
once (the store's conversion of the rounded value costs as much again, and gives the same bits).
A loop of plain sums over a static row (a layer norm's mean and variance) keeps ``LANES`` partial
sums, added pairwise after the loop, so that its adds do not wait on each other. A kernel that
computes a float sin or cos runs its loops twice where an argument is beyond the prelude's inline
range (``e_trig_far``): ``generate``.
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

import sympy
import torch

from .. import indexing
from ..bounds import IndexBound, error_code
from ..indexing import FloorDiv, ModularIndexing, TrueDiv
from ..scheduler import FusedGroup, KernelPlan
from ..symbolic import guard_at_most
from ..virtualized import set_handler
from .cpp_streams import EXPENSIVE, TEMP, interleaved, streams_for

PARALLEL_MIN = 1 << 15  # elements of work below which a kernel runs on one thread
REUSE_MAX_ROW = 1 << 14  # longest row (elements: 64 KiB of floats) kept on the stack for cross-stage reuse
PREFETCH_MAX_ROW = 1 << 14  # longest row (elements) a row kernel prefetches the next one of (_prefetch_next_row)
#: Longest expansion of a temporary kept to match values across a reduction's stages; past it the
#: value is keyed by its own expression (over temporaries, whose names are unique in a kernel).
#: Without the cap a chain that reads each value twice grows its text exponentially: a 4x4 max
#: pool's running maximum (compared, then selected, at each of 16 elements) ran out of memory.
MAX_EXPANSION = 4096
_LOOP_PRAGMA = re.compile(r"^\s*#pragma omp (parallel for|simd)\b")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")

CTYPE = {torch.float32: "float", torch.float64: "double", torch.float16: "uint16_t",
         torch.bfloat16: "uint16_t", torch.int64: "int64_t", torch.int32: "int32_t",
         torch.int16: "int16_t", torch.int8: "int8_t", torch.uint8: "uint8_t", torch.bool: "bool"}
COMPUTE = {torch.float16: "float", torch.bfloat16: "float"}


def ctype(dtype: torch.dtype) -> str:
    if dtype not in CTYPE:
        raise NotImplementedError(f"dtype {dtype} in C++ kernels")
    return CTYPE[dtype]


def compute_ctype(dtype: torch.dtype) -> str:
    return COMPUTE.get(dtype, ctype(dtype))


def cexpr(e: Any) -> str:
    """Print a sympy index expression as C++ (int64 arithmetic)."""
    e = sympy.sympify(e)
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    if isinstance(e, FloorDiv):
        return f"({cexpr(e.args[0])} / {cexpr(e.args[1])})"
    if isinstance(e, ModularIndexing):
        return f"(({cexpr(e.args[0])} / {cexpr(e.args[1])}) % {cexpr(e.args[2])})"
    if isinstance(e, TrueDiv):
        return f"(static_cast<double>({cexpr(e.args[0])}) / static_cast<double>({cexpr(e.args[1])}))"
    if e.is_Add:
        return "(" + " + ".join(cexpr(a) for a in e.args) + ")"
    if e.is_Mul:
        return "(" + " * ".join(cexpr(a) for a in e.args) + ")"
    if e.is_Pow and e.args[1].is_Integer and e.args[1] > 0:
        return "(" + " * ".join([cexpr(e.args[0])] * int(e.args[1])) + ")"
    if isinstance(e, (sympy.Max, sympy.Min)):
        fn = "std::max" if isinstance(e, sympy.Max) else "std::min"
        out = cexpr(e.args[0])
        for a in e.args[1:]:
            out = f"{fn}<int64_t>({out}, {cexpr(a)})"
        return out
    raise NotImplementedError(f"index expression {e}")


def at_least(e: Any, n: int) -> bool | str:
    """Is ``e >= n``: a bool for a static ``e``, else the C++ condition checked at run time."""
    e = sympy.sympify(e)
    if not e.free_symbols:
        return int(e) >= n
    return f"{cexpr(e)} >= {n}"


def _omp_if(cond: bool | str) -> str:
    return f" if({cond})" if isinstance(cond, str) else ""


def constant(value: Any, dtype: torch.dtype) -> str:
    t = compute_ctype(dtype)
    if dtype == torch.bool:
        return "true" if value else "false"
    if isinstance(value, float) or dtype.is_floating_point:
        v = float(value)
        if math.isnan(v):
            return f"std::numeric_limits<{t}>::quiet_NaN()"
        if math.isinf(v):
            return f"{'-' if v < 0 else ''}std::numeric_limits<{t}>::infinity()"
        return f"static_cast<{t}>({v!r})"
    return f"static_cast<{t}>({int(value)}LL)"


_UNARY = {
    "neg": "(-{0})", "abs": "e_abs({0})", "exp": "e_exp({0})", "exp2": "e_exp2({0})",
    "expm1": "e_expm1({0})", "log": "e_log({0})", "log2": "e_log2({0})",
    "log10": "e_log10({0})", "log1p": "e_log1p({0})", "sqrt": "std::sqrt({0})",
    "rsqrt": "(1 / std::sqrt({0}))", "sin": "e_sin({0})", "cos": "e_cos({0})",
    "tan": "e_tan({0})", "asin": "e_asin({0})", "acos": "e_acos({0})",
    "atan": "e_atan({0})", "sinh": "e_sinh({0})", "cosh": "e_cosh({0})",
    "tanh": "e_tanh({0})", "asinh": "e_asinh({0})", "acosh": "e_acosh({0})",
    "atanh": "e_atanh({0})", "erf": "e_erf({0})", "erfc": "e_erfc({0})",
    "sigmoid": "e_sigmoid({0})", "relu": "e_relu({0})", "floor": "e_floor({0})",
    "ceil": "e_ceil({0})", "trunc": "e_trunc({0})", "round": "e_round({0})", "sign": "e_sign({0})",
    "reciprocal": "(1 / {0})", "logical_not": "(!{0})", "bitwise_not": "(~{0})",
    "isnan": "({0} != {0})", "isinf": "e_isinf({0})", "square": "({0} * {0})",
}
_BINARY = {
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "truediv": "({0} / {1})",
    "floordiv": "e_floordiv({0}, {1})", "truncdiv": "({0} / {1})", "remainder": "e_remainder({0}, {1})",
    "fmod": "e_fmod({0}, {1})", "pow": "e_pow({0}, {1})", "maximum": "e_max({0}, {1})",
    "minimum": "e_min({0}, {1})", "atan2": "e_atan2({0}, {1})", "eq": "({0} == {1})",
    "ne": "({0} != {1})", "lt": "({0} < {1})", "le": "({0} <= {1})", "gt": "({0} > {1})",
    "ge": "({0} >= {1})", "logical_and": "({0} && {1})", "logical_or": "({0} || {1})",
    "logical_xor": "(bool({0}) != bool({1}))", "bitwise_and": "({0} & {1})",
    "bitwise_or": "({0} | {1})", "bitwise_xor": "({0} ^ {1})", "bitwise_left_shift": "({0} << {1})",
    "bitwise_right_shift": "({0} >> {1})", "copysign": "std::copysign({0}, {1})",
    "hypot": "e_hypot({0}, {1})",
}
_RED_INIT = {"sum": "0", "prod": "1"}
#: Partial sums a row of sums keeps per accumulator (``_lanes_loop``): four AVX-512 vectors of
#: floats, so four adds are in flight.
LANES = 64
_RED_CLAUSE = {"sum": "+", "prod": "*", "max": "max", "min": "min", "any": "|", "all": "&"}


class Scope:
    def __init__(self, parent: "Scope | None") -> None:
        self.parent = parent
        self.lines: list[str] = []
        self.cache: dict[str, str] = {}

    def lookup(self, key: str) -> str | None:
        s: Scope | None = self
        while s is not None:
            if key in s.cache:
                return s.cache[key]
            s = s.parent
        return None


class Reduced:
    """Result handle of ``ops.reduction``: the accumulator variable(s)."""

    def __init__(self, var: str, index_var: str | None) -> None:
        self.var = var
        self.index_var = index_var


class CppKernel:
    """Generates the C++ function of one fused group."""

    def __init__(self, name: str, group: FusedGroup, stored: set[str], buffers: dict[str, Any],
                 size_symbols: Any = ()) -> None:
        """``size_symbols``: names of the size symbols the wrapper can pass (as ``int64_t``)."""
        self.name = name
        self.size_symbols = set(size_symbols)
        self.size_params: list[str] = []  # those this kernel reads, in parameter order
        self.group = group
        self.plan: KernelPlan = group.plan
        self.stored = stored
        self.buffers = buffers
        self.written = set(group.written)  # its nodes, and the inputs it writes in place
        self.params: dict[str, str] = {}  # buffer name -> parameter name
        self.tmp = 0
        self.xv = indexing.make_vars("x", len(self.plan.outer))
        self.rv = indexing.make_vars("r", len(self.plan.r))
        self.ranges = dict(zip(self.xv, self.plan.outer)) | dict(zip(self.rv, self.plan.r))
        self.row_invariant = {str(v) for v in self.xv} | self.size_symbols  # names an index may read outside a row
        self.scope = Scope(None)
        self.locals: list[dict] = [{}]  # stack parallel to scopes: (name, index) -> value
        self.red_pre: list[str] = []
        self.red_post: list[str] = []
        self.red_clauses: list[str] = []
        self.red_sums: list[tuple[str, str, str]] = []  # this stage's sums: (name, C type, init)
        self.red_simd = True
        # cross-stage reuse (see the module docstring)
        self.expanded: dict[str, str] = {}  # temporary -> its expression over loads and accumulators
        self.stage = -1
        self.stage_scope: Scope | None = None
        self.seen: dict[str, set[int]] | None = None  # probe only: expensive expression -> inner stages
        self.reuse: dict[str, str] = {}  # expression -> row array holding it
        self.reuse_double: set[str] = set()  # the row arrays of doubles
        self.reuse_saved: set[str] = set()
        self.double_accs: set[str] = set()  # accumulators of any reduction kept in double
        self.float_accs: dict[str, str] = {}  # floating accumulators (sum, prod) -> their C++ type
        self.reciprocals: set[str] = set()  # their reciprocals, declared per row
        self.narrowed: dict[str, tuple[torch.dtype, str]] = {}  # a value rounded to half/bfloat16 -> (dtype, its float)
        self.bound_checks: list[tuple[str, str, str, int]] = []  # (largest, smallest bad value, size, code)
        self.trig = False  # computes a float sin or cos inline (the prelude's e_sin): runs twice where far
        self.row_loads: set[tuple[str, Any]] = set()  # (buffer, index) of the loads in a row's loops

    # -- helpers -----------------------------------------------------------------------------
    def new_var(self, prefix: str = "t") -> str:
        self.tmp += 1
        return f"{prefix}{self.tmp}"

    def cse(self, expr: str) -> str:
        hit = self.scope.lookup(expr)
        if hit is not None:
            return hit
        var = self.new_var()
        full = TEMP.sub(lambda m: self.expanded.get(m.group(0), m.group(0)), expr)
        if len(full) > MAX_EXPANSION:
            full = expr
        self.expanded[var] = full
        row = self.reuse.get(full) if self.scope is self.stage_scope else None
        if row is not None and full in self.reuse_saved:
            value = f"{row}[{self._row_index()}]"
            if row in self.reuse_double:  # maybe a float kept in a double: back to its own type
                value = f"static_cast<decltype({expr})>({value})"
            self.scope.lines.append(f"auto {var} = {value};")
        else:
            self.scope.lines.append(f"auto {var} = {expr};")
            if row is not None:
                self.scope.lines.append(f"{row}[{self._row_index()}] = {var};")
                self.reuse_saved.add(full)
            elif self.seen is not None and self.scope is self.stage_scope and EXPENSIVE.search(expr):
                self.seen.setdefault(full, set()).add(self.stage)
        self.scope.cache[expr] = var
        return var

    def _row_index(self) -> str:
        return cexpr(sum(v * indexing.numel(self.plan.r[k + 1:]) for k, v in enumerate(self.rv)))

    def _reuse_candidates(self) -> list[tuple[str, str]]:
        """(expression, C++ type of its row array) of the expensive expressions computed by more
        than one inner stage (found by a probe run)."""
        R = sympy.sympify(indexing.numel(self.plan.r))
        if R.is_Integer and R > REUSE_MAX_ROW:
            return []
        if not R.is_Integer and not guard_at_most(R, REUSE_MAX_ROW):  # a guarded choice
            return []
        probe = CppKernel(self.name, self.group, self.stored, self.buffers, self.size_symbols)
        probe.seen = {}
        probe.generate()
        wide = any(self.buffers[n].get_dtype() == torch.float64 for n in probe.params)
        return [(e, "double" if wide or "double" in e or set(_IDENT.findall(e)) & probe.double_accs else "float")
                for e, stages in probe.seen.items() if len(stages) > 1]

    def param(self, name: str) -> str:
        if name not in self.params:
            prefix = "out_ptr" if name in self.written else "in_ptr"
            self.params[name] = f"{prefix}{len(self.params)}"
        return self.params[name]

    def index(self, expr: Any) -> str:
        return cexpr(self._simplified(expr))

    def _simplified(self, expr: Any) -> Any:
        return indexing.simplify_index(expr, self.ranges, strict=True)

    def find_local(self, key: tuple) -> str | None:
        for d in reversed(self.locals):
            if key in d:
                return d[key]
        return None

    # -- the ops handler ---------------------------------------------------------------------
    def load(self, name: str, index: Any) -> str:
        expr = self._simplified(index)
        idx = cexpr(expr)
        if self.stage_scope is not None:
            self.row_loads.add((name, expr))
        local = self.find_local((name, idx))
        if local is not None:
            return local
        dtype = self.buffers[name].get_dtype()
        ref = f"{self.param(name)}[{idx}]"
        if dtype == torch.float16:
            ref = f"half_to_float({ref})"
        elif dtype == torch.bfloat16:
            ref = f"bf16_to_float({ref})"
        return self.cse(ref)

    def _store_expr(self, name: str, value: str) -> str:
        dtype = self.buffers[name].get_dtype()
        rounded = self.narrowed.get(value)
        if rounded is not None and rounded[0] == dtype:  # already rounded to this dtype: round once
            value = rounded[1]
        if dtype == torch.float16:
            return f"float_to_half({value})"
        if dtype == torch.bfloat16:
            return f"float_to_bf16({value})"
        return f"e_cast<{ctype(dtype)}>({value})"

    def store(self, name: str, index: Any, value: str) -> None:
        idx = self.index(index)
        self.locals[-1][(name, idx)] = value
        if name in self.stored:
            self.scope.lines.append(f"{self.param(name)}[{idx}] = {self._store_expr(name, value)};")

    def reduction(self, dtype: torch.dtype, src_dtype: torch.dtype, rtype: str, value: Any) -> Reduced:
        t = compute_ctype(src_dtype)
        acc = self.new_var("acc")
        if t == "double":
            self.double_accs.add(acc)
        if rtype in ("argmax", "argmin"):
            v, i = value
            idx = f"{acc}_i"
            init = f"std::numeric_limits<{t}>::" + ("lowest()" if rtype == "argmax" else "max()")
            if src_dtype.is_floating_point:
                init = ("-" if rtype == "argmax" else "") + f"std::numeric_limits<{t}>::infinity()"
            self.red_pre += [f"{t} {acc} = {init};", f"int64_t {idx} = -1;"]
            cmp = ">" if rtype == "argmax" else "<"
            nan_new = f"({v} != {v})" if src_dtype.is_floating_point else "false"
            nan_acc = f"({acc} != {acc})" if src_dtype.is_floating_point else "false"
            self.scope.lines.append(
                f"if ({idx} < 0 || (!{nan_acc} && ({nan_new} || {v} {cmp} {acc}))) {{ {acc} = {v}; {idx} = {i}; }}")
            self.red_simd = False
            return Reduced(acc, idx)
        if rtype in ("max", "min"):
            if src_dtype.is_floating_point:
                init = ("-" if rtype == "max" else "") + f"std::numeric_limits<{t}>::infinity()"
            else:
                init = f"std::numeric_limits<{t}>::" + ("lowest()" if rtype == "max" else "max()")
            cmp = ">" if rtype == "max" else "<"
            self.red_pre.append(f"{t} {acc} = {init};")
            self.scope.lines.append(f"{acc} = ({value} {cmp} {acc}) ? {value} : {acc};")
            self.red_clauses.append(f"{rtype}:{acc}")
            if src_dtype.is_floating_point:
                flag = f"{acc}_nan"
                self.red_pre.append(f"int {flag} = 0;")
                self.scope.lines.append(f"{flag} |= ({value} != {value});")
                self.red_clauses.append(f"|:{flag}")
                self.red_post.append(f"if ({flag}) {acc} = std::numeric_limits<{t}>::quiet_NaN();")
            return Reduced(acc, None)
        if rtype in ("any", "all"):  # an int with | or &: gcc vectorizes no bool reduction (|| and &&)
            self.red_pre.append(f"int {acc} = {int(rtype == 'all')};")
            self.scope.lines.append(f"{acc} {_RED_CLAUSE[rtype]}= static_cast<int>(static_cast<bool>({value}));")
            self.red_clauses.append(f"{_RED_CLAUSE[rtype]}:{acc}")
            return Reduced(acc, None)
        init = _RED_INIT[rtype]
        if t in ("float", "double"):
            self.float_accs[acc] = t
        self.red_pre.append(f"{t} {acc} = {init};")
        op = {"sum": f"{acc} += {value};", "prod": f"{acc} *= {value};"}[rtype]
        self.scope.lines.append(op)
        self.red_clauses.append(f"{_RED_CLAUSE[rtype]}:{acc}")
        if rtype == "sum":
            self.red_sums.append((acc, t, init))
        return Reduced(acc, None)

    def store_reduction(self, name: str, index: Any, value: Reduced) -> None:
        idx = self.index(index)
        result = value.index_var if value.index_var is not None else value.var
        self.locals[0][(name, idx)] = result
        if name in self.stored:
            self.red_post.append(f"{self.param(name)}[{idx}] = {self._store_expr(name, result)};")

    def constant(self, value: Any, dtype: torch.dtype) -> str:
        return constant(value, dtype)

    def index_expr(self, expr: Any, dtype: torch.dtype) -> str:
        simplified = indexing.simplify_index(expr, self.ranges, strict=True)
        text = f"static_cast<{compute_ctype(dtype)}>({cexpr(simplified)})"
        if self.scope is not self.stage_scope or \
                not {str(v) for v in sympy.sympify(simplified).free_symbols} <= self.row_invariant:
            return self.cse(text)
        # the same for the whole row: computed once before the row's loops (gcc moves no division
        # out of a loop, as it might trap, and x86 divides no vector of int64: the `x0 % s0` of a
        # causal softmax over a symbolic length ran per element, many times slower)
        inner, self.scope = self.scope, self.scope.parent
        try:
            return self.cse(text)
        finally:
            self.scope = inner

    def to_dtype(self, x: str, dtype: torch.dtype) -> str:
        if dtype in (torch.float16, torch.bfloat16):
            conv = "half" if dtype == torch.float16 else "bf16"
            var = self.cse(f"{conv}_to_float(float_to_{conv}({x}))")
            self.narrowed[var] = (dtype, x)
            return var
        return self.cse(f"e_cast<{ctype(dtype)}>({x})")

    def where(self, cond: str, a: str, b: str) -> str:
        return self.cse(f"e_where({cond}, {a}, {b})")

    def masked(self, mask: str, body: Any, other: Any) -> str:
        outer = self.scope
        self.scope = Scope(outer)
        self.locals.append({})
        try:
            value = body()
            lines = self.scope.lines
        finally:
            self.scope = outer
            self.locals.pop()
        fn = self.new_var("fn")
        inner = " ".join(lines)
        self.scope.lines.append(f"auto {fn} = [&]() {{ {inner} return {value}; }};")
        other_c = "true" if other is True else ("false" if other is False else (
            f"std::numeric_limits<decltype({fn}())>::infinity()" if other == float("inf") else
            f"-std::numeric_limits<decltype({fn}())>::infinity()" if other == float("-inf") else repr(other)))
        return self.cse(f"({mask} ? {fn}() : static_cast<decltype({fn}())>({other_c}))")

    def truediv(self, a: str, b: str) -> str:
        if b in self.float_accs and self.scope is self.stage_scope:  # a stage's scope has a parent
            inv = f"{b}_inv"
            if inv not in self.reciprocals:  # once per row, ahead of this stage's loop
                # 1 / b overflows for a denormal b, where a / b may not: then divide (gcc
                # unswitches the loop on this invariant flag)
                t = self.float_accs[b]
                self.scope.parent.lines += [f"{t} {inv} = {t}(1) / {b};",
                                            f"const bool {inv}_ok = !std::isinf({inv}) || {b} == 0;"]
                self.reciprocals.add(inv)
            return self.cse(f"({inv}_ok ? {a} * {inv} : {a} / {b})")
        return self.cse(_BINARY["truediv"].format(a, b))

    def sin(self, a: str) -> str:
        return self._trig("sin", a)

    def cos(self, a: str) -> str:
        return self._trig("cos", a)

    def _trig(self, name: str, a: str) -> str:
        """``e_sin``/``e_cos`` of the kernel's ``EM_FAST`` pass, with ``a`` folded into the
        kernel's ``em_far`` (see ``generate``)."""
        self.trig = True
        far = f"e_trig_far({a})"
        if self.scope.lookup(far) is None:
            self.scope.lines.append(f"em_far |= {far};")
            self.scope.cache[far] = "em_far"
        return self.cse(f"e_{name}<EM_FAST>({a})")

    def indirect_indexing(self, value: str, bound: IndexBound) -> sympy.Symbol:
        """A checked index: out of range, it is replaced by 0 and folded into the kernel's
        largest and smallest offending values (OpenMP reductions, so the loop still vectorizes),
        which the kernel reports after its loops (see ``bounds``)."""
        var = self.new_var("ind")
        size = cexpr(bound.size)
        self.scope.lines.append(f"int64_t {var} = static_cast<int64_t>({value});")
        if not bound.check:
            return sympy.Symbol(var, integer=True)
        raw = var
        if bound.wrap_negative:
            raw, var = var, self.new_var("ind")
            self.scope.lines.append(f"int64_t {var} = {raw} < 0 ? {raw} + {size} : {raw};")
        hi, lo = f"bad_hi{len(self.bound_checks)}", f"bad_lo{len(self.bound_checks)}"
        self.bound_checks.append((hi, lo, size, error_code(bound)))
        ok = self.new_var("ok")
        self.scope.lines += [
            f"const bool {ok} = 0 <= {var} && {var} < {size};",
            f"{hi} = {ok} || {raw} <= {hi} ? {hi} : {raw};",
            f"{lo} = {ok} || {raw} >= {lo} ? {lo} : {raw};",
            f"{var} = {ok} ? {var} : 0;"]
        return sympy.Symbol(var, integer=True)

    def _pragma(self, pragma: str) -> str:
        """``pragma`` with the reductions of the bounds checks (harmless where unused)."""
        if not pragma:
            return pragma
        return pragma + "".join(f" reduction(max:{hi}) reduction(min:{lo})" for hi, lo, _, _ in self.bound_checks)

    def _bound_reports(self) -> tuple[list[str], list[str]]:
        """Declarations ahead of the loops, reports after them, of the bounds checks."""
        decl = [f"int64_t {hi} = INT64_MIN, {lo} = INT64_MAX;" for hi, lo, _, _ in self.bound_checks]
        report = [f"if ({hi} != INT64_MIN || {lo} != INT64_MAX) ember_bad_index({hi} >= 0 ? {hi} : {lo}, "
                  f"{size}, {code});" for hi, lo, size, code in self.bound_checks]
        return decl, report

    def __getattr__(self, name: str) -> Any:
        if name in _UNARY:
            return lambda a: self.cse(_UNARY[name].format(a))
        if name in _BINARY:
            return lambda a, b: self.cse(_BINARY[name].format(a, b))
        raise AttributeError(name)

    # -- loops -------------------------------------------------------------------------------
    def _run_nodes(self, placements: Sequence) -> None:
        for p in placements:
            idx, ridx = p.index_map(self.xv, self.rv)
            p.node.body(idx, ridx)

    def _inner_stage(self, placements: Sequence, parallel_r: bool | str) -> list[str]:
        outer = self.scope
        self.scope = self.stage_scope = Scope(outer)
        self.stage += 1
        self.locals.append({})
        self.red_pre, self.red_post, self.red_clauses, self.red_simd = [], [], [], True
        self.red_sums = []
        self._run_nodes(placements)
        body = self.scope.lines
        self.scope = outer
        self.stage_scope = None
        self.locals.pop()
        loops = list(zip(self.rv, self.plan.r))
        only_sums = len(self.red_sums) == len(self.red_clauses) > 0
        if len(loops) == 1 and self.red_simd and not parallel_r and only_sums and not self.bound_checks:
            lanes = self._lanes_loop(body, *loops[0])
            if lanes is not None:
                return self.red_pre + ["{"] + lanes + ["}"] + self.red_post
        clauses = " ".join(f"reduction({c})" for c in self.red_clauses)
        for k in reversed(range(len(loops))):
            var, size = loops[k]
            pragma = ""
            if k == len(loops) - 1 and self.red_simd:
                pragma = f"#pragma omp simd {clauses}"
            if k == 0 and parallel_r and self.red_simd:
                pragma = f"#pragma omp parallel for {'simd ' if len(loops) == 1 else ''}{clauses}{_omp_if(parallel_r)}"
            pragma = self._pragma(pragma)
            body = ([pragma] if pragma else []) + [f"for (int64_t {var} = 0; {var} < {cexpr(size)}; {var}++) {{"] + \
                [f"  {line}" for line in body] + ["}"]
        return self.red_pre + ["{"] + body + ["}"] + self.red_post

    def _lanes_loop(self, body: list[str], var: Any, size: Any) -> list[str] | None:
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
        names = re.compile(r"\b(" + "|".join(re.escape(a) for a, _, _ in self.red_sums) + r")\b")
        inner = [names.sub(lambda m: f"{m.group(1)}_l[{lane}]", line) for line in body]
        lines = [f"{t} {a}_l[{LANES}];" for a, t, _ in self.red_sums]
        lines += [f"for (int64_t {lane} = 0; {lane} < {LANES}; {lane}++) {{"]
        lines += [f"  {a}_l[{lane}] = {init};" for a, _, init in self.red_sums] + ["}"]
        lines += [f"for (int64_t {var}_b = 0; {var}_b < {int(size)}; {var}_b += {LANES}) {{",
                  "  #pragma omp simd", f"  for (int64_t {lane} = 0; {lane} < {LANES}; {lane}++) {{",
                  f"    const int64_t {var} = {var}_b + {lane};"]
        lines += [f"    {line}" for line in inner] + ["  }", "}"]
        half = LANES // 2
        while half:
            lines += ["#pragma omp simd", f"for (int64_t {lane} = 0; {lane} < {half}; {lane}++) {{"]
            lines += [f"  {a}_l[{lane}] += {a}_l[{lane} + {half}];" for a, _, _ in self.red_sums] + ["}"]
            half //= 2
        lines += [f"{a} += {a}_l[0];" for a, _, _ in self.red_sums]
        return lines

    def generate(self) -> str:
        plan = self.plan
        O, R = indexing.numel(plan.outer), indexing.numel(plan.r)
        has_red = any(n.is_reduction for n in self.group.nodes)
        stages = len([s for s in plan.stages if s[0] == "inner"])
        if has_red and stages > 1 and self.seen is None:  # not the probe itself
            candidates = self._reuse_candidates()
            self.reuse = {e: f"row{k}" for k, (e, _) in enumerate(candidates)}
            self.reuse_double = {f"row{k}" for k, (_, t) in enumerate(candidates) if t == "double"}
            length = int(R) if R.is_Integer else REUSE_MAX_ROW  # a symbolic row: at most that, guarded
            self.scope.lines += [f"alignas(64) {t} row{k}[{length}];" for k, (_, t) in enumerate(candidates)]
        with set_handler(self):
            if not has_red:
                self._run_nodes(plan.stages[0][1])
                body = self.scope.lines
                parallel = at_least(O, PARALLEL_MIN)
                loops = self._outer_loops(body, parallel, simd_inner=True)
            else:
                simple = all(t in _RED_CLAUSE for n in self.group.nodes for t in n.reduction_types)
                parallel_r = O == 1 and simple and stages == 1 and at_least(R, PARALLEL_MIN)
                for level, placements in plan.stages:
                    if level == "outer":
                        self._run_nodes(placements)
                    else:
                        self.scope.lines += self._inner_stage(placements, parallel_r)
                if not parallel_r and O != 1:
                    self.scope.lines[:0] = self._prefetch_next_row()
                work = O * (R if R.free_symbols else max(R, 1))
                parallel = (bool(O.free_symbols) or O >= 2) and not parallel_r and at_least(work, PARALLEL_MIN)
                loops = self._outer_loops(self.scope.lines, parallel, simd_inner=False)
        decl, report = self._bound_reports()
        used = set(_IDENT.findall("\n".join(decl + loops + report)))
        self.size_params = sorted(self.size_symbols & used)
        args = ", ".join([self._param_decl(name) for name in self.params] +
                         [f"int64_t {name}" for name in self.size_params])
        result = "int64_t" if self.bound_checks else "void"
        tail = ["  return ember_index_failed();"] if self.bound_checks else []
        if not self.trig:
            return "\n".join([f'extern "C" {result} {self.name}({args}) {{'] + [f"  {l}" for l in decl + loops + report] +
                             tail + ["}"])
        # sin and cos computed inline (the prelude's e_sin): a first pass with EM_FAST, whose loops
        # fold whether any argument was far into em_far, then, only where one was, a second pass
        # that computes the far ones with libm. The kernel reads no buffer it writes (the wrapper
        # reuses a buffer only after its last reader), so the second pass computes the same; one
        # that writes an input in place (which it also reads) runs the second pass only.
        loops = [line + " reduction(|:em_far)" if _LOOP_PRAGMA.match(line) else line for line in loops]
        call = ", ".join(list(self.params.values()) + self.size_params)
        body = f"template <bool EM_FAST> static int {self.name}_pass({args})"
        run = f"{self.name}_pass<false>({call});"
        run = run if self.group.in_place else f"if ({self.name}_pass<true>({call})) {run}"
        return "\n".join([f"{body};", f'extern "C" {result} {self.name}({args}) {{', f"  {run}", *tail, "}",
                          f"{body} {{", "  int em_far = 0;"] + [f"  {l}" for l in decl + loops + report] +
                         ["  return em_far;", "}"])

    def _prefetch_next_row(self) -> list[str]:
        """Prefetches, one per 64-byte line, of the next row of each buffer a row kernel reads
        row by row (its index is ``r + g(x)``, ``x`` the last outer variable).

        A row's loops read it from memory once, then from L1; while a thread computes, no load
        of its asks for the next row, so the hardware prefetcher waits with it. Prefetched at
        the start of each row, the next row arrives while this one is computed: 1024x1024 float
        rows on 2 threads of this Xeon, a C loop over 8 inputs in turn (so that each comes from
        memory): softmax and layer norm got faster; with the input already in the cache (one
        tensor timed over and over) they are level. A prefetch past the last row
        is harmless (it never faults); rows longer than ``PREFETCH_MAX_ROW`` are not."""
        if not self.xv or len(self.rv) != 1:
            return []
        x, r = self.xv[-1], self.rv[0]
        line = sympy.Symbol("pf", integer=True)
        size = sympy.Min(indexing.numel(self.plan.r), PREFETCH_MAX_ROW)
        known = {str(v) for v in self.xv} | self.size_symbols  # not an index loaded in the row
        lines: dict[str, str] = {}  # buffer -> its prefetch loop (one, however many loads of it)
        for name, expr in sorted(self.row_loads, key=lambda load: (load[0], str(load[1]))):
            rest = sympy.expand(expr - r)
            # contiguous along the row, another row for another x, and computable before the row
            if name in lines or rest.has(r) or not rest.has(x) or not {str(s) for s in rest.free_symbols} <= known:
                continue
            step = 64 // self.buffers[name].get_dtype().itemsize
            nxt = cexpr(expr.subs({r: line, x: x + 1}))
            lines[name] = (f"for (int64_t {line} = 0; {line} < {cexpr(size)}; {line} += {step}) "
                           f"__builtin_prefetch({self.param(name)} + {nxt});")
        return list(lines.values())

    def _param_decl(self, name: str) -> str:
        t = ctype(self.buffers[name].get_dtype())
        const = "" if name in self.written else "const "
        return f"{const}{t}* __restrict__ {self.params[name]}"

    def _outer_loops(self, body: list[str], parallel: bool | str, simd_inner: bool) -> list[str]:
        loops = list(zip(self.xv, self.plan.outer))
        n = len(loops)
        invariant: list[str] = []
        outside: list[str] = []
        if simd_inner and n and all(sympy.sympify(size).is_number for size in self.plan.outer):
            # computed once for the whole kernel (an optimizer step's bias correction, a pow of
            # the step count): per element, AdamW's update ran 2-3x eager's time. A loop that
            # may run no time (a symbolic size) computes nothing ahead of it.
            outside, body = hoist_invariant(body, {v.name for v in self.xv})
        if simd_inner and n >= 2:
            invariant, body = hoist_invariant(body, {self.xv[-1].name})
        for k in reversed(range(n)):
            var, size = loops[k]
            pragma = ""
            if k == 0 and parallel:
                if n == 1:
                    pragma = "#pragma omp parallel for" + (" simd" if simd_inner else "")
                else:
                    collapse = n - 1 if simd_inner else n
                    pragma = "#pragma omp parallel for" + (f" collapse({collapse})" if collapse > 1 else "")
                pragma += _omp_if(parallel)
            elif k == n - 1 and simd_inner:
                pragma = "#pragma omp simd"
            pragma = self._pragma(pragma)
            streams = streams_for(body) if k == n - 1 and simd_inner else 1
            if streams > 1:
                body = self._streams_loops(body, var, size, streams, pragma)
            else:
                body = ([pragma] if pragma else []) + \
                    [f"for (int64_t {var} = 0; {var} < {cexpr(size)}; {var}++) {{"] + \
                    [f"  {line}" for line in body] + ["}"]
            if k == n - 1:
                body = invariant + body
        return outside + body

    def _streams_loops(self, body: list[str], var: Any, size: Any, streams: int, pragma: str) -> list[str]:
        """The inner loop over ``body`` as ``streams`` interleaved copies over as many parts of
        the range (``cpp_streams``), then the last ``size % streams`` elements as before."""
        part, n = f"{var}_part", cexpr(size)
        return ["{", f"  const int64_t {part} = {n} / {streams};", *([f"  {pragma}"] if pragma else []),
                f"  for (int64_t {var} = 0; {var} < {part}; {var}++) {{",
                *[f"    {line}" for line in interleaved(body, str(var), streams, part)], "  }",
                f"  {self._pragma('#pragma omp simd')}",
                f"  for (int64_t {var} = {streams} * {part}; {var} < {n}; {var}++) {{",
                *[f"    {line}" for line in body], "  }", "}"]


_ASSIGN = re.compile(r"^(?:auto |int64_t |const bool )?(\w+) = (.*);$")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


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
        if m and "{" not in line and m.group(1) not in variant and not set(_NAME.findall(m.group(2))) & variant:
            hoisted.append(line)
            continue
        rest.append(line)
        if m:
            variant.add(m.group(1))
    return hoisted, rest
