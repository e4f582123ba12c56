"""The Python wrapper of a compiled graph: allocates buffers, calls kernels and aten ops.

Generated as Python source (straight-line code, so the per-call overhead is a few attribute
lookups per kernel). Buffers whose last reader has run are reused for later allocations of the
same size, stride and dtype, or released with ``del``. A second function, ``call_checked``,
is used on the first call: it also verifies that aten kernels returned the strides the kernels
were compiled for. Only the outputs of an aten call that something reads or returns are bound
and checked.

With symbolic sizes, the wrapper first binds each size symbol it uses from its inputs
(``s0 = arg0.size(0)``, a symbolic int input as it is), then computes every allocation's size
and stride, every extern op's size arguments and every kernel's size arguments from them.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import sympy
import torch

from .. import ir
from ..graph import scalar_input_name
from ..scheduler import EmptyGroup, ExternGroup, FusedGroup, Scheduler
from ..symbolic import SymbolicUnsupported, pyexpr
from ..unbacked import path_source
from .common import is_size_param


aten = torch.ops.aten

#: Extern ops with a ``torch.*`` binding of the same signature: its argument parser is faster
#: than an OpOverload's generic one (measured on a convolution call on a CPU).
_BINDINGS = {aten.mm.default: torch.mm, aten.addmm.default: torch.addmm, aten.bmm.default: torch.bmm,
             aten.baddbmm.default: torch.baddbmm, aten.convolution.default: torch.convolution,
             aten._addmm_activation.default: torch._addmm_activation}


def _entry_point(op: Any) -> Any:
    """The fastest callable that runs ``op``: its torch binding, else the OpOverload's C++ entry."""
    return _BINDINGS.get(op) or getattr(op, "_op", op)


def _as_linear(kernel: ir.ExternKernel) -> tuple | None:
    """``(x, w[, bias])`` when ``kernel`` is ``mm(x, w.t())`` or ``addmm(bias, x, w.t())`` with
    ``w`` a whole dense buffer: ``linear`` transposes ``w`` in C++, where a view made here costs
    a Python ``as_strided`` call per weight and call."""
    if kernel.op is aten.mm.default and not kernel.kwargs:
        (x, wt), bias = kernel.args, None
    elif kernel.op is aten.addmm.default and not kernel.kwargs:
        bias, x, wt = kernel.args
        if not isinstance(bias, ir.IRNode) or len(bias.get_size()) != 1:
            return None
    else:
        return None
    if not _whole_transpose(wt):
        return None
    return (x, wt.data) if bias is None else (x, wt.data, bias)


def _whole_transpose(a: Any) -> bool:
    """Is ``a`` the transpose of a whole dense 2-d buffer (what ``.t()`` of it returns)?"""
    if not isinstance(a, ir.ReinterpretView) or not isinstance(a.data, ir.Buffer):
        return False
    base, view = a.data.layout, a.layout
    if len(base.size) != 2 or view.offset != 0 or base.offset != 0:
        return False
    n, k = base.size
    return list(base.stride) == [k, 1] and list(view.size) == [k, n] and list(view.stride) == [1, k]


class LayoutMismatch(RuntimeError):
    """An aten kernel returned a tensor with other strides than its meta kernel promised."""


def _reinterpret(t: torch.Tensor, size: tuple, stride: tuple, offset: int) -> torch.Tensor:
    return torch.as_strided(t, size, stride, t.storage_offset() + offset)


def _check_layout(t: torch.Tensor, size: tuple, stride: tuple, name: str) -> None:
    if not isinstance(t, torch.Tensor):  # an undefined tensor the meta kernel made a tensor of
        raise LayoutMismatch(f"{name}: expected a tensor of size {size}, got {type(t).__name__}")
    if tuple(t.shape) != size or any(s != 1 and a != b for s, a, b in zip(size, t.stride(), stride)):
        raise LayoutMismatch(f"{name}: expected size {size} stride {stride}, got {tuple(t.shape)} {t.stride()}")


def wrapper_globals(device: torch.device | None, values: dict[str, Any], ops: dict[str, Any]) -> dict[str, Any]:
    """The globals a generated wrapper runs in: helpers, its constants and its extern ops."""
    env: dict[str, Any] = {"torch": torch, "_profiler": torch.autograd.profiler,
                           "empty_strided": torch.empty_strided, "device": device,
                           "linear": torch.nn.functional.linear, "reinterpret": _reinterpret,
                           "check_layout": _check_layout}
    env.update(values)
    env.update((name, _entry_point(op)) for name, op in ops.items())
    return env


