"""Symbolic sizes: the ShapeEnv's symbols as the inductor's sympy expressions.

A graph traced with symbolic shapes (``make_fx(tracing_mode="symbolic")``, or ember_aot on a
dynamic capture) has ``torch.SymInt`` sizes whose ``node.expr`` are sympy expressions over the
ShapeEnv's symbols (``s0``...), written with torch's own index functions. :func:`to_expr` turns
them (and plain ints) into the expressions the IR carries, with ``indexing``'s ``FloorDiv`` /
``ModularIndexing`` (sizes are never negative, so torch's ``Mod`` is our modulus). Anything
else (a size that is a float) raises :class:`SymbolicUnsupported`: the graph is then compiled per
concrete shape instead (``compile_fx.PerShapeGraph``). An unbacked symbol (``u0``: a size an
extern op's output has only once it ran, the iterations of a while_loop traced for training) is
bound by the wrapper right after that op (``GraphLowering.unbacked``).

Heuristics that need a number (a parallel threshold, a block size) read the example's value
of an expression with :func:`hint`, inside :func:`using_hints`; a choice that the result depends
on must not use a hint.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import sympy
import torch
from torch.utils._sympy.symbol import SymT, symbol_is_type

from .index_functions import FloorDiv, ModularIndexing, TrueDiv

Expr = sympy.Expr
#: the value heuristics take for a size only the data decides (``nonzero``'s; torch's inductor takes 8192 too)
UNBACKED_HINT = sympy.Integer(8192)


class SymbolicUnsupported(Exception):
    """Something of this graph cannot be compiled for symbolic sizes (only per shape)."""


def _convert(e: Expr) -> Expr:
    if e in (sympy.true, sympy.false):
        return e
    if not e.args:
        if e.is_Integer or e.is_Symbol:
            return e
        raise SymbolicUnsupported(f"size {e}")
    args = [_convert(a) for a in e.args]
    if e.is_Add or e.is_Mul or e.is_Relational or isinstance(e, (sympy.And, sympy.Or, sympy.Not)):
        return e.func(*args)  # relations: a SymBool (a torch._check's condition)
    name = type(e).__name__
    if e.is_Pow or name == "PowByNatural":
        if not (args[1].is_Integer and args[1] > 0):
            raise SymbolicUnsupported(f"size {e}")
        return sympy.Pow(args[0], args[1])
    if name in ("FloorDiv", "CleanDiv"):
        return FloorDiv(*args)
    if name == "ModularIndexing":
        return ModularIndexing(*args)
    if name in ("Mod", "PythonMod"):
        return ModularIndexing(args[0], sympy.S.One, args[1])
    if name == "CeilDiv":
        return FloorDiv(args[0] + args[1] - 1, args[1])
    if name in ("Max", "Min"):
        return (sympy.Max if name == "Max" else sympy.Min)(*args)
    if name == "IntTrueDiv":
        return TrueDiv(*args)
    if name in ("CeilToInt", "FloorToInt") and isinstance(args[0], TrueDiv) \
            and args[0].args[1].is_Integer and args[0].args[1] > 0:  # ceil(s / 32): a size's rounding
        num, den = args[0].args
        return FloorDiv(num + den - 1, den) if name == "CeilToInt" else FloorDiv(num, den)
    if name == "ToFloat" and args[0].is_integer:
        return TrueDiv(args[0], sympy.S.One)
    raise SymbolicUnsupported(f"size {e} ({name})")


def to_expr(value: Any) -> Expr:
    """A size (int, SymInt or sympy expression), or a float computed from sizes (a SymFloat
    whose expression is a :class:`TrueDiv`), as the IR's sympy expression."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        expr = value.node.expr
        env = value.node.shape_env
        if env is not None:
            expr = env.replace(expr)
        return _convert(sympy.sympify(expr))
    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise SymbolicUnsupported(f"size {value!r}")
    return sympy.Integer(value)


def to_exprs(values: Any) -> list:
    return [to_expr(v) for v in values]


def is_static(value: Any) -> bool:
    return not isinstance(value, sympy.Basic) or not value.free_symbols


