"""Triton kernel generation: one ``@triton.jit`` function per fused group.

Tiling: pointwise kernels run over the flattened outer range in 1-D blocks (``XBLOCK``), or in
2-D ``YBLOCK x XBLOCK`` tiles when some access is contiguous along another dimension than the
last (a transpose), so that both the loads and the stores are coalesced. Reductions run
``XBLOCK`` rows per program; a row is either held whole in registers (persistent: ``RBLOCK`` is
the row length rounded up to a power of two, every reduction stage reuses the loaded values) or
walked in ``RBLOCK`` chunks by one loop per stage. Ragged edges are masked. Indices are int32
when every offset fits, int64 otherwise. Half and bfloat16 values are computed in float32.

Symbolic sizes are kernel arguments (``s0: i32``, or ``i64`` with 64-bit indices):
``xnumel``/``rnumel`` and the indices are expressions of them, the grid is computed from them at
each launch (``grid`` gives Python source then), block sizes are not capped by the example's
size, and 32-bit indices are used only under a guard that the extent fits. A reduction over a
symbolic length is looped, and where the example's rows fit in registers it is also generated
persistent in the same function (``dual``: the constexpr ``PERSISTENT`` picks the form; the
launcher takes the persistent one for rows up to the example's length rounded up to a power of
two, as the specialised kernel would be).
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

import sympy
import torch

from .. import indexing
from ..bounds import IndexBound
from ..indexing import FloorDiv, ModularIndexing, TrueDiv
from ..scheduler import FusedGroup, KernelPlan
from ..symbolic import guard_at_most, hint, pyexpr
from ..virtualized import set_handler
from .triton_configs import LaunchConfig, launch_configs, launch_grid, pow2, wide_tile_warps

#: Largest offset for 32-bit index arithmetic (tests lower it to exercise the int64 path).
INT32_MAX = 2**31 - 1
#: Rows up to this many elements are reduced whole in registers.
PERSISTENT_MAX = 4096
#: Shortest last dimension a pointwise kernel is tiled along (``_wants_2d``).
TILE_MIN_X = 8

TL = {torch.float32: "tl.float32", torch.float64: "tl.float64", torch.float16: "tl.float16",
      torch.bfloat16: "tl.bfloat16", torch.int64: "tl.int64", torch.int32: "tl.int32",
      torch.int16: "tl.int16", torch.int8: "tl.int8", torch.uint8: "tl.uint8", torch.bool: "tl.int1"}
#: Signature types of symbolic sizes (``i64`` where indices are 64-bit).
SIZE_TYPES = ("i32", "i64")
#: Pointer types of the kernel signature (for ``triton.compile``).
SIGNATURE = {torch.float32: "*fp32", torch.float64: "*fp64", torch.float16: "*fp16",
             torch.bfloat16: "*bf16", torch.int64: "*i64", torch.int32: "*i32", torch.int16: "*i16",
             torch.int8: "*i8", torch.uint8: "*u8", torch.bool: "*i1"}

XI, YI, RI = indexing.sym("xindex"), indexing.sym("yindex"), indexing.sym("rindex")

_LIBDEVICE_UNARY = "tan asin acos atan sinh cosh tanh asinh acosh atanh expm1 log1p log10 erfc".split()
_TL_UNARY = {"exp": "tl.exp({0})", "exp2": "tl.exp2({0})", "log": "tl.log({0})",
             "log2": "tl.log2({0})", "sqrt": "tl.sqrt({0})", "rsqrt": "tl.rsqrt({0})",
             "sin": "tl.sin({0})", "cos": "tl.cos({0})", "erf": "tl.erf({0})", "abs": "tl.abs({0})",
             "neg": "(-{0})", "reciprocal": "(1 / {0})", "square": "({0} * {0})",
             "sigmoid": "(1 / (1 + tl.exp(-{0})))", "bitwise_not": "(~{0})"}
_BINARY = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "truediv": "({0} / {1})",
           "bitwise_and": "({0} & {1})", "bitwise_or": "({0} | {1})", "bitwise_xor": "({0} ^ {1})",
           "bitwise_left_shift": "({0} << {1})", "bitwise_right_shift": "({0} >> {1})",
           "atan2": "libdevice.atan2({0}, {1})", "copysign": "libdevice.copysign({0}, {1})",
           "hypot": "libdevice.hypot({0}, {1})"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def tl_type(dtype: torch.dtype) -> str:
    if dtype not in TL:
        raise NotImplementedError(f"dtype {dtype} in Triton kernels")
    return TL[dtype]


def texpr(e: Any) -> str:
    """Print a sympy index expression as Triton."""
    e = sympy.sympify(e)
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    if isinstance(e, FloorDiv):
        return f"({texpr(e.args[0])} // {texpr(e.args[1])})"
    if isinstance(e, ModularIndexing):
        base = texpr(e.args[0]) if e.args[1] == 1 else f"({texpr(e.args[0])} // {texpr(e.args[1])})"
        return f"({base} % {texpr(e.args[2])})"
    if isinstance(e, TrueDiv):  # Triton's / of two ints is a float division
        return f"({texpr(e.args[0])} / {texpr(e.args[1])})"
    if e.is_Add:
        return "(" + " + ".join(texpr(a) for a in e.args) + ")"
    if e.is_Mul:
        return "(" + " * ".join(texpr(a) for a in e.args) + ")"
    if e.is_Pow and e.args[1].is_Integer and e.args[1] > 0:
        return "(" + " * ".join([texpr(e.args[0])] * int(e.args[1])) + ")"
    if isinstance(e, (sympy.Max, sympy.Min)):  # a stride torch computes as max(1, size)
        fn = "tl.maximum" if isinstance(e, sympy.Max) else "tl.minimum"
        out = texpr(e.args[0])
        for a in e.args[1:]:
            out = f"{fn}({out}, {texpr(a)})"
        return out
    raise NotImplementedError(f"index expression {e}")


def constant(value: Any, dtype: torch.dtype) -> str:
    """A typed 0-d constant: like a value loaded at a fixed index it broadcasts to any block,
    through ``tl.broadcast_to`` and stores too (a ``[1]`` block broadcasts only to 1-D ones)."""
    dtype = compute_dtype(dtype)
    if dtype == torch.bool:
        v = "1" if value else "0"
    elif dtype.is_floating_point:
        f = float(value)
        v = f'float("{f}")' if not math.isfinite(f) else repr(f)
    else:  # wrapped into the type's range as eager converts it (uint8 times -1 multiplies by 255)
        info = torch.iinfo(dtype)
        v = str((int(value) - info.min) % (info.max - info.min + 1) + info.min)
    return f"tl.full([], {v}, {tl_type(dtype)})"


_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


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
    def __init__(self, var: str) -> None:
        self.var = var


class TritonKernel:
    """Generates the Triton function of one fused group, with its launch configurations."""

    def __init__(self, name: str, group: FusedGroup, stored: set[str], buffers: dict[str, Any],
                 size_symbols: Any = (), persistent: bool | None = None) -> None:
        """``size_symbols``: names of the size symbols the wrapper can pass; ``persistent``
        forces the persistent form (the twin of a dual kernel, see ``dual``)."""
        self.name = name
        self.size_symbols = set(size_symbols)
        self.size_params: list[str] = []  # those this kernel reads, in parameter order
        self.group = group
        self.plan: KernelPlan = group.plan
        self.stored = stored
        self.buffers = buffers
        self.written = set(group.written)  # its nodes, and the inputs it writes in place
        self.params: dict[str, str] = {}
        self.dtypes: dict[str, torch.dtype] = {}
        self.consts: dict[str, Any] = {}
        self.tmp = 0
        self.numel = indexing.numel(self.plan.outer)
        self.rnumel = indexing.numel(self.plan.r)
        self.is_reduction = any(n.is_reduction for n in group.nodes)
        static_r = not self.rnumel.free_symbols
        # a symbolic row length whose example fits in registers: both forms in one function,
        # chosen per launch by the constexpr PERSISTENT (the persistent one where the row fits)
        self.dual = (persistent is None and self.is_reduction and not static_r
                     and pow2(hint(self.rnumel)) <= PERSISTENT_MAX)
        self.persistent = self.is_reduction and (
            persistent if persistent is not None else static_r and pow2(self.rnumel) <= PERSISTENT_MAX)
        self.tiled = not self.is_reduction and self._wants_2d()
        self.int64 = self._needs_int64()
        self.has_rmask = self.is_reduction and not (
            self.persistent and static_r and pow2(self.rnumel) == self.rnumel)
        self.scope = Scope(None)
        self.locals: list[dict] = [{}]
        self.masks: list[str] = []
        self.indirect: set[str] = set()
        self.level = "inner" if not self.is_reduction else "outer"
        self.red_pre: list[str] = []
        self.red_post: list[str] = []
        self._subs, self._ranges = self._index_substitution()
        row_accesses = self._row_accesses() if self.is_reduction else []
        self.outer_reduction = sum(1 if xs == 1 and rs != 1 else -1 for xs, rs in row_accesses) > 0
        self.wide_warps = wide_tile_warps(self, len(row_accesses)) if self.outer_reduction else ()

    # -- decisions ---------------------------------------------------------------------------
    def _accesses(self) -> list[Any]:
        xv = indexing.make_vars("x", len(self.plan.outer))
        rv = indexing.make_vars("r", len(self.plan.r))
        out = []
        for p in self.plan.placements:
            idx, ridx = p.index_map(xv, rv)
            sub = dict(zip(p.node.ivars, idx)) | dict(zip(p.node.jvars, ridx))
            out += [sympy.sympify(e).xreplace(sub) for _, e in p.node.reads + p.node.writes]
        return out

    def _wants_2d(self) -> bool:
        """Tiled (``YBLOCK`` rows of the leading dimensions, ``XBLOCK`` of the last) when an access
        is contiguous along a leading dimension but not along the last: a transpose, such as a
        convolution weight converted to channels-last, whose last dimension (the 3x3 kernel's 9)
        may be short. Without tiles, consecutive elements would be written (or read) ``C`` apart."""
        outer = self.plan.outer
        if len(outer) < 2 or hint(outer[-1]) < TILE_MIN_X or hint(indexing.numel(outer[:-1])) < 16:
            return False
        xv = indexing.make_vars("x", len(outer))
        ranges = dict(zip(xv, outer))
        for e in self._accesses():
            lin = indexing.as_linear(indexing.simplify_index(e, ranges), xv)
            if lin is not None and lin[1][-1] != 1 and any(s == 1 for s in lin[1][:-1]):
                return True
        return False

    def _row_accesses(self) -> list[tuple[Any, Any]]:
        """(stride along the kept index, stride along the reduced one) of each load or store
        that varies along both and is linear in them. A reduction whose accesses are mostly
        contiguous along the kept index and strided along the reduced one reduces across rows
        (``outer_reduction``: a column sum, such as a bias or a layer norm weight's gradient over
        a [tokens, features] matrix): a program reads a few contiguous elements of each row, so
        it wants wider tiles (``configs``)."""
        out = []
        for e in self._accesses():
            e = sympy.sympify(e).xreplace(self._subs)
            if not {XI, RI} <= e.free_symbols:
                continue
            lin = indexing.as_linear(indexing.simplify_index(e, self._ranges), [XI, RI])
            if lin is not None:
                out.append(tuple(lin[1]))
        return out

    def _needs_int64(self) -> bool:
        extents = [self.numel * (self.rnumel if self.rnumel.free_symbols else max(self.rnumel, 1))]
        for name in {n for p in self.plan.placements for n, _ in p.node.reads + p.node.writes}:
            lay = self.buffers[name].layout
            extents.append(sympy.sympify(lay.offset) + 1 + sum((s - 1) * st for s, st in zip(lay.size, lay.stride)))
        if all(not e.free_symbols for e in extents):
            return max(int(e) for e in extents) > INT32_MAX
        # symbolic: 32 bits only under a guard that every extent fits, for every admitted size
        return not all(guard_at_most(e, INT32_MAX) for e in extents)

    def _index_substitution(self) -> tuple[dict, dict]:
        outer, r = list(self.plan.outer), list(self.plan.r)
        xv, rv = indexing.make_vars("x", len(outer)), indexing.make_vars("r", len(r))
        subs: dict = {}
        if self.tiled:
            subs.update(zip(xv[:-1], indexing.delinearize(YI, outer[:-1])))
            subs[xv[-1]] = XI
            ranges = {YI: indexing.numel(outer[:-1]), XI: outer[-1]}
        else:
            subs.update(zip(xv, indexing.delinearize(XI, outer)))
            ranges = {XI: self.numel}
        if r:
            subs.update(zip(rv, indexing.delinearize(RI, r)))
            ranges[RI] = self.rnumel
        return subs, ranges

    def configs(self) -> list[LaunchConfig]:
        """The launch configurations autotuned on the first run, the default first
        (``triton_configs.launch_configs``). Call after ``generate``."""
        return launch_configs(self)

    def row_length(self) -> str:
        """A dual kernel's row length as Python source over the size symbols ("" otherwise): the
        launcher picks a persistent configuration only for rows it holds (``rmax``)."""
        return pyexpr(self.rnumel) if self.dual else ""

    def grid(self, cfg: LaunchConfig) -> tuple:
        """The launch grid of ``cfg``: ints, or Python source over the size symbols where symbolic."""
        return launch_grid(self, cfg)

    # -- helpers -----------------------------------------------------------------------------
    def new_var(self, prefix: str = "tmp") -> str:
        self.tmp += 1
        return f"{prefix}{self.tmp}"

    def cse(self, expr: str, dtype: torch.dtype) -> str:
        hit = self.scope.lookup(expr)
        if hit is not None:
            return hit
        var = self.new_var()
        self.scope.lines.append(f"{var} = {expr}")
        self.scope.cache[expr] = var
        self.dtypes[var] = dtype
        return var

    def param(self, name: str) -> str:
        if name not in self.params:
            prefix = "out_ptr" if name in self.written else "in_ptr"
            self.params[name] = f"{prefix}{len(self.params)}"
        return self.params[name]

    def index(self, expr: Any) -> sympy.Expr:
        e = sympy.sympify(expr).xreplace(self._subs)
        return indexing.simplify_index(e, self._ranges, strict=True)

    def _level_mask(self) -> list[str]:
        if not self.is_reduction:
            return ["ymask", "xmask"] if self.tiled else ["xmask"]
        if self.level == "outer":
            return ["xmask"]
        return ["xmask", "rmask"] if self.has_rmask else ["xmask"]

    def _level_zeros(self) -> str:
        if self.tiled:
            return "tl.zeros([YBLOCK, XBLOCK], tl.int32)"
        if not self.is_reduction:
            return "tl.zeros([XBLOCK], tl.int32)"
        return "tl.zeros([XBLOCK, 1], tl.int32)" if self.level == "outer" else \
            "tl.zeros([XBLOCK, RBLOCK], tl.int32)"

    def _mask_and_index(self, e: sympy.Expr, extra: Sequence[str], store: bool = False
                        ) -> tuple[str | None, str]:
        """Mask and index expression of an access; a store always gets a block of pointers."""
        names = {s.name for s in e.free_symbols}
        parts: list[str] = []
        if "yindex" in names:
            parts.append("ymask")
        if "xindex" in names:
            parts.append("xmask")
        if "rindex" in names and self.has_rmask:
            parts.append("rmask")
        if names & self.indirect:
            parts += self._level_mask()
        parts += list(extra)
        idx = texpr(e)
        # an index of no range variable (a constant, or a value loaded at one) is a scalar: masked
        # or stored through, it needs the block's shape
        if (parts or store) and not names & {"xindex", "yindex", "rindex"}:
            idx = f"{idx} + {self._level_zeros()}"
            parts += self._level_mask()
        parts = list(dict.fromkeys(parts))
        return (" & ".join(parts) if parts else None), idx

    def find_local(self, key: tuple) -> str | None:
        for d in reversed(self.locals):
            if key in d:
                return d[key]
        return None

    def _dtype(self, v: str) -> torch.dtype:
        return self.dtypes.get(v, torch.float32)

    # -- the ops handler ---------------------------------------------------------------------
    def load(self, name: str, index: Any) -> str:
        e = self.index(index)
        local = self.find_local((name, texpr(e)))
        if local is not None:
            return local
        dtype = self.buffers[name].get_dtype()
        mask, idx = self._mask_and_index(e, self.masks)
        ptr = self.param(name)
        ref = f"tl.load({ptr} + ({idx}), {mask}, other=0)" if mask else f"tl.load({ptr} + ({idx}))"
        v = self.cse(ref, dtype)
        if compute_dtype(dtype) != dtype:
            v = self.cse(f"{v}.to(tl.float32)", torch.float32)
        return v

    def store(self, name: str, index: Any, value: str) -> None:
        e = self.index(index)
        self.locals[-1][(name, texpr(e))] = value
        if name in self.stored:
            self._emit_store(name, e, value)

    def _emit_store(self, name: str, e: sympy.Expr, value: str, atomic: bool = False) -> None:
        mask, idx = self._mask_and_index(e, [], store=True)
        dt = tl_type(self.buffers[name].get_dtype())
        m = f", {mask}" if mask else ""
        op, sem = ("tl.atomic_add", ", sem='relaxed'") if atomic else ("tl.store", "")
        self.scope.lines.append(f"{op}({self.param(name)} + ({idx}), {value}.to({dt}){m}{sem})")

    def atomic_add(self, name: str, index: Any, value: str) -> None:
        """An accumulating store (a scatter's): never a local, since other programs add there too."""
        self._emit_store(name, self.index(index), value, atomic=True)

    def constant(self, value: Any, dtype: torch.dtype) -> str:
        var = self.cse(constant(value, dtype), compute_dtype(dtype))
        self.consts[var] = value
        return var

    def index_expr(self, expr: Any, dtype: torch.dtype) -> str:
        e = self.index(expr)
        if not e.free_symbols:
            return self.constant(int(e), dtype)
        return self.cse(f"({texpr(e)}).to({tl_type(compute_dtype(dtype))})", compute_dtype(dtype))

    def to_dtype(self, x: str, dtype: torch.dtype) -> str:
        if dtype == torch.bool:
            return self.cse(f"({x} != 0)", torch.bool)
        if dtype in (torch.float16, torch.bfloat16):
            return self.cse(f"{x}.to({tl_type(dtype)}).to(tl.float32)", torch.float32)
        return self.cse(f"{x}.to({tl_type(dtype)})", dtype)

    def where(self, cond: str, a: str, b: str) -> str:
        return self.cse(f"tl.where({cond}, {a}, {b})", self._dtype(a))

    def masked(self, mask: str, body: Any, other: Any) -> str:
        outer = self.scope
        self.scope = Scope(outer)
        self.locals.append({})
        self.masks.append(mask)
        try:
            value = body()
            lines = self.scope.lines
        finally:
            self.scope = outer
            self.locals.pop()
            self.masks.pop()
        self.scope.lines += lines
        dtype = self._dtype(value)
        other_v = self.constant(other, dtype)
        return self.cse(f"tl.where({mask}, {value}, {other_v})", dtype)

    def indirect_indexing(self, value: str, bound: IndexBound) -> sympy.Symbol:
        """A checked index: a device assert (of the lanes computed) where eager raises."""
        var = self.new_var("ind")
        size = texpr(bound.size)
        self.scope.lines.append(f"{var} = {value}.to(tl.int64)")
        if bound.check and bound.wrap_negative:
            self.scope.lines.append(f"{var} = tl.where({var} < 0, {var} + {size}, {var})")
        if bound.check:
            live = " & ".join(dict.fromkeys(self._level_mask() + self.masks))
            self.scope.lines.append(f'tl.device_assert(((0 <= {var}) & ({var} < {size})) | ~({live}), '
                                    f'"index out of bounds: 0 <= {var} < {size}")')
        self.indirect.add(var)
        return sympy.Symbol(var, integer=True)

    def __getattr__(self, name: str) -> Any:
        if name in _COMPARE:
            return lambda a, b: self.cse(f"({a} {_COMPARE[name]} {b})", torch.bool)
        if name in _BINARY or name in _TL_UNARY or name in _LIBDEVICE_UNARY:
            return lambda *args: self._simple(name, args)
        raise AttributeError(name)

    def _simple(self, name: str, args: Sequence[str]) -> str:
        if name in _LIBDEVICE_UNARY:
            return self.cse(f"libdevice.{name}({args[0]})", self._dtype(args[0]))
        template = _BINARY.get(name) or _TL_UNARY[name]
        return self.cse(template.format(*args), self._dtype(args[0]))

    def _is_float(self, v: str) -> bool:
        return self._dtype(v).is_floating_point

    def isnan(self, a: str) -> str:
        return self.cse(f"({a} != {a})", torch.bool)

    def isinf(self, a: str) -> str:
        if not self._is_float(a):
            return self.cse(f"({a} != {a})", torch.bool)
        return self.cse(f'(tl.abs({a}) == float("inf"))', torch.bool)

    def logical_not(self, a: str) -> str:
        return self.cse(f"({a} == 0)", torch.bool)

    def _logical(self, a: str, b: str, op: str) -> str:
        a = a if self._dtype(a) == torch.bool else self.to_dtype(a, torch.bool)
        b = b if self._dtype(b) == torch.bool else self.to_dtype(b, torch.bool)
        return self.cse(f"({a} {op} {b})", torch.bool)

    def logical_and(self, a: str, b: str) -> str:
        return self._logical(a, b, "&")

    def logical_or(self, a: str, b: str) -> str:
        return self._logical(a, b, "|")

    def logical_xor(self, a: str, b: str) -> str:
        return self._logical(a, b, "^")

    def relu(self, a: str) -> str:
        return self.cse(f"tl.where({a} < 0, 0, {a})", self._dtype(a))

    def maximum(self, a: str, b: str) -> str:
        if self._is_float(a):
            return self.cse(f"tl.where(({a} > {b}) | ({a} != {a}), {a}, {b})", self._dtype(a))
        return self.cse(f"tl.maximum({a}, {b})", self._dtype(a))

    def minimum(self, a: str, b: str) -> str:
        if self._is_float(a):
            return self.cse(f"tl.where(({a} < {b}) | ({a} != {a}), {a}, {b})", self._dtype(a))
        return self.cse(f"tl.minimum({a}, {b})", self._dtype(a))

    def sign(self, a: str) -> str:
        dt = self._dtype(a)
        t = tl_type(dt)
        s = self.cse(f"(({a} > 0).to({t}) - ({a} < 0).to({t}))", dt)
        return self.cse(f"tl.where({a} != {a}, {a}, {s})", dt) if dt.is_floating_point else s

    def _rounding(self, a: str, fn: str) -> str:
        return self.cse(f"{fn}({a})", self._dtype(a)) if self._is_float(a) else a

    def floor(self, a: str) -> str:
        return self._rounding(a, "tl.floor")

    def ceil(self, a: str) -> str:
        return self._rounding(a, "tl.ceil")

    def trunc(self, a: str) -> str:
        return self._rounding(a, "libdevice.trunc")

    def round(self, a: str) -> str:
        return self._rounding(a, "libdevice.nearbyint")

    def truncdiv(self, a: str, b: str) -> str:
        if self._is_float(a):
            return self.cse(f"libdevice.trunc({a} / {b})", self._dtype(a))
        return self.cse(f"({a} // {b})", self._dtype(a))

    def floordiv(self, a: str, b: str) -> str:
        dt = self._dtype(a)
        if dt.is_floating_point:
            return self.cse(f"tl.floor({a} / {b})", dt)
        q, r = self.cse(f"({a} // {b})", dt), self.cse(f"({a} % {b})", dt)
        return self.cse(f"tl.where(({r} != 0) & (({a} < 0) != ({b} < 0)), {q} - 1, {q})", dt)

    def fmod(self, a: str, b: str) -> str:
        if self._is_float(a):
            return self.cse(f"libdevice.fmod({a}, {b})", self._dtype(a))
        return self.cse(f"({a} % {b})", self._dtype(a))

    def remainder(self, a: str, b: str) -> str:
        dt = self._dtype(a)
        r = self.fmod(a, b)
        return self.cse(f"tl.where(({r} != 0) & (({r} < 0) != ({b} < 0)), {r} + {b}, {r})", dt)

    def pow(self, a: str, b: str) -> str:
        dt = self._dtype(a)
        if not dt.is_floating_point:
            raise NotImplementedError("integer pow in Triton kernels")
        exponent = self.consts.get(b)
        if exponent == 2:
            return self.cse(f"({a} * {a})", dt)
        if exponent == 0.5:
            return self.cse(f"tl.sqrt({a})", dt)
        return self.cse(f"libdevice.pow({a}, {b})", dt)

    # -- reductions --------------------------------------------------------------------------
    def reduction(self, dtype: torch.dtype, src_dtype: torch.dtype, rtype: str, value: Any) -> Reduced:
        acc_t = compute_dtype(src_dtype)
        if rtype in ("argmax", "argmin"):
            return self._arg_reduction(rtype, acc_t, value)
        ident = _identity(rtype, acc_t)
        if self.persistent:
            block = self._block(value, ident, acc_t)
            return Reduced(self.cse(_final(rtype, block), acc_t if rtype not in ("any", "all") else torch.bool))
        acc = self.new_var("acc")
        self.red_pre.append(f"{acc} = tl.full([XBLOCK, RBLOCK], {_literal(ident, acc_t)}, {tl_type(acc_t)})")
        step = {"sum": f"{acc} + {value}", "prod": f"{acc} * {value}", "max": f"_max_combine({acc}, {value})",
                "min": f"_min_combine({acc}, {value})", "any": f"{acc} | {value}",
                "all": f"{acc} & {value}"}[rtype]
        self.scope.lines.append(f"{acc} = tl.where(rmask, {step}, {acc})" if self.has_rmask
                                else f"{acc} = {step}")
        res = self.new_var("red")
        self.red_post.append(f"{res} = {_final(rtype, acc)}")
        self.dtypes[res] = acc_t if rtype not in ("any", "all") else torch.bool
        return Reduced(res)

    def _block(self, v: str, ident: Any, dtype: torch.dtype) -> str:
        if self.has_rmask:
            v = self.cse(f"tl.where(rmask, {v}, {_literal(ident, dtype)})", dtype)
        return self.cse(f"tl.broadcast_to({v}, [XBLOCK, RBLOCK])", dtype)

    def _arg_reduction(self, rtype: str, acc_t: torch.dtype, value: Any) -> Reduced:
        v, i = value
        combine = f"_{rtype}_combine"
        ident = _identity("max" if rtype == "argmax" else "min", acc_t)
        big = 2**63 - 1
        res = self.new_var("red")
        self.dtypes[res] = torch.int64
        if self.persistent:
            vb = self._block(v, ident, acc_t)
            ib = self._block(i, big, torch.int64)
            self.scope.lines.append(f"_, {res} = tl.reduce(({vb}, {ib}), 1, {combine}, keep_dims=True)")
            return Reduced(res)
        av, ai = self.new_var("accv"), self.new_var("acci")
        self.red_pre += [f"{av} = tl.full([XBLOCK, RBLOCK], {_literal(ident, acc_t)}, {tl_type(acc_t)})",
                         f"{ai} = tl.full([XBLOCK, RBLOCK], {big}, tl.int64)"]
        nv, ni = self.new_var("nv"), self.new_var("ni")
        self.scope.lines.append(f"{nv}, {ni} = {combine}({av}, {ai}, {v}, {i})")
        self.scope.lines += [f"{av} = tl.where(rmask, {nv}, {av})", f"{ai} = tl.where(rmask, {ni}, {ai})"]
        self.red_post.append(f"_, {res} = tl.reduce(({av}, {ai}), 1, {combine}, keep_dims=True)")
        return Reduced(res)

    def store_reduction(self, name: str, index: Any, value: Reduced) -> None:
        e = self.index(index)
        self.locals[0][(name, texpr(e))] = value.var
        if name in self.stored:
            level, self.level = self.level, "outer"
            mask, idx = self._mask_and_index(e, [], store=True)
            self.level = level
            dt = tl_type(self.buffers[name].get_dtype())
            m = f", {mask}" if mask else ""
            line = f"tl.store({self.param(name)} + ({idx}), {value.var}.to({dt}){m})"
            (self.scope.lines if self.persistent else self.red_post).append(line)

    # -- kernel body -------------------------------------------------------------------------
    def _run_nodes(self, placements: Sequence) -> None:
        xv = indexing.make_vars("x", len(self.plan.outer))
        rv = indexing.make_vars("r", len(self.plan.r))
        for p in placements:
            idx, ridx = p.index_map(xv, rv)
            p.node.body(idx, ridx)

    def _looped_stage(self, placements: Sequence, barrier: bool) -> None:
        outer = self.scope
        self.scope = Scope(outer)
        self.locals.append({})
        self.red_pre, self.red_post = [], []
        self._run_nodes(placements)
        body, self.scope = self.scope.lines, outer
        self.locals.pop()
        head = ["rindex = roffset + rbase"] + (["rmask = rindex < rnumel"] if self.has_rmask else [])
        lines = (["tl.debug_barrier()"] if barrier else []) + self.red_pre
        lines += ["for roffset in range(0, rnumel, RBLOCK):"] + [f"    {l}" for l in head + body]
        self.scope.lines += lines + self.red_post

    def _header(self) -> list[str]:
        pid = "tl.program_id({})" + (".to(tl.int64)" if self.int64 else "")
        cast = ".to(tl.int64)" if self.int64 else ""
        if self.tiled:
            # one grid axis (CUDA's second allows 65535 blocks), the row blocks varying fastest
            return [f"ynumel = {texpr(indexing.numel(self.plan.outer[:-1]))}", f"xnumel = {texpr(self.plan.outer[-1])}",
                    "yblocks = tl.cdiv(ynumel, YBLOCK)",
                    f"yindex = ({pid.format(0)} % yblocks) * YBLOCK + tl.arange(0, YBLOCK)[:, None]{cast}",
                    "ymask = yindex < ynumel",
                    f"xindex = ({pid.format(0)} // yblocks) * XBLOCK + tl.arange(0, XBLOCK)[None, :]{cast}",
                    "xmask = xindex < xnumel"]
        if not self.is_reduction:
            return [f"xnumel = {texpr(self.numel)}",
                    f"xindex = {pid.format(0)} * XBLOCK + tl.arange(0, XBLOCK){cast}",
                    "xmask = xindex < xnumel"]
        lines = [f"xnumel = {texpr(self.numel)}", f"rnumel = {texpr(self.rnumel)}",
                 f"xindex = {pid.format(0)} * XBLOCK + tl.arange(0, XBLOCK)[:, None]{cast}",
                 "xmask = xindex < xnumel", f"rbase = tl.arange(0, RBLOCK)[None, :]{cast}"]
        if self.persistent:
            lines.append("rindex = rbase")
            if self.has_rmask:
                lines.append("rmask = rindex < rnumel")
        return lines

    def generate(self) -> str:
        """The kernel's ``@triton.jit`` function (to be appended to the prelude)."""
        body = self._body()
        if self.dual:  # the persistent twin under ``if PERSISTENT:``, sharing the parameters
            twin = TritonKernel(self.name, self.group, self.stored, self.buffers, self.size_symbols,
                                persistent=True)
            twin.params = dict(self.params)
            persistent = twin._body()
            shared = len(self._header())
            if twin.params != self.params or persistent[:shared] != body[:shared]:
                raise AssertionError(f"the persistent twin of {self.name} reads other parameters")
            indent = lambda lines: [f"    {l}" for l in lines]  # noqa: E731
            body = body[:shared] + ["if PERSISTENT:"] + indent(persistent[shared:]) + ["else:"] + \
                indent(body[shared:])
        meta = [name for name, _ in self.configs()[0].meta]
        self.size_params = sorted(self.size_symbols & set(_IDENT.findall("\n".join(body))))
        args = [self.params[n] for n in self.params] + self.size_params + [f"{m}: tl.constexpr" for m in meta]
        return "\n".join(["@triton.jit", f"def {self.name}({', '.join(args)}):"] + [f"    {l}" for l in body]) + "\n"

    def _body(self) -> list[str]:
        """The function's statements: the header, then the fused nodes' code."""
        with set_handler(self):
            if not self.is_reduction:
                self._run_nodes(self.plan.stages[0][1])
            else:
                reread = self.stored & {n for p in self.plan.placements for n in p.node.read_names}
                looped = 0
                for level, placements in self.plan.stages:
                    self.level = level
                    if level == "outer" or self.persistent:
                        self._run_nodes(placements)
                    else:
                        self._looped_stage(placements, barrier=looped > 0 and bool(reread))
                        looped += 1
        return self._header() + self.scope.lines

    def signature(self) -> dict[str, str]:
        """Argument types for ``triton.compile`` (pointers, then sizes; block sizes are constexprs).
        Sizes are ``i32`` where the indices are (every extent guarded to fit: no size or product
        of sizes in an index exceeds it), so ``xnumel`` and the masks stay 32-bit."""
        sig = {self.params[n]: SIGNATURE[self.buffers[n].get_dtype()] for n in self.params}
        for name in self.size_params:
            sig[name] = "i64" if self.int64 else "i32"
        for name, _ in self.configs()[0].meta:
            sig[name] = "constexpr"
        return sig


def _identity(rtype: str, dtype: torch.dtype) -> Any:
    if rtype in ("sum", "any"):
        return 0
    if rtype in ("prod", "all"):
        return 1
    if dtype.is_floating_point:
        return float("-inf") if rtype == "max" else float("inf")
    if dtype == torch.bool:
        return 0 if rtype == "max" else 1
    info = torch.iinfo(dtype)
    return info.min if rtype == "max" else info.max


def _literal(value: Any, dtype: torch.dtype) -> str:
    if dtype.is_floating_point:
        f = float(value)
        return f'float("{f}")' if not math.isfinite(f) else repr(f)
    return str(int(value))


def _final(rtype: str, block: str) -> str:
    return {"sum": f"tl.sum({block}, 1, keep_dims=True)",
            "prod": f"tl.reduce({block}, 1, _prod_combine, keep_dims=True)",
            "max": f"tl.reduce({block}, 1, _max_combine, keep_dims=True)",
            "min": f"tl.reduce({block}, 1, _min_combine, keep_dims=True)",
            "any": f"(tl.max({block}.to(tl.int8), 1, keep_dims=True) != 0)",
            "all": f"(tl.min({block}.to(tl.int8), 1, keep_dims=True) != 0)"}[rtype]
