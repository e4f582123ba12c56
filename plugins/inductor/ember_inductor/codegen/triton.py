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
two, as the specialised kernel would be). The form is chosen in ``triton_form``, values are
written by ``triton_ops``' table, and ``kernel.Kernel`` holds the language-free half.
"""
from __future__ import annotations

from typing import Any, Sequence

import sympy
import torch

from .. import indexing
from ..bounds import IndexBound
from ..scheduler import FusedGroup
from ..symbolic import pyexpr
from ..virtualized import set_handler
from .kernel import Kernel, Reduced
from .triton_configs import LaunchConfig, launch_configs, launch_grid, pow2
from .triton_form import index_substitution, kernel_shape, needs_int64
from .triton_ops import CODE_FOR_OP, SIGNATURE, compute_dtype, constant, final, identity, literal, texpr, tl_type



class TritonKernel(Kernel):
    """Generates the Triton function of one fused group, with its launch configurations."""

    printer = texpr
    code_for_op = CODE_FOR_OP
    tmp_prefix = "tmp"
    index_line = "{0} = {1}.to(tl.int64)"

    def __init__(self, name: str, group: FusedGroup, stored: set[str], buffers: dict[str, Any],
                 size_symbols: Any = (), persistent: bool | None = None) -> None:
        """``persistent`` forces the persistent form (the twin of a dual kernel, see ``dual``)."""
        super().__init__(name, group, stored, buffers, size_symbols)
        self.shape = kernel_shape(group, buffers, persistent)
        self.consts: dict[str, Any] = {}  # constants' variables -> their values
        self.int64 = needs_int64(self.plan, buffers)
        s = self.shape
        self.has_rmask = s.is_reduction and not (s.persistent and not s.rnumel.free_symbols and pow2(s.rnumel) == s.rnumel)
        self.level = "inner" if not s.is_reduction else "outer"
        self.subs, self.ranges = index_substitution(s)

    def configs(self) -> list[LaunchConfig]:
        """The launch configurations autotuned on the first run, the default first
        (``triton_configs.launch_configs``). Call after ``generate``."""
        return launch_configs(self.shape, self.size_params, len(self.params))

    def row_length(self) -> str:
        """A dual kernel's row length as Python source over the size symbols ("" otherwise): the
        launcher picks a persistent configuration only for rows it holds (``rmax``)."""
        return pyexpr(self.shape.rnumel) if self.shape.dual else ""

    def grid(self, cfg: LaunchConfig) -> tuple:
        """The launch grid of ``cfg``: ints, or Python source over the size symbols where symbolic."""
        return launch_grid(self.shape, cfg)

    # -- helpers -----------------------------------------------------------------------------
    def assign(self, var: str, expr: str) -> None:
        self.scope.lines.append(f"{var} = {expr}")

    def _level_mask(self) -> list[str]:
        if not self.shape.is_reduction:
            return ["ymask", "xmask"] if self.shape.tiled else ["xmask"]
        if self.level == "outer":
            return ["xmask"]
        return ["xmask", "rmask"] if self.has_rmask else ["xmask"]

    def _level_zeros(self) -> str:
        if self.shape.tiled:
            return "tl.zeros([YBLOCK, XBLOCK], tl.int32)"
        if not self.shape.is_reduction:
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

    # -- the ops handler ---------------------------------------------------------------------
    def load_value(self, name: str, index: sympy.Expr) -> str:
        dtype = self.buffers[name].get_dtype()
        mask, idx = self._mask_and_index(index, self.masks)
        ptr = self.param(name)
        ref = f"tl.load({ptr} + ({idx}), {mask}, other=0)" if mask else f"tl.load({ptr} + ({idx}))"
        v = self.cse(ref, dtype)
        if compute_dtype(dtype) != dtype:
            v = self.cse(f"{v}.to(tl.float32)", torch.float32)
        return v

    def store_value(self, name: str, index: sympy.Expr, value: str, atomic: bool = False) -> None:
        mask, idx = self._mask_and_index(index, [], store=True)
        dt = tl_type(self.buffers[name].get_dtype())
        m = f", {mask}" if mask else ""
        op, sem = ("tl.atomic_add", ", sem='relaxed'") if atomic else ("tl.store", "")
        self.scope.lines.append(f"{op}({self.param(name)} + ({idx}), {value}.to({dt}){m}{sem})")

    def atomic_add(self, name: str, index: Any, value: str) -> None:
        """An accumulating store (a scatter's): never a local, since other programs add there too."""
        self.store_value(name, self.index(index), value, atomic=True)

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

    def masked_value(self, mask: str, value: str, lines: list[str], other: Any) -> str:
        """The body computed for every lane, the masked-off ones replaced by ``other``."""
        self.scope.lines += lines
        dtype = self.dtype_of(value)
        other_v = self.constant(other, dtype)
        return self.cse(f"tl.where({mask}, {value}, {other_v})", dtype)

    def check_index(self, var: str, size: str, bound: IndexBound) -> str:
        """A device assert (of the lanes computed) where eager raises."""
        if bound.wrap_negative:
            self.scope.lines.append(f"{var} = tl.where({var} < 0, {var} + {size}, {var})")
        live = " & ".join(dict.fromkeys(self._level_mask() + self.masks))
        self.scope.lines.append(f'tl.device_assert(((0 <= {var}) & ({var} < {size})) | ~({live}), '
                                f'"index out of bounds: 0 <= {var} < {size}")')
        return var

    def pow(self, a: str, b: str) -> str:
        dt = self.dtype_of(a)
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
        ident = identity(rtype, acc_t)
        if self.shape.persistent:
            block = self._block(value, ident, acc_t)
            return Reduced(self.cse(final(rtype, block), acc_t if rtype not in ("any", "all") else torch.bool))
        acc = self.new_var("acc")
        self.red_pre.append(f"{acc} = tl.full([XBLOCK, RBLOCK], {literal(ident, acc_t)}, {tl_type(acc_t)})")
        step = {"sum": f"{acc} + {value}", "prod": f"{acc} * {value}", "max": f"_max_combine({acc}, {value})",
                "min": f"_min_combine({acc}, {value})", "any": f"{acc} | {value}",
                "all": f"{acc} & {value}"}[rtype]
        self.scope.lines.append(f"{acc} = tl.where(rmask, {step}, {acc})" if self.has_rmask
                                else f"{acc} = {step}")
        res = self.new_var("red")
        self.red_post.append(f"{res} = {final(rtype, acc)}")
        self.dtypes[res] = acc_t if rtype not in ("any", "all") else torch.bool
        return Reduced(res)

    def _block(self, v: str, ident: Any, dtype: torch.dtype) -> str:
        if self.has_rmask:
            v = self.cse(f"tl.where(rmask, {v}, {literal(ident, dtype)})", dtype)
        return self.cse(f"tl.broadcast_to({v}, [XBLOCK, RBLOCK])", dtype)

    def _arg_reduction(self, rtype: str, acc_t: torch.dtype, value: Any) -> Reduced:
        v, i = value
        combine = f"_{rtype}_combine"
        ident = identity("max" if rtype == "argmax" else "min", acc_t)
        big = 2**63 - 1
        res = self.new_var("red")
        self.dtypes[res] = torch.int64
        if self.shape.persistent:
            vb = self._block(v, ident, acc_t)
            ib = self._block(i, big, torch.int64)
            self.scope.lines.append(f"_, {res} = tl.reduce(({vb}, {ib}), 1, {combine}, keep_dims=True)")
            return Reduced(res)
        av, ai = self.new_var("accv"), self.new_var("acci")
        self.red_pre += [f"{av} = tl.full([XBLOCK, RBLOCK], {literal(ident, acc_t)}, {tl_type(acc_t)})",
                         f"{ai} = tl.full([XBLOCK, RBLOCK], {big}, tl.int64)"]
        nv, ni = self.new_var("nv"), self.new_var("ni")
        self.scope.lines.append(f"{nv}, {ni} = {combine}({av}, {ai}, {v}, {i})")
        self.scope.lines += [f"{av} = tl.where(rmask, {nv}, {av})", f"{ai} = tl.where(rmask, {ni}, {ai})"]
        self.red_post.append(f"_, {res} = tl.reduce(({av}, {ai}), 1, {combine}, keep_dims=True)")
        return Reduced(res)

    def store_reduced(self, name: str, index: sympy.Expr, value: str) -> None:
        level, self.level = self.level, "outer"
        mask, idx = self._mask_and_index(index, [], store=True)
        self.level = level
        dt = tl_type(self.buffers[name].get_dtype())
        m = f", {mask}" if mask else ""
        line = f"tl.store({self.param(name)} + ({idx}), {value}.to({dt}){m})"
        (self.scope.lines if self.shape.persistent else self.red_post).append(line)

    # -- kernel body -------------------------------------------------------------------------
    def _looped_stage(self, placements: Sequence, barrier: bool) -> None:
        body = self.run_stage(placements)
        head = ["rindex = roffset + rbase"] + (["rmask = rindex < rnumel"] if self.has_rmask else [])
        lines = (["tl.debug_barrier()"] if barrier else []) + self.red_pre
        lines += ["for roffset in range(0, rnumel, RBLOCK):"] + [f"    {l}" for l in head + body]
        self.scope.lines += lines + self.red_post

    def _header(self) -> list[str]:
        pid = "tl.program_id({})" + (".to(tl.int64)" if self.int64 else "")
        cast = ".to(tl.int64)" if self.int64 else ""
        if self.shape.tiled:
            # one grid axis (CUDA's second allows 65535 blocks), the row blocks varying fastest
            return [f"ynumel = {texpr(indexing.numel(self.plan.outer[:-1]))}", f"xnumel = {texpr(self.plan.outer[-1])}",
                    "yblocks = tl.cdiv(ynumel, YBLOCK)",
                    f"yindex = ({pid.format(0)} % yblocks) * YBLOCK + tl.arange(0, YBLOCK)[:, None]{cast}",
                    "ymask = yindex < ynumel",
                    f"xindex = ({pid.format(0)} // yblocks) * XBLOCK + tl.arange(0, XBLOCK)[None, :]{cast}",
                    "xmask = xindex < xnumel"]
        if not self.shape.is_reduction:
            return [f"xnumel = {texpr(self.shape.numel)}",
                    f"xindex = {pid.format(0)} * XBLOCK + tl.arange(0, XBLOCK){cast}",
                    "xmask = xindex < xnumel"]
        lines = [f"xnumel = {texpr(self.shape.numel)}", f"rnumel = {texpr(self.shape.rnumel)}",
                 f"xindex = {pid.format(0)} * XBLOCK + tl.arange(0, XBLOCK)[:, None]{cast}",
                 "xmask = xindex < xnumel", f"rbase = tl.arange(0, RBLOCK)[None, :]{cast}"]
        if self.shape.persistent:
            lines.append("rindex = rbase")
            if self.has_rmask:
                lines.append("rmask = rindex < rnumel")
        return lines

    def generate(self) -> str:
        """The kernel's ``@triton.jit`` function (to be appended to the prelude)."""
        body = self._body()
        if self.shape.dual:  # the persistent twin under ``if PERSISTENT:``, sharing the parameters
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
        self.size_params = self.used_sizes(body)
        args = [self.params[n] for n in self.params] + self.size_params + [f"{m}: tl.constexpr" for m in meta]
        return "\n".join(["@triton.jit", f"def {self.name}({', '.join(args)}):"] + [f"    {l}" for l in body]) + "\n"

    def _body(self) -> list[str]:
        """The function's statements: the header, then the fused nodes' code."""
        with set_handler(self):
            if not self.shape.is_reduction:
                self.run_nodes(self.plan.stages[0][1])
            else:
                reread = self.stored & {n for p in self.plan.placements for n in p.node.read_names}
                looped = 0
                for level, placements in self.plan.stages:
                    self.level = level
                    if level == "outer" or self.shape.persistent:
                        self.run_nodes(placements)
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

