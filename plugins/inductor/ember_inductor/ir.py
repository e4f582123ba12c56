"""The loop-level IR: buffers defined by Python functions of their index.

Unrealized values (:class:`Pointwise`, :class:`Reduction`, :class:`View`) are closures that are
inlined into their consumers; realizing one turns it into a :class:`ComputedBuffer` that the
scheduler will turn into (part of) a kernel. :class:`ExternKernel` runs an aten kernel (matmul,
convolution, or any op without a lowering) on realized tensors. Sizes, strides and indices are
sympy expressions.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable, Sequence

import sympy
import torch

from . import indexing
from .indexing import Expr
from .symbolic import to_exprs
from .virtualized import RecordingHandler, ops, set_handler

_current = threading.local()


def current_graph() -> Any:
    return _current.graph


def set_current_graph(graph: Any) -> None:
    _current.graph = graph


@dataclasses.dataclass
class Layout:
    size: list
    stride: list
    dtype: torch.dtype
    offset: Any = 0

    def index(self, idx: Sequence[Expr]) -> Expr:
        out = sympy.sympify(self.offset)
        for s, st, i in zip(self.size, self.stride, idx):
            if s != 1:
                out = out + st * i
        return out


class IRNode:
    """Anything with a size, a dtype and a loader."""

    def get_size(self) -> list:
        raise NotImplementedError

    def get_dtype(self) -> torch.dtype:
        raise NotImplementedError

    def make_loader(self) -> Callable[[Sequence[Expr]], Any]:
        raise NotImplementedError

    def realize(self, stride: Sequence[int] | None = None) -> "Buffer":
        raise NotImplementedError

    def as_tensor_arg(self) -> "Buffer | ReinterpretView":
        """A realized value that can be handed to an aten kernel as a tensor."""
        return self.realize()

    def numel(self) -> Expr:
        return indexing.numel(self.get_size())


class Buffer(IRNode):
    def __init__(self, name: str, layout: Layout) -> None:
        self.name = name
        self.layout = layout

    def get_size(self) -> list:
        return list(self.layout.size)

    def get_dtype(self) -> torch.dtype:
        return self.layout.dtype

    def make_loader(self) -> Callable:
        name, layout = self.name, self.layout
        return lambda idx: ops.load(name, layout.index(idx))

    def realize(self, stride: Sequence[int] | None = None) -> "Buffer":
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, size={self.layout.size}, stride={self.layout.stride}, {self.layout.dtype})"


class InputBuffer(Buffer):
    pass


class ConstantBuffer(Buffer):
    """A tensor attribute of the graph module (``get_attr``), handed to the wrapper as is."""

    def __init__(self, name: str, layout: Layout, value: torch.Tensor) -> None:
        super().__init__(name, layout)
        self.value = value


class ComputedBuffer(Buffer):
    """A buffer whose contents are computed by generated code from ``data``."""

    def __init__(self, name: str, layout: Layout, data: "Pointwise | Reduction") -> None:
        super().__init__(name, layout)
        self.data = data
        self.origin = ""  # the aten op whose lowering realized it (kernel names)

    def is_reduction(self) -> bool:
        return isinstance(self.data, Reduction)

    def ranges(self) -> tuple[list, list]:
        if isinstance(self.data, Reduction):
            return list(self.data.size), list(self.data.rsize)
        return list(self.data.size), []

    def store_fn(self) -> Callable:
        """``body(index, rindex)`` that computes and stores this buffer's value at ``index``."""
        name, layout, data = self.name, self.layout, self.data
        if isinstance(data, Reduction):
            def body(idx: Sequence[Expr], ridx: Sequence[Expr]) -> None:
                value = data.inner_fn(idx, ridx)
                red = ops.reduction(data.dtype, data.src_dtype, data.reduction_type, value)
                ops.store_reduction(name, layout.index(idx), red)
        else:
            def body(idx: Sequence[Expr], ridx: Sequence[Expr]) -> None:
                ops.store(name, layout.index(idx), data.inner_fn(idx))
        return body


class Scatter:
    """An accumulating write: ``target[index(i)] += value(i)`` for every ``i`` of ``size``, where
    ``index`` may hold loaded (indirect) indices, so several ``i`` may add to one element. The adds
    are atomic and in no particular order (a float sum's last bits vary from run to run)."""

    def __init__(self, size: Sequence, index_fn: Callable, value_fn: Callable) -> None:
        self.size = to_exprs(size)
        self.index_fn = index_fn  # i -> the target's index (a list of expressions)
        self.value_fn = value_fn  # i -> the ops value to add


class ScatterBuffer(ComputedBuffer):
    """The result of a :class:`Scatter` into ``target``: the same storage, written in place once
    ``target``'s own kernel has run. Its kernel is never fused with another (``fusable``): its
    adds land anywhere in ``target``, so no other loop may read or write ``target`` beside it."""

    def __init__(self, name: str, target: ComputedBuffer, data: Scatter) -> None:
        super().__init__(name, target.layout, data)  # type: ignore[arg-type]
        self.target = target

    def store_fn(self) -> Callable:
        name, layout, data = self.name, self.layout, self.data

        def body(idx: Sequence[Expr], ridx: Sequence[Expr]) -> None:
            ops.atomic_add(name, layout.index(data.index_fn(idx)), data.value_fn(idx))
        return body


