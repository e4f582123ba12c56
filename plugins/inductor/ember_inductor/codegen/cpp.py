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
range (``e_trig_far``): ``generate``. ``cpp_loops`` writes the loops, ``cpp_ops``' table the
values; ``kernel.Kernel`` holds the language-free half.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import sympy
import torch

from .. import indexing
from ..bounds import IndexBound, error_code
from ..scheduler import FusedGroup
from ..symbolic import guard_at_most
from ..virtualized import set_handler
from .cpp_loops import at_least, lanes_loop, outer_loops, stage_loops
from .cpp_ops import CODE_FOR_OP, cexpr, compute_ctype, constant, ctype
from .cpp_streams import EXPENSIVE, TEMP
from .kernel import IDENT, Kernel, Reduced

PARALLEL_MIN = 1 << 15  # elements of work below which a kernel runs on one thread
REUSE_MAX_ROW = 1 << 14  # longest row (elements: 64 KiB of floats) kept on the stack for cross-stage reuse
PREFETCH_MAX_ROW = 1 << 14  # longest row (elements) a row kernel prefetches the next one of (_prefetch_next_row)
#: Longest expansion of a temporary kept to match values across a reduction's stages; past it the
#: value is keyed by its own expression (over temporaries, whose names are unique in a kernel).
#: Without the cap a chain that reads each value twice grows its text exponentially: a 4x4 max
#: pool's running maximum (compared, then selected, at each of 16 elements) ran out of memory.
MAX_EXPANSION = 4096
_LOOP_PRAGMA = re.compile(r"^\s*#pragma omp (parallel for|simd)\b")

_RED_INIT = {"sum": "0", "prod": "1"}
_RED_CLAUSE = {"sum": "+", "prod": "*", "max": "max", "min": "min", "any": "|", "all": "&"}


