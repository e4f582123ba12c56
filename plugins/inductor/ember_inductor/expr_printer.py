"""One printer of the IR's sympy index and size expressions as source code: the case analysis
(integers, symbols, the index functions, sums, products, powers, max / min) is written once; a
language overrides the forms it writes differently (C++ in ``codegen/cpp_ops.py``, Triton in
``codegen/triton_ops.py``, Python in ``symbolic.py``). Integer arithmetic throughout, except
``TrueDiv``."""
from __future__ import annotations

from typing import Any

import sympy

from .index_functions import FloorDiv, ModularIndexing, TrueDiv


class ExprPrinter:
    """Python-like source by default; subclasses override the methods of the forms that differ."""

    #: The function a nested max / min is written with (``minmax``).
    max_min = {"max": "max", "min": "min"}

    def __call__(self, e: Any) -> str:
        e = sympy.sympify(e)
        if e.is_Integer:
            return str(int(e))
        if e.is_Symbol:
            return e.name
        if isinstance(e, FloorDiv):
            return self.floordiv(self(e.args[0]), self(e.args[1]))
        if isinstance(e, ModularIndexing):
            return self.modular(*(self(a) for a in e.args))
        if isinstance(e, TrueDiv):
            return self.truediv(self(e.args[0]), self(e.args[1]))
        if e.is_Add:
            return "(" + " + ".join(self(a) for a in e.args) + ")"
        if e.is_Mul:
            return "(" + " * ".join(self(a) for a in e.args) + ")"
        if e.is_Pow and e.args[1].is_Integer and e.args[1] > 0:
            return self.power(self(e.args[0]), int(e.args[1]))
        if isinstance(e, (sympy.Max, sympy.Min)):
            return self.minmax("max" if isinstance(e, sympy.Max) else "min", [self(a) for a in e.args])
        return self.other(e)

    def floordiv(self, a: str, b: str) -> str:
        return f"({a} // {b})"

    def modular(self, a: str, b: str, c: str) -> str:
        return f"({self.floordiv(a, b)} % {c})"

    def truediv(self, a: str, b: str) -> str:
        return f"({a} / {b})"

    def power(self, base: str, n: int) -> str:
        return "(" + " * ".join([base] * n) + ")"

    def minmax(self, which: str, args: list[str]) -> str:
        """Nested two-argument calls of ``max_min[which]``."""
        out = args[0]
        for a in args[1:]:
            out = f"{self.max_min[which]}({out}, {a})"
        return out

    def other(self, e: Any) -> str:
        raise NotImplementedError(f"index expression {e}")