class MutationBuffer(ComputedBuffer):
    """The new value of the graph input ``target`` (the aten graph's ``copy_(target, value)``):
    the same layout as ``target``. While ``in_place`` (the scheduler decides, ``mutation``), its
    kernel stores straight into ``target``'s memory, and no other buffer is allocated; otherwise
    into a buffer of its own, which the wrapper copies into ``target`` once every kernel has run."""

    def __init__(self, name: str, target: InputBuffer, data: Pointwise) -> None:
        super().__init__(name, target.layout, data)
        self.target = target
        self.in_place = True

    def store_fn(self) -> Callable:
        name, layout, load = self.target.name if self.in_place else self.name, self.layout, self.data.inner_fn

        def body(idx: Sequence[Expr], ridx: Sequence[Expr]) -> None:
            ops.store(name, layout.index(idx), load(idx))
        return body


class ExternOutput(Buffer):
    """One tensor returned by an :class:`ExternKernel`; ``alias_of`` names the buffer it views."""

    def __init__(self, name: str, layout: Layout, kernel: "ExternKernel", path: tuple,
                 alias_of: str | None) -> None:
        super().__init__(name, layout)
        self.kernel = kernel
        self.path = path
        self.alias_of = alias_of


class ReinterpretView(IRNode):
    """A strided view of a realized buffer (no copy); passed to aten kernels via as_strided."""

    def __init__(self, data: Buffer, layout: Layout) -> None:
        self.data = data
        self.layout = layout

    def get_size(self) -> list:
        return list(self.layout.size)

    def get_dtype(self) -> torch.dtype:
        return self.layout.dtype

    def make_loader(self) -> Callable:
        name, layout = self.data.name, self.layout
        return lambda idx: ops.load(name, layout.index(idx))

    def realize(self, stride: Sequence[int] | None = None) -> Buffer:
        return Pointwise(self.get_size(), self.get_dtype(), self.make_loader()).realize(stride)

    def as_tensor_arg(self) -> "ReinterpretView":
        return self


class Pointwise(IRNode):
    def __init__(self, size: Sequence, dtype: torch.dtype, inner_fn: Callable) -> None:
        self.size = to_exprs(size)
        self.dtype = dtype
        self.inner_fn = inner_fn
        self._realized: Buffer | None = None

    def get_size(self) -> list:
        return list(self.size)

    def get_dtype(self) -> torch.dtype:
        return self.dtype

    def make_loader(self) -> Callable:
        if self._realized is not None:
            return self._realized.make_loader()
        return self.inner_fn

    def realize(self, stride: Sequence[int] | None = None) -> Buffer:
        if self._realized is None:
            self._realized = current_graph().new_computed_buffer(self, stride)
        return self._realized

    def cost(self) -> tuple[int, int]:
        """(number of ops, number of distinct loads that stream along the innermost dimension) of
        the inlined body: a value read once per row or once in all (a label, a loss's scale) is
        in cache wherever it is recomputed, so nll_loss's gradient, read by a row sum and by the
        log-softmax gradient, is recomputed in both rather than written as a float32 tensor of
        tokens x vocabulary (GPT-2: 1.65 GB)."""
        rec = RecordingHandler()
        index = indexing.make_vars("c", len(self.size))
        with set_handler(rec):
            self.inner_fn(index)
        inner = index[-1] if index else None
        streamed = {(name, expr) for name, expr in rec.loads
                    if inner is None or inner in getattr(sympy.sympify(expr), "free_symbols", ())}
        return rec.num_ops, len(streamed)


class Reduction(IRNode):
    def __init__(self, size: Sequence, rsize: Sequence, reduction_type: str, inner_fn: Callable,
                 dtype: torch.dtype, src_dtype: torch.dtype) -> None:
        self.size = to_exprs(size)
        self.rsize = to_exprs(rsize)
        self.reduction_type = reduction_type
        self.inner_fn = inner_fn
        self.dtype = dtype
        self.src_dtype = src_dtype
        self._realized: Buffer | None = None

    def get_size(self) -> list:
        return list(self.size)

    def get_dtype(self) -> torch.dtype:
        return self.dtype

    def make_loader(self) -> Callable:
        return self.realize().make_loader()

    def realize(self, stride: Sequence[int] | None = None) -> Buffer:
        if self._realized is None:
            self._realized = current_graph().new_computed_buffer(self, stride)
        return self._realized