class WrapperCodegen:
    def __init__(self, scheduler: Scheduler, kernels: dict[int, tuple[str, list[str]]],
                 device: torch.device | None = None, tensor_args: bool = False) -> None:
        """``kernels`` maps id(group) -> (kernel name, buffer names of its parameters);
        kernels get tensors when ``tensor_args``, else data pointers; buffers live on ``device``."""
        self.s = scheduler
        self.graph = scheduler.graph
        self.kernels = kernels
        self.tensor_args = tensor_args
        self.alloc_device = "" if device is None or device.type == "cpu" else ", device=device"
        self.values: dict[str, Any] = {}  # global name -> constant the source refers to
        self.ops: dict[str, Any] = {}     # global name -> extern op the source calls
        self.var: dict[str, str] = {}
        self.n_const = 0
        self.symbols: set[sympy.Symbol] = set()  # size symbols the source reads

    # -- values ------------------------------------------------------------------------------
    def _size(self, e: Any) -> str:
        """A size expression as Python source over the bound symbols."""
        e = sympy.sympify(e)
        self.symbols |= e.free_symbols
        return pyexpr(e)

    def _sizes(self, values: Sequence) -> str:
        return "(" + "".join(self._size(v) + ", " for v in values) + ")"

    def _const(self, value: Any) -> str:
        if isinstance(value, sympy.Basic):
            return self._size(value)
        if value is None or isinstance(value, (bool, str)):
            return repr(value)
        if isinstance(value, int):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
        return self._global(self.values, value)

    def _op(self, op: Any) -> str:
        return self._global(self.ops, op)

    def _global(self, table: dict[str, Any], value: Any) -> str:
        """A new global name for ``value`` in the wrapper's namespace, recorded in ``table``."""
        name = f"c{self.n_const}"
        self.n_const += 1
        table[name] = value
        return name

    def _dtype(self, dtype: torch.dtype) -> str:
        return f"torch.{str(dtype).split('.')[-1]}"

    def _arg(self, a: Any) -> str:
        """An extern kernel's argument: a view with its buffer's own layout is the buffer itself
        (the kernel reads the same elements; the graph never returns this value as it is)."""
        if isinstance(a, ir.ReinterpretView) and isinstance(a.data, ir.Buffer):
            base, view = a.data.layout, a.layout
            if list(view.size) == list(base.size) and list(view.stride) == list(base.stride) and view.offset == 0:
                return self.var[a.data.name]
        return self._value(a)

    def _value(self, a: Any) -> str:
        if _whole_transpose(a):  # a C method call, where ``reinterpret`` is a Python one
            return f"{self.var[a.data.name]}.t()"
        if isinstance(a, ir.ReinterpretView):
            lay = a.layout
            return f"reinterpret({self.var[a.data.name]}, {self._sizes(lay.size)}, {self._sizes(lay.stride)}, " \
                f"{self._size(lay.offset)})"
        if isinstance(a, ir.Buffer):
            return self.var[a.name]
        if isinstance(a, list):
            return "[" + ", ".join(self._value(x) for x in a) + "]"
        if isinstance(a, tuple):
            return "(" + "".join(self._value(x) + ", " for x in a) + ")"
        return self._const(a)

    # -- lifetimes ---------------------------------------------------------------------------
    def _group_reads(self, g: Any) -> set[str]:
        if isinstance(g, FusedGroup):
            return set(self.kernels[id(g)][1])
        if isinstance(g, EmptyGroup):
            return set()
        return set(g.read_names)

    def generate(self) -> str:
        """The wrapper's source; it runs in ``wrapper_globals(device, self.values, self.ops)``."""
        root = ir.storage_roots(self.graph.names)
        groups = self.s.groups
        last_use: dict[str, int] = {}
        for i, g in enumerate(groups):
            for name in self._group_reads(g) | g.names:
                if name in root:
                    last_use[root[name]] = i
        pinned = {root[ir.unwrap_storage_name(o)] for o in self.graph.outputs
                  if isinstance(o, (ir.Buffer, ir.ReinterpretView))}
        pinned |= {b.name for b in self.graph.inputs if b is not None}
        late = [m for m in self.graph.mutated.values() if not m.in_place]  # copied in at the end
        pinned |= {m.name for m in late}
        # extern outputs something reads or returns: the others are never bound (an aten kernel
        # may leave an output undefined where its meta kernel made one, e.g. cuDNN attention's
        # logsumexp when it is not asked for, which Python sees as None)
        used = set(pinned).union(*(self._group_reads(g) for g in groups))
        body: list[str] = []
        checked: list[str] = []
        pool: dict[tuple, list[str]] = {}
        live_vars: dict[str, list[str]] = {}  # root -> variable names holding it
        alloc_key: dict[str, tuple] = {}
        inputs = []
        for i, b in enumerate(self.graph.inputs):
            name = b.name if b is not None else scalar_input_name(i)
            inputs.append(name)
            if b is not None:
                self.var[name] = name
                lay = b.layout
                checked.append(f"check_layout({name}, {self._sizes(lay.size)}, {self._sizes(lay.stride)}, {name!r})")
        for c in self.graph.constants:
            self.var[c.name] = c.name
            self.values[c.name] = c.value
            pinned.add(c.name)
        n_var = 0
        for i, g in enumerate(groups):
            lines: list[str] = []
            check: list[str] = []
            if isinstance(g, (FusedGroup, EmptyGroup)):
                kname, params = self.kernels[id(g)] if isinstance(g, FusedGroup) else ("", [g.node.name])
                for name in params:
                    if isinstance(self.graph.names.get(name), ir.ScatterBuffer):
                        self.var[name] = self.var[self.graph.names[name].target.name]
                    elif name in g.names and name not in self.var:
                        lay = self.graph.names[name].layout
                        key = (tuple(lay.size), tuple(lay.stride), lay.dtype)
                        if pool.get(key):
                            var = pool[key].pop()
                        else:
                            var = f"b{n_var}"
                            n_var += 1
                            lines.append(f"{var} = empty_strided({self._sizes(key[0])}, {self._sizes(key[1])}, "
                                         f"dtype={self._dtype(lay.dtype)}{self.alloc_device})")
                        self.var[name] = var
                        alloc_key[name] = key
                        live_vars.setdefault(root[name], []).append(var)
            # an EmptyGroup computes no element: the allocation above is its whole result
            if isinstance(g, FusedGroup):
                args = ", ".join(self._kernel_arg(n) for n in params)
                lines.append(f"{kname}({args})")
            elif isinstance(g, ExternGroup):
                kernel = g.node.kernel
                linear_args = None if kernel.out else _as_linear(kernel)
                if linear_args is not None:
                    op, call = "linear", ", ".join(self._value(a) for a in linear_args)
                else:
                    op = self._op(kernel.op)
                    call = ", ".join([self._arg(a) for a in kernel.args] +
                                     [f"{k}={self._arg(v)}" for k, v in kernel.kwargs.items()])
                outs = [o for o in kernel.outputs if o.name in used or kernel.out]
                if kernel.out:  # into a result allocated in its layout (extern_layout.OUTPUT_RULES)
                    (o,) = outs
                    var = f"b{n_var}"
                    n_var += 1
                    lines.append(f"{var} = empty_strided({self._sizes(o.layout.size)}, {self._sizes(o.layout.stride)}, "
                                 f"dtype={self._dtype(o.layout.dtype)}{self.alloc_device})")
                    lines.append(f"{op}({call}, out={var})")
                    self.var[o.name] = var
                elif kernel.binds:  # the result decides sizes: bind them (unbacked.py)
                    tmp = f"r{n_var}"
                    n_var += 1
                    lines.append(f"{tmp} = {op}({call})")
                    lines += [f"{s.name} = {path_source(tmp, p)}" for s, p in kernel.binds.items()]
                    for o in outs:
                        var = f"b{n_var}"
                        n_var += 1
                        lines.append(f"{var} = {path_source(tmp, o.path)}")
                        self.var[o.name] = var
                elif isinstance(kernel.result_spec, (list, tuple)) and outs:
                    tmp = f"r{n_var}"
                    n_var += 1
                    lines.append(f"{tmp} = {op}({call})")
                    for o in outs:
                        var = f"b{n_var}"
                        n_var += 1
                        lines.append(f"{var} = {tmp}[{o.path[0]}]")
                        self.var[o.name] = var
                    lines.append(f"del {tmp}")
                elif outs:
                    var = f"b{n_var}"
                    n_var += 1
                    lines.append(f"{var} = {op}({call})")
                    self.var[outs[0].name] = var
                else:
                    lines.append(f"{op}({call})")
                for o in outs:
                    lines += [f"{sym.name} = {self.var[o.name]}.size({d})"
                              for sym, (name, d) in self.graph.unbacked.items() if name == o.name]
                for o in outs:
                    live_vars.setdefault(root[o.name], []).append(self.var[o.name])
                    lay = o.layout
                    check.append(f"check_layout({self.var[o.name]}, {self._sizes(lay.size)}, "
                                 f"{self._sizes(lay.stride)}, {o.name!r})")
            frees: list[str] = []
            for r, last in last_use.items():
                if last != i or r in pinned or r not in live_vars:
                    continue
                vars_ = live_vars.pop(r)
                if r in alloc_key and len(vars_) == 1:
                    pool.setdefault(alloc_key[r], []).append(vars_[0])
                else:
                    frees.append(f"del {', '.join(sorted(set(vars_)))}")
            body += lines + frees
            checked += lines + check + frees
        outs = ", ".join(self._output(o) for o in self.graph.outputs)
        ret = f"return ({outs}{',' if len(self.graph.outputs) == 1 else ''})"
        unpack = [f"{', '.join(inputs)}{',' if len(inputs) == 1 else ''} = args" if inputs else "pass"]
        unpack += self._bindings()
        body += [f"{m.target.name}.copy_({self.var[m.name]})" for m in late if m.name in self.var]
        kept, restore = self._keep_written_inputs()
        checked = kept + checked + [f"{m.target.name}.copy_({self.var[m.name]})" for m in late
                                    if m.name in self.var] + restore
        # C++ kernels are ctypes calls: while torch.profiler records, a twin names them (profiled.py)
        profiled = [] if self.tensor_args else ["if _profiler._is_profiler_enabled:", "    return _ranged(*args)"]
        src = ["def call(*args):"] + [f"    {l}" for l in profiled + unpack + body] + [f"    {ret}", ""]
        src += ["def call_checked(*args):"] + [f"    {l}" for l in unpack + checked] + [f"    {ret}", ""]
        return "\n".join(src)

    def _keep_written_inputs(self) -> tuple[list[str], list[str]]:
        """Lines that make the first (checked) call write copies of the inputs the graph writes,
        and then copy them into the inputs: an aten kernel returning another layout than its meta
        kernel raises ``LayoutMismatch`` midway, and the aten graph, which then runs the call
        again, must find the inputs as they were."""
        written = set(self.graph.mutated)
        for g in self.s.groups:
            if isinstance(g, ExternGroup) and g.node.kernel.mutates:
                written |= {ir.unwrap_storage_name(b) for b in g.node.kernel.input_buffers()}
        names = [b.name for b in self.graph.inputs if b is not None and b.name in written]
        kept = [f"{n}_in, {n} = {n}, empty_strided({n}.size(), {n}.stride(), dtype={n}.dtype, "
                f"device={n}.device).copy_({n})" for n in names]
        return kept, [f"{n} = {n}_in.copy_({n})" for n in names]  # the outputs name the inputs

    def _kernel_arg(self, param: str) -> str:
        if is_size_param(param):
            return self._size(sympy.Symbol(param.split(":", 1)[1]))
        return self.var[param] if self.tensor_args else f"{self.var[param]}.data_ptr()"

    def _bindings(self) -> list[str]:
        """``s0 = arg0.size(0)``... for every size symbol the source reads."""
        sources = {sym.name: src for sym, src in self.graph.symbol_sources.items()}
        lines = []
        unbacked = {s.name for s in self.graph.unbacked}
        for name in sorted({s.name for s in self.symbols} - unbacked):
            if name not in sources:
                raise SymbolicUnsupported(f"size symbol {name} is not a size of an input")
            if sources[name] is not None:  # None: bound after the extern that defines it
                lines.append(f"{name} = {sources[name]}")
        return lines

    def _output(self, o: Any) -> str:
        if isinstance(o, (ir.Buffer, ir.ReinterpretView)):
            return self._value(o)
        return self._const(o)
