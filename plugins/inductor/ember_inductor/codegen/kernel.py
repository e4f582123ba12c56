"""The language-free half of a kernel generator, the base of the C++ (``cpp.py``) and Triton
(``triton.py``) kernels: the ops handler of one fused group, installed with ``set_handler``.

It holds what does not depend on the language: parameters (a buffer's pointer), temporaries and
common subexpressions (per scope: a reduction stage's loop, a masked body), values a kernel stored
and reads again (locals), reductions' set-up and finishing lines, indirect indices and their
bounds, and the dispatch of elementwise ops to the language's ``code_for_op`` table: op name ->
``form(*operands, dtype)``, the source of the value (``dtype``: the first operand's; an op missing
from the table is a method of the language's kernel). A language writes the lines: ``assign``,
``load_value``, ``store_value``, ``store_reduced``, ``masked_value``, ``check_index``.
"""
from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, ClassVar, Iterator, Sequence

import sympy
import torch

from .. import indexing
from ..bounds import IndexBound
from ..expr_printer import ExprPrinter
from ..scheduler import FusedGroup, KernelPlan

#: Ops whose value is a bool whatever their operands.
BOOL_OPS = frozenset("eq ne lt le gt ge isnan isinf logical_not logical_and logical_or logical_xor".split())
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def templates(forms: dict[str, str]) -> dict[str, Callable[..., str]]:
    """``code_for_op`` rows from ``str.format`` templates over the operands (the dtype unused)."""
    return {name: form.format for name, form in forms.items()}


class Scope:
    """Lines being written and the common subexpressions they computed, inside ``parent``'s."""

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
    """Result handle of ``ops.reduction``: the variable holding the reduced value."""

    def __init__(self, var: str) -> None:
        self.var = var