class View(IRNode):
    """``base`` seen through an index rewrite: ``self[idx] = base[reindex(idx)]``.

    A chain of views is read through one composed rewrite, simplified on the view's own index
    ranges (``index_map``): the index of a view of a view... stays the size of one simplified
    rewrite however long the chain, where composing the rewrites one inside the other grew it
    by the rank at each view."""

    def __init__(self, base: IRNode, size: Sequence, reindex: Callable) -> None:
        self.base = base
        self.size = to_exprs(size)
        self.reindex = reindex
        self._realized: Buffer | None = None
        self._map: tuple[IRNode, list, list] | None = None

    def get_size(self) -> list:
        return list(self.size)

    def get_dtype(self) -> torch.dtype:
        return self.base.get_dtype()

    def index_map(self) -> tuple[IRNode, list, list]:
        """``(root, variables, index)``: ``self[variables]`` is ``root[index]``, with ``root``
        the nearest base that is not an unrealized view (recomputed when that changes)."""
        base = self.base
        inner = base.index_map() if isinstance(base, View) and base._realized is None else None
        root = base if inner is None else inner[0]
        if self._map is None or self._map[0] is not root:
            variables = indexing.make_vars("v", len(self.size))
            index = self.reindex(variables)
            if inner is not None:
                sub = dict(zip(inner[1], index))
                index = [sympy.sympify(e).xreplace(sub) for e in inner[2]]
            ranges = dict(zip(variables, self.size))
            self._map = (root, variables, [indexing.simplify_index(e, ranges) for e in index])
        return self._map

    def make_loader(self) -> Callable:
        if self._realized is not None:
            return self._realized.make_loader()
        root, variables, index = self.index_map()
        root_loader = root.make_loader()

        def load(idx: Sequence[Expr]) -> Any:
            sub = dict(zip(variables, idx))
            return root_loader([sympy.sympify(e).xreplace(sub) for e in index])
        return load

    def as_strided(self) -> ReinterpretView | None:
        """This view as a strided view of a realized buffer, when it is one."""
        root, variables, index = self.index_map()
        root = getattr(root, "_realized", None) or root
        if isinstance(root, ReinterpretView):
            buf, layout = root.data, root.layout
        elif isinstance(root, Buffer):
            buf, layout = root, root.layout
        else:
            return None
        expr = indexing.simplify_index(layout.index(index), dict(zip(variables, self.size)))
        lin = indexing.as_linear(expr, variables)
        if lin is None or not all(_is_size(e) for e in [lin[0], *lin[1]]):
            return None
        offset, strides = lin
        return ReinterpretView(buf, Layout(list(self.size), list(strides), buf.get_dtype(), offset))

    def as_tensor_arg(self) -> "Buffer | ReinterpretView":
        if self._realized is not None:
            return self._realized
        view = self.as_strided()
        return view if view is not None else self.realize()

    def realize(self, stride: Sequence[int] | None = None) -> Buffer:
        if self._realized is None:
            pw = Pointwise(self.size, self.get_dtype(), self.make_loader())
            self._realized = pw.realize(stride)
        return self._realized


@dataclasses.dataclass
class ExternKernel:
    """An aten kernel call on realized tensors (matmul, convolution, fallbacks)."""

    name: str
    op: Any
    args: tuple
    kwargs: dict
    outputs: list = dataclasses.field(default_factory=list)
    result_spec: Any = None  # pytree of output names / None mirroring the op's return value
    mutates: bool = False
    out: bool = False  # the wrapper allocates the (one) output in its layout and passes it as out=
    binds: dict = dataclasses.field(default_factory=dict)  # unbacked symbol -> key path in the result

    def input_buffers(self) -> list[IRNode]:
        out: list[IRNode] = []

        def visit(a: Any) -> None:
            if isinstance(a, (Buffer, ReinterpretView)):
                out.append(a)
            elif isinstance(a, (list, tuple)):
                for x in a:
                    visit(x)
        for a in self.args:
            visit(a)
        for a in self.kwargs.values():
            visit(a)
        return out


def _is_size(e: Expr) -> bool:
    """Is ``e`` a constant or a polynomial of the size symbols, never negative (a stride or
    offset the wrapper can compute)?"""
    e = sympy.sympify(e)
    if e.is_Integer:
        return int(e) >= 0
    return all(not isinstance(a, (indexing.FloorDiv, indexing.ModularIndexing)) for a in sympy.preorder_traversal(e)) \
        and e.is_polynomial() and all(c.is_Integer and c >= 0 for c in sympy.Poly(e).coeffs())


def storage_roots(names: dict[str, Any]) -> dict[str, str]:
    """Buffer name -> the name of the buffer whose memory it is (an aten output viewing another
    buffer: that one's; a scatter: its target's), for every buffer of the graph."""
    root: dict[str, str] = {}
    for name in names:
        r, seen = name, set()
        while r not in seen:
            seen.add(r)
            buf = names.get(r)
            if isinstance(buf, ExternOutput) and buf.alias_of:
                r = buf.alias_of
            elif isinstance(buf, ScatterBuffer):
                r = buf.target.name
            else:
                break
        root[name] = r
    return root


def unwrap_storage_name(node: IRNode) -> str:
    if isinstance(node, ReinterpretView):
        return node.data.name
    assert isinstance(node, Buffer)
    return node.name