def free_symbols(value: Any) -> set:
    """Shape symbols of a value or nested lists/tuples/dicts of values."""
    if isinstance(value, sympy.Basic):
        return set(value.free_symbols)
    if isinstance(value, (list, tuple)):
        return set().union(*(free_symbols(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return free_symbols(list(value.values()))
    return set()


def shape_env_of(gm: torch.fx.GraphModule) -> Any:
    """The ShapeEnv of a graph traced with symbolic sizes, None for a static graph."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt) and val.node.shape_env is not None:
            return val.node.shape_env
        if isinstance(val, torch.Tensor) and any(
                isinstance(s, torch.SymInt) and s.node.expr.free_symbols
                for s in list(val.shape) + list(val.stride())):
            fake_mode = getattr(val, "fake_mode", None)
            env = getattr(fake_mode, "shape_env", None)
            return env if env is not None else next(
                s.node.shape_env for s in val.shape if isinstance(s, torch.SymInt))
    return None




_hints = threading.local()

@contextlib.contextmanager
def using_hints(shape_env: Any) -> Iterator[None]:
    """Make :func:`hint` read the example sizes of ``shape_env`` (None: a static graph)."""
    values = {}
    if shape_env is not None:
        table = getattr(shape_env, "backed_var_to_val", None)  # torch 2.13's name of var_to_val
        table = shape_env.var_to_val if table is None else table
        values = {sym: sympy.Integer(int(v)) for sym, v in table.items()}
    old = getattr(_hints, "values", None), getattr(_hints, "env", None)
    _hints.values, _hints.env = values, shape_env
    try:
        yield
    finally:
        _hints.values, _hints.env = old


def hint(expr: Any) -> int:
    """The example's value of a size expression (for heuristics only; :data:`UNBACKED_HINT` for
    unbacked symbols)."""
    expr = sympy.sympify(expr)
    if not expr.free_symbols:
        return int(expr)
    values = getattr(_hints, "values", None) or {}
    out = expr.xreplace(values)
    out = out.xreplace({s: UNBACKED_HINT for s in out.free_symbols if symbol_is_type(s, SymT.UNBACKED_INT)})
    if out.free_symbols:
        raise SymbolicUnsupported(f"no example value for {expr}")
    return int(out)


def hint_named(name: str) -> int | None:
    """The example's value of the size symbol called ``name`` (None if there is none)."""
    for sym, value in (getattr(_hints, "values", None) or {}).items():
        if sym.name == name:
            return int(value)
    return None


def guard_at_most(expr: Any, bound: int) -> bool:
    """Is ``expr <= bound``, decided on the example and guarded in the ShapeEnv (the capture's
    guards then admit only sizes for which the answer holds, contract item 7)? False when it
    cannot be guarded (an expression with index functions, no ShapeEnv)."""
    expr = sympy.sympify(expr)
    env = getattr(_hints, "env", None)
    if env is None or expr.atoms(FloorDiv, ModularIndexing, sympy.Max, sympy.Min):
        return False
    try:
        return bool(env.evaluate_expr(sympy.Le(expr, bound)))
    except Exception:  # a relation the ShapeEnv cannot guard: take the safe branch
        return False


def pyexpr(e: Any) -> str:
    """A size expression as Python source over variables named like its symbols."""
    e = sympy.sympify(e)
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    if isinstance(e, FloorDiv):
        return f"({pyexpr(e.args[0])} // {pyexpr(e.args[1])})"
    if isinstance(e, ModularIndexing):
        return f"(({pyexpr(e.args[0])} // {pyexpr(e.args[1])}) % {pyexpr(e.args[2])})"
    if isinstance(e, TrueDiv):
        return f"({pyexpr(e.args[0])} / {pyexpr(e.args[1])})"
    if e.is_Add:
        return "(" + " + ".join(pyexpr(a) for a in e.args) + ")"
    if e.is_Mul:
        return "(" + " * ".join(pyexpr(a) for a in e.args) + ")"
    if e.is_Pow and e.args[1].is_Integer and e.args[1] > 0:
        return f"({pyexpr(e.args[0])} ** {int(e.args[1])})"
    if isinstance(e, (sympy.Max, sympy.Min)):
        return f"{'max' if isinstance(e, sympy.Max) else 'min'}({', '.join(pyexpr(a) for a in e.args)})"
    if e in (sympy.true, sympy.false):
        return str(bool(e))
    if e.is_Relational:
        return f"({pyexpr(e.lhs)} {e.rel_op} {pyexpr(e.rhs)})"
    if isinstance(e, (sympy.And, sympy.Or)):
        return "(" + (" and " if isinstance(e, sympy.And) else " or ").join(pyexpr(a) for a in e.args) + ")"
    if isinstance(e, sympy.Not):
        return f"(not {pyexpr(e.args[0])})"
    raise SymbolicUnsupported(f"size expression {e}")