class CppKernel(Kernel):
    """Generates the C++ function of one fused group (size symbols are ``int64_t`` parameters)."""

    printer = cexpr
    code_for_op = CODE_FOR_OP
    tmp_prefix = "t"
    index_line = "int64_t {0} = static_cast<int64_t>({1});"

    def __init__(self, name: str, group: FusedGroup, stored: set[str], buffers: dict[str, Any],
                 size_symbols: Any = ()) -> None:
        super().__init__(name, group, stored, buffers, size_symbols)
        self.row_invariant = {str(v) for v in self.xv} | self.size_symbols  # names an index may read outside a row
        self.red_clauses: list[str] = []
        self.red_sums: list[tuple[str, str, str]] = []  # this stage's sums: (name, C type, init)
        self.red_simd = True
        # cross-stage reuse (see the module docstring)
        self.expanded: dict[str, str] = {}  # temporary -> its expression over loads and accumulators
        self.stage = -1
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
    def assign(self, var: str, expr: str) -> None:
        """``auto var = expr;``, or the value from (and into) its row array of a cross-stage reuse."""
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
        return [(e, "double" if wide or "double" in e or set(IDENT.findall(e)) & probe.double_accs else "float")
                for e, stages in probe.seen.items() if len(stages) > 1]

    # -- the ops handler ---------------------------------------------------------------------
    def load(self, name: str, index: Any) -> str:
        if self.stage_scope is not None:
            self.row_loads.add((name, self.index(index)))
        return super().load(name, index)

    def load_value(self, name: str, index: sympy.Expr) -> str:
        dtype = self.buffers[name].get_dtype()
        ref = f"{self.param(name)}[{cexpr(index)}]"
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

    def store_value(self, name: str, index: sympy.Expr, value: str) -> None:
        self.scope.lines.append(f"{self.param(name)}[{cexpr(index)}] = {self._store_expr(name, value)};")

    def reduction(self, dtype: torch.dtype, src_dtype: torch.dtype, rtype: str, value: Any) -> Reduced:
        t = compute_ctype(src_dtype)
        acc = self.new_var("acc")
        if t == "double":
            self.double_accs.add(acc)
        up = rtype in ("max", "argmax")
        if src_dtype.is_floating_point:
            init = ("-" if up else "") + f"std::numeric_limits<{t}>::infinity()"
        else:
            init = f"std::numeric_limits<{t}>::" + ("lowest()" if up else "max()")
        cmp = ">" if up else "<"
        if rtype in ("argmax", "argmin"):
            v, i = value
            idx = f"{acc}_i"
            self.red_pre += [f"{t} {acc} = {init};", f"int64_t {idx} = -1;"]
            nan_new = f"({v} != {v})" if src_dtype.is_floating_point else "false"
            nan_acc = f"({acc} != {acc})" if src_dtype.is_floating_point else "false"
            self.scope.lines.append(
                f"if ({idx} < 0 || (!{nan_acc} && ({nan_new} || {v} {cmp} {acc}))) {{ {acc} = {v}; {idx} = {i}; }}")
            self.red_simd = False
            return Reduced(idx)  # the index is the result
        if rtype in ("max", "min"):
            self.red_pre.append(f"{t} {acc} = {init};")
            self.scope.lines.append(f"{acc} = ({value} {cmp} {acc}) ? {value} : {acc};")
            self.red_clauses.append(f"{rtype}:{acc}")
            if src_dtype.is_floating_point:
                flag = f"{acc}_nan"
                self.red_pre.append(f"int {flag} = 0;")
                self.scope.lines.append(f"{flag} |= ({value} != {value});")
                self.red_clauses.append(f"|:{flag}")
                self.red_post.append(f"if ({flag}) {acc} = std::numeric_limits<{t}>::quiet_NaN();")
            return Reduced(acc)
        if rtype in ("any", "all"):  # an int with | or &: gcc vectorizes no bool reduction (|| and &&)
            self.red_pre.append(f"int {acc} = {int(rtype == 'all')};")
            self.scope.lines.append(f"{acc} {_RED_CLAUSE[rtype]}= static_cast<int>(static_cast<bool>({value}));")
            self.red_clauses.append(f"{_RED_CLAUSE[rtype]}:{acc}")
            return Reduced(acc)
        init = _RED_INIT[rtype]
        if t in ("float", "double"):
            self.float_accs[acc] = t
        self.red_pre.append(f"{t} {acc} = {init};")
        op = {"sum": f"{acc} += {value};", "prod": f"{acc} *= {value};"}[rtype]
        self.scope.lines.append(op)
        self.red_clauses.append(f"{_RED_CLAUSE[rtype]}:{acc}")
        if rtype == "sum":
            self.red_sums.append((acc, t, init))
        return Reduced(acc)

    def store_reduced(self, name: str, index: sympy.Expr, value: str) -> None:
        self.red_post.append(f"{self.param(name)}[{cexpr(index)}] = {self._store_expr(name, value)};")

    constant = staticmethod(constant)  # a literal, no temporary

    def index_expr(self, expr: Any, dtype: torch.dtype) -> str:
        simplified = self.index(expr)
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

    def masked_value(self, mask: str, value: str, lines: list[str], other: Any) -> str:
        """The masked body as a lambda, called where ``mask`` holds."""
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
        return self.op("truediv", CODE_FOR_OP["truediv"], (a, b))

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

    def check_index(self, var: str, size: str, bound: IndexBound) -> str:
        """Out of range, the index is replaced by 0 and folded into the kernel's largest and
        smallest offending values (OpenMP reductions, so the loop still vectorizes), which the
        kernel reports after its loops (see ``bounds``)."""
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
        return var

    def pragma(self, pragma: str) -> str:
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

    # -- loops -------------------------------------------------------------------------------
    def _inner_stage(self, placements: Sequence, parallel_r: bool | str) -> list[str]:
        self.stage += 1
        self.red_clauses, self.red_simd, self.red_sums = [], True, []
        body = self.run_stage(placements)
        loops = list(zip(self.rv, self.plan.r))
        only_sums = len(self.red_sums) == len(self.red_clauses) > 0
        if len(loops) == 1 and self.red_simd and not parallel_r and only_sums and not self.bound_checks:
            lanes = lanes_loop(body, *loops[0], self.red_sums)
            if lanes is not None:
                return self.red_pre + ["{"] + lanes + ["}"] + self.red_post
        body = stage_loops(loops, body, self.red_clauses, self.red_simd, parallel_r, self.pragma)
        return self.red_pre + ["{"] + body + ["}"] + self.red_post

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
                self.run_nodes(plan.stages[0][1])
                body = self.scope.lines
                parallel = at_least(O, PARALLEL_MIN)
                loops = outer_loops(list(zip(self.xv, self.plan.outer)), body, parallel, True, self.pragma)
            else:
                simple = all(t in _RED_CLAUSE for n in self.group.nodes for t in n.reduction_types)
                parallel_r = O == 1 and simple and stages == 1 and at_least(R, PARALLEL_MIN)
                for level, placements in plan.stages:
                    if level == "outer":
                        self.run_nodes(placements)
                    else:
                        self.scope.lines += self._inner_stage(placements, parallel_r)
                if not parallel_r and O != 1:
                    self.scope.lines[:0] = self._prefetch_next_row()
                work = O * (R if R.free_symbols else max(R, 1))
                parallel = (bool(O.free_symbols) or O >= 2) and not parallel_r and at_least(work, PARALLEL_MIN)
                loops = outer_loops(list(zip(self.xv, self.plan.outer)), self.scope.lines, parallel, False,
                                    self.pragma)
        decl, report = self._bound_reports()
        self.size_params = self.used_sizes(decl + loops + report)
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
        # reuses a buffer only after its last reader), so the second pass computes the same.
        loops = [line + " reduction(|:em_far)" if _LOOP_PRAGMA.match(line) else line for line in loops]
        call = ", ".join(list(self.params.values()) + self.size_params)
        body = f"template <bool EM_FAST> static int {self.name}_pass({args})"
        return "\n".join([f"{body};", f'extern "C" {result} {self.name}({args}) {{',
                          f"  if ({self.name}_pass<true>({call})) {self.name}_pass<false>({call});", *tail, "}",
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