class Kernel:
    """The code of one fused group, written through the ``ops`` calls of its nodes' bodies."""

    printer: ClassVar[ExprPrinter]
    code_for_op: ClassVar[dict[str, Callable[..., str]]]
    tmp_prefix: ClassVar[str]
    index_line: ClassVar[str]  # the statement converting a value to an index: .format(var, value)

    def __init__(self, name: str, group: FusedGroup, stored: set[str], buffers: dict[str, Any],
                 size_symbols: Any = ()) -> None:
        """``size_symbols``: names of the size symbols the wrapper can pass."""
        self.name = name
        self.size_symbols = set(size_symbols)
        self.size_params: list[str] = []  # those this kernel reads, in parameter order
        self.group = group
        self.plan: KernelPlan = group.plan
        self.stored = stored
        self.buffers = buffers
        self.written = {n.name for n in group.nodes}
        self.params: dict[str, str] = {}  # buffer name -> parameter name
        self.tmp = 0
        self.xv = indexing.make_vars("x", len(self.plan.outer))
        self.rv = indexing.make_vars("r", len(self.plan.r))
        self.subs: dict = {}  # range variables -> the language's index variables
        self.ranges: dict = dict(zip(self.xv, self.plan.outer)) | dict(zip(self.rv, self.plan.r))
        self.scope = Scope(None)
        self.stage_scope: Scope | None = None  # the scope of the running reduction stage's loop
        self.locals: list[dict] = [{}]  # stack parallel to scopes: (name, index) -> value
        self.masks: list[str] = []  # of the masked bodies being written
        self.dtypes: dict[str, torch.dtype] = {}  # temporary -> its dtype
        self.indirect: set[str] = set()  # variables of indirect indices
        self.red_pre: list[str] = []  # a reduction stage's lines ahead of its loop
        self.red_post: list[str] = []  # and after it

    # -- bookkeeping -------------------------------------------------------------------------
    def new_var(self, prefix: str | None = None) -> str:
        self.tmp += 1
        return f"{prefix or self.tmp_prefix}{self.tmp}"

    def cse(self, expr: str, dtype: torch.dtype | None = None) -> str:
        """The variable holding ``expr``, computed here unless a scope in reach did."""
        hit = self.scope.lookup(expr)
        if hit is not None:
            return hit
        var = self.new_var()
        self.assign(var, expr)
        self.scope.cache[expr] = var
        if dtype is not None:
            self.dtypes[var] = dtype
        return var

    def dtype_of(self, value: str) -> torch.dtype:
        return self.dtypes.get(value, torch.float32)

    def param(self, name: str) -> str:
        if name not in self.params:
            prefix = "out_ptr" if name in self.written else "in_ptr"
            self.params[name] = f"{prefix}{len(self.params)}"
        return self.params[name]

    def index(self, expr: Any) -> sympy.Expr:
        """An index of the IR as one of the kernel's index variables, simplified."""
        return indexing.simplify_index(sympy.sympify(expr).xreplace(self.subs), self.ranges, strict=True)

    def find_local(self, key: tuple) -> str | None:
        for d in reversed(self.locals):
            if key in d:
                return d[key]
        return None

    def used_sizes(self, lines: Sequence[str]) -> list[str]:
        """The size symbols ``lines`` read, in parameter order."""
        return sorted(self.size_symbols & set(IDENT.findall("\n".join(lines))))

    @contextlib.contextmanager
    def nested(self) -> Iterator[Scope]:
        """A scope (and locals) inside the current one for the duration."""
        outer = self.scope
        self.scope = inner = Scope(outer)
        self.locals.append({})
        try:
            yield inner
        finally:
            self.scope = outer
            self.locals.pop()

    def run_nodes(self, placements: Sequence) -> None:
        for p in placements:
            idx, ridx = p.index_map(self.xv, self.rv)
            p.node.body(idx, ridx)

    def run_stage(self, placements: Sequence) -> list[str]:
        """The loop body of a reduction stage (``red_pre``/``red_post`` its lines around it)."""
        self.red_pre, self.red_post = [], []
        with self.nested() as inner:
            self.stage_scope = inner
            self.run_nodes(placements)
        self.stage_scope = None
        return inner.lines

    # -- the ops handler ---------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        form = self.code_for_op.get(name)
        if form is None:
            raise AttributeError(name)
        return lambda *args: self.op(name, form, args)

    def op(self, name: str, form: Callable[..., str], args: Sequence[str]) -> str:
        dtype = self.dtype_of(args[0])
        code = form(*args, dtype)
        if code == args[0]:  # the identity for this dtype (the floor of an integer)
            return code
        return self.cse(code, torch.bool if name in BOOL_OPS else dtype)

    def where(self, cond: str, a: str, b: str) -> str:
        dtype = self.dtype_of(a)
        return self.cse(self.code_for_op["where"](cond, a, b, dtype), dtype)

    def load(self, name: str, index: Any) -> str:
        e = self.index(index)
        local = self.find_local((name, self.printer(e)))
        return local if local is not None else self.load_value(name, e)

    def store(self, name: str, index: Any, value: str) -> None:
        e = self.index(index)
        self.locals[-1][(name, self.printer(e))] = value
        if name in self.stored:
            self.store_value(name, e, value)

    def store_reduction(self, name: str, index: Any, value: Reduced) -> None:
        e = self.index(index)
        self.locals[0][(name, self.printer(e))] = value.var
        if name in self.stored:
            self.store_reduced(name, e, value.var)

    def masked(self, mask: str, body: Callable[[], str], other: Any) -> str:
        with self.nested() as inner:
            self.masks.append(mask)
            try:
                value = body()
            finally:
                self.masks.pop()
        return self.masked_value(mask, value, inner.lines, other)

    def indirect_indexing(self, value: str, bound: IndexBound) -> sympy.Symbol:
        """A value as an index (checked against ``bound`` where it says so)."""
        var = self.new_var("ind")
        self.scope.lines.append(self.index_line.format(var, value))
        if bound.check:
            var = self.check_index(var, self.printer(bound.size), bound)
        self.indirect.add(var)
        return sympy.Symbol(var, integer=True)

    # -- what each language writes (``check_index``: the index variable, maybe a new one) -----
    def assign(self, var: str, expr: str) -> None: ...
    def load_value(self, name: str, index: sympy.Expr) -> str: ...
    def store_value(self, name: str, index: sympy.Expr, value: str) -> None: ...
    def store_reduced(self, name: str, index: sympy.Expr, value: str) -> None: ...
    def masked_value(self, mask: str, value: str, lines: list[str], other: Any) -> str: ...
    def check_index(self, var: str, size: str, bound: IndexBound) -> str: ...
