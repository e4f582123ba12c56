"""Lowering of an aten fx graph into the loop IR.

Walks the graph node by node: ops with a lowering become IR (inlined into consumers until
realized), every other op becomes an :class:`~ir.ExternKernel` calling its aten kernel. The
result is the list of operations (computed buffers and extern kernels, in program order), the
graph inputs and the graph outputs.
"""
from __future__ import annotations

import logging
import operator
import re
from typing import Any, Sequence

import sympy
import torch
import torch.fx
from torch.utils import _pytree as pytree

from . import indexing, ir, unbacked
from .extern_layout import laid_out, non_overlapping, output_strides, same_sizes, same_strides, wanted
from .codegen.language import kernel_language
from .symbolic import SymbolicUnsupported, to_expr, to_exprs
from .lowering import LOWERINGS, REALIZED_INPUTS, NotLowerable

log = logging.getLogger("ember.inductor")
aten = torch.ops.aten

#: Ops run by aten even though they could be written as loops: vendor libraries do them better.
EXTERN_OPS = {aten.mm.default, aten.addmm.default, aten._addmm_activation.default, aten.bmm.default,
              aten.baddbmm.default, aten.convolution.default, aten.convolution_backward.default,
              aten._scaled_dot_product_flash_attention_for_cpu.default,
              aten._scaled_dot_product_efficient_attention.default}

#: ``relu(addmm(bias, a, b))`` on the GPU is one ``_addmm_activation`` call (the ReLU in
#: cuBLASLt's epilogue, or in place on the product) in float16 and bfloat16, and in float32 where
#: the product has at most this many elements; otherwise a plain ``mm`` and a Triton kernel for
#: bias and ReLU. On the H200 (``benchmarks/addmm_relu.py``, square weights of 256 to 4096
#: features, batch 1 to 4096, per call against eager): in bfloat16 the one call was ahead at every
#: size; in float32 it was ahead up to 2^16 elements (level at 8x4096) and behind with 4096
#: features from 2^18, where cuBLASLt picks slower kernels for the epilogue.
ADDMM_RELU_MAX_NUMEL = 1 << 16

#: A value read by several consumers is recomputed in each of them when cheaper than this.
INLINE_MAX_OPS = 24
INLINE_MAX_LOADS = 3


class GraphLowering:
    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm
        self.operations: list[Any] = []  # ComputedBuffer | ExternKernel, in program order
        # (id(input), dims, type, dtypes) -> (input, reduction): one sum of x for var's and mean's
        self.reductions: dict[tuple, tuple[Any, Any]] = {}
        self.inputs: list[Any] = []  # InputBuffer or None (non-tensor input)
        #: size symbol -> Python expression of the wrapper's inputs that gives its value (None: an
        #: unbacked symbol, bound after the extern kernel that defines it)
        self.symbol_sources: dict[sympy.Symbol, str | None] = {}
        #: unbacked size symbols that no node's bindings name (a while_loop's iteration count): the
        #: extern output and dimension whose size binds each, read right after that extern runs
        self.unbacked: dict[sympy.Symbol, tuple[str, int]] = {}
        self.outputs: list[Any] = []  # IR nodes (realized) or Python values
        self.env: dict[torch.fx.Node, Any] = {}
        self.names: dict[str, Any] = {}
        self.constants: list[ir.ConstantBuffer] = []
        self.mutated: dict[str, ir.MutationBuffer] = {}  # input name -> its new value
        self.fallback_ops: list[str] = []
        self.relu_in_addmm: set[torch.fx.Node] = set()  # ReLUs computed by their addmm (_relu_epilogue)
        self.runs_other_ops = False  # an extern kernel runs another op than its aten node's
        self._counter = 0
        self._current_node: torch.fx.Node | None = None
        self.device_type = graph_device(gm).type  # kernels are generated for this device's tensors
        self._gpu = kernel_language(self.device_type) == "triton"  # CUDA's libraries run the externs

    # -- buffers -------------------------------------------------------------------------
    def _new_name(self, prefix: str) -> str:
        name = f"{prefix}{self._counter}"
        self._counter += 1
        return name

    def new_computed_buffer(self, data: "ir.Pointwise | ir.Reduction", stride: Sequence[int] | None
                            ) -> ir.ComputedBuffer:
        """A buffer computed from ``data``, laid out with ``stride`` when a buffer can have it (no
        two elements at one address; gaps allowed, as a padded attention bias's), else contiguous."""
        size = list(data.get_size())
        if stride is None or len(stride) != len(size) or not non_overlapping(size, stride):
            stride = indexing.contiguous_strides(size)
        layout = ir.Layout(size, to_exprs(stride), data.get_dtype())
        buf = ir.ComputedBuffer(self._new_name("buf"), layout, data)
        buf.origin = _op_name(self._current_node)
        self.operations.append(buf)
        self.names[buf.name] = buf
        return buf

    def new_mutation_buffer(self, target: Any, data: ir.Pointwise) -> ir.MutationBuffer:
        """``data`` as the new value of the input ``target`` (``ir.MutationBuffer``): a whole
        input of distinct elements, written once; anything else raises ``NotLowerable``."""
        if not isinstance(target, ir.InputBuffer) or target.name in self.mutated \
                or not non_overlapping(target.layout.size, target.layout.stride):
            raise NotLowerable("copy_ into other than a graph input of distinct elements, or twice")
        buf = ir.MutationBuffer(self._new_name("buf"), target, data)
        buf.origin = "copy_"
        self.operations.append(buf)
        self.names[buf.name] = buf
        self.mutated[target.name] = buf
        return buf

    def new_scatter_buffer(self, target: ir.ComputedBuffer, data: ir.Scatter) -> ir.ScatterBuffer:
        """``target`` after ``data``'s adds into it, in place (``ir.ScatterBuffer``)."""
        buf = ir.ScatterBuffer(self._new_name("buf"), target, data)
        buf.origin = _op_name(self._current_node)
        self.operations.append(buf)
        self.names[buf.name] = buf
        return buf

    # -- walking the graph ---------------------------------------------------------------
    def run(self) -> "GraphLowering":
        ir.set_current_graph(self)
        try:
            for node in self.gm.graph.nodes:
                self._current_node = node
                self.env[node] = self._run_node(node)
        finally:
            ir.set_current_graph(None)
        return self

    def _run_node(self, node: torch.fx.Node) -> Any:
        if node.op == "placeholder":
            return self._placeholder(node)
        val = node.meta.get("val")
        binds = unbacked.bindings(node) if node.op == "call_function" else {}
        if binds:  # its result decides sizes (``nonzero``, ``item()``): run by aten, read by the wrapper
            return self._extern(node, self._map_args(node.args), self._map_args(node.kwargs), val, binds=binds)
        if isinstance(val, torch.SymBool) and node.op == "call_function":  # a condition (torch._check's)
            return to_expr(val)
        if isinstance(val, torch.SymBool) or (isinstance(val, torch.SymFloat) and node.op != "call_function"):
            raise SymbolicUnsupported(f"symbolic {type(val).__name__} {node.name}")
        if isinstance(val, torch.SymFloat):  # a float computed from sizes (``t / b``): a scalar
            return _size_value(val)          # the kernels compute from their size arguments
        if node.op == "call_function" and _is_sizes(val):
            # size arithmetic and queries (``sym_size``, ``aten.size``): the wrapper computes them
            return _size_value(val) if isinstance(val, torch.SymInt) else [_size_value(v) for v in val]
        if node.op == "output":
            self.outputs = []
            for v, n in zip(pytree.tree_leaves(self._map_args(node.args[0])), pytree.tree_leaves(node.args[0])):
                self._current_node = n if isinstance(n, torch.fx.Node) else node  # names the buffer
                self.outputs.append(self._output_value(v, n))
            return None
        if node.op == "get_attr":
            return self._constant(node)
        if node.target is operator.getitem:
            seq, i = self._map_args(node.args)
            return seq[i]
        if node.op != "call_function":
            raise NotLowerable(f"{node.op} node")
        if node in self.relu_in_addmm:
            return self.env[node.args[0]]
        args, kwargs = self._map_args(node.args), self._map_args(node.kwargs)
        val = node.meta.get("val")
        if node.target is aten.addmm.default and self._relu_epilogue(node, kwargs, val):
            self.relu_in_addmm.add(next(iter(node.users)))
            return self._extern(node, args, {}, val, op=aten._addmm_activation.default)
        if node.target is aten.addmm.default and _bias_add_fuses(node) and self._on_device(node, val):
            return self._mm_then_bias(node, args, kwargs, val)
        lowering = LOWERINGS.get(node.target)
        if lowering is not None and node.target not in EXTERN_OPS and self._on_device(node, val):
            if node.target in REALIZED_INPUTS:
                args = self._realize_lazy(args, node, REALIZED_INPUTS[node.target])
            try:
                result = lowering(*args, **kwargs)
                if _matches(result, val):
                    return self._postprocess(node, result, val)
                log.debug("lowering of %s gave a different size/dtype; using aten", node.target)
            except Exception as exc:  # NotLowerable, or a lowering bug: aten is always correct
                log.debug("no lowering for %s: %s: %s", node.target, type(exc).__name__, exc)
        return self._extern(node, args, kwargs, val)

    def _realize_lazy(self, args: Any, node: torch.fx.Node, positions: Sequence[int]) -> Any:
        """``args`` with the lazy values at ``positions`` computed into buffers (a view of a
        buffer as it is), in the strides the aten graph traced for them."""
        args = list(args)
        for i in positions:
            arg = node.args[i]
            if isinstance(args[i], ir.IRNode) and isinstance(arg, torch.fx.Node):
                args[i] = self._traced_layout(args[i], arg.meta.get("val"))
        return args

    def _traced_layout(self, value: ir.IRNode, traced: Any, op: Any = None, key: Any = None) -> ir.IRNode:
        """``value`` as argument ``key`` of the extern ``op`` (or as a buffer): in the strides of
        ``traced``, the fake tensor the aten graph recorded, which are the strides eager hands
        the kernel, or in those ``extern_layout.RULES`` ask for (``extern_layout``)."""
        if not isinstance(traced, torch.Tensor) or traced.layout != torch.strided:
            return value.as_tensor_arg()
        size = to_exprs(traced.shape)
        if not same_sizes(value.get_size(), size):
            return value.as_tensor_arg()
        stride, offset_multiple = wanted(op, key, size, to_exprs(traced.stride()), value.get_dtype(), self._gpu)
        return laid_out(value, stride, self.new_computed_buffer, offset_multiple)

    def _on_device(self, node: torch.fx.Node, val: Any) -> bool:
        """Are the node's result and its tensor inputs lowerable tensors on the graph's device?"""
        if not _lowerable_meta(val, self.device_type):
            return False
        for a in node.all_input_nodes:
            t = a.meta.get("val")
            if t is None and isinstance(self.env.get(a), ir.ConstantBuffer):
                t = self.env[a].value
            if isinstance(t, torch.Tensor) and t.device.type != self.device_type:
                return False
        return True

    def _placeholder(self, node: torch.fx.Node) -> Any:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            layout = ir.Layout(to_exprs(val.shape), to_exprs(val.stride()), val.dtype)
            buf = ir.InputBuffer(f"arg{len(self.inputs)}", layout)
            for kind, values in (("size", layout.size), ("stride", layout.stride)):
                for d, e in enumerate(values):
                    if e.is_Symbol:
                        self.symbol_sources.setdefault(e, f"{buf.name}.{kind}({d})")
            self.names[buf.name] = buf
            self.inputs.append(buf)
            return buf
        self.inputs.append(None)
        if isinstance(val, torch.SymInt):
            value = _size_value(val)
            if isinstance(value, sympy.Symbol):
                self.symbol_sources.setdefault(value, scalar_input_name(len(self.inputs) - 1))
            return value
        if isinstance(val, (torch.SymFloat, torch.SymBool)):
            raise SymbolicUnsupported(f"symbolic {type(val).__name__} input {node.name}")
        return val

    def _constant(self, node: torch.fx.Node) -> Any:
        value = self.gm
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            return value
        layout = ir.Layout(to_exprs(value.shape), to_exprs(value.stride()), value.dtype)
        buf = ir.ConstantBuffer(self._new_name("const"), layout, value)
        self.names[buf.name] = buf
        self.constants.append(buf)
        return buf

    def _map_args(self, a: Any) -> Any:
        return torch.fx.node.map_arg(a, lambda n: self.env[n])

    def _postprocess(self, node: torch.fx.Node, result: Any, val: Any) -> Any:
        if isinstance(result, (list, tuple)):
            return type(result)(self._postprocess(node, r, v) for r, v in zip(result, val))
        stride = to_exprs(val.stride())
        if isinstance(result, ir.Reduction):
            return result.realize(stride)
        if isinstance(result, ir.Pointwise) and result._realized is None and len(node.users) > 1:
            n_ops, n_loads = result.cost()
            if n_ops > INLINE_MAX_OPS or n_loads > INLINE_MAX_LOADS:
                return result.realize(stride)
        return result

    def _relu_epilogue(self, node: torch.fx.Node, kwargs: Any, val: Any) -> bool:
        """Is ``node`` an ``addmm`` of a Triton graph (a GPU's, or the interpreter's), half
        precision or small (``ADDMM_RELU_MAX_NUMEL``), with a 1-d bias, whose one use is a ReLU?"""
        if kernel_language(self.device_type) != "triton" or kwargs or len(node.users) != 1:
            return False
        (user,) = node.users
        bias = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
        return (user.target is aten.relu.default and isinstance(val, torch.Tensor)
                and val.dtype in (torch.float32, torch.float16, torch.bfloat16)
                and not any(isinstance(s, torch.SymInt) for s in val.shape)
                and (val.dtype != torch.float32 or val.numel() <= ADDMM_RELU_MAX_NUMEL)
                and isinstance(bias, torch.Tensor) and bias.dim() == 1 and self._on_device(node, val))

    def _mm_then_bias(self, node: torch.fx.Node, args: Any, kwargs: Any, val: Any) -> Any:
        """``addmm(bias, a, b)`` whose result only feeds kernels: a plain ``mm`` (cuBLAS picks
        faster kernels for it than for addmm's bias epilogue, measured on a 1024x3072x768 fp32
        product on the H100; ``benchmarks/addmm_relu.py`` times such forms) and a bias add that fuses into the consumers."""
        bias, mat1, mat2 = args
        if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1 or not isinstance(bias, ir.IRNode):
            return self._extern(node, args, kwargs, val)
        product = self._extern(node, (mat1, mat2), {}, val, op=aten.mm.default)
        return self._postprocess(node, LOWERINGS[aten.add.Tensor](product, bias), val)

    def _extern(self, node: torch.fx.Node, args: Any, kwargs: Any, val: Any,
                op: torch._ops.OpOverload | None = None, binds: dict | None = None) -> Any:
        """``node`` run by its aten kernel; ``binds``: the unbacked symbols its result defines."""
        op = op or node.target
        self.runs_other_ops |= op is not node.target
        if op not in EXTERN_OPS:
            self.fallback_ops.append(str(op))
        schema = getattr(op, "_schema", None)
        # an op that returns nothing (`_assert_async`) is there for its effect: kept, like a mutation
        mutates = bool(schema is not None and (schema.is_mutable or not schema.returns))
        mutates = mutates or bool(binds)  # defining symbols: a barrier no reader of them moves across
        traced: dict[int, Any] = {}  # id(IR value) -> the fake tensor eager's kernel would get
        for a in node.all_input_nodes:
            traced.setdefault(id(self.env.get(a)), a.meta.get("val"))
        if mutates:  # the kernel writes into its arguments: the buffers themselves, never copies
            for value in (self.env.get(a) for a in node.all_input_nodes):
                if isinstance(value, ir.Pointwise) and value._realized is None \
                        and isinstance(traced[id(value)], torch.Tensor):
                    value.realize(to_exprs(traced[id(value)].stride()))
            self._realize_pending()

        def to_arg(key: Any, value: Any) -> Any:
            def one(a: Any) -> Any:
                if not isinstance(a, ir.IRNode):
                    return a
                return a.as_tensor_arg() if mutates else self._traced_layout(a, traced.get(id(a)), op, key)
            return pytree.tree_map(one, value, is_leaf=lambda a: isinstance(a, ir.IRNode))
        args = tuple(to_arg(i, a) for i, a in enumerate(args))
        kwargs = {k: to_arg(k, v) for k, v in kwargs.items()}
        kernel = ir.ExternKernel(self._new_name("extern"), op, tuple(args), dict(kwargs), mutates=mutates,
                                 binds=binds or {})
        for symbol in kernel.binds:
            self.symbol_sources[symbol] = None  # bound where the kernel runs (unbacked.py)
        alias_of = None
        if schema is not None and any(r.alias_info is not None for r in schema.returns):
            inputs = kernel.input_buffers()
            alias_of = ir.unwrap_storage_name(inputs[0]) if inputs else None

        def make_output(v: Any, path: tuple) -> Any:
            if not isinstance(v, torch.Tensor):
                if isinstance(v, torch.SymInt) and to_expr(v) in kernel.binds:  # item(): the symbol itself
                    return to_expr(v)
                if isinstance(v, torch.SymInt) and v.node.expr.free_symbols:
                    raise SymbolicUnsupported(f"{op} returns a symbolic int")
                return v
            layout = ir.Layout(to_exprs(v.shape), to_exprs(v.stride()), v.dtype)
            stride = None if path or mutates or binds else output_strides(op, layout.size, layout.stride, v.dtype, self._gpu)
            if stride is not None:  # allocated by the wrapper, passed as out=
                layout = ir.Layout(layout.size, stride, v.dtype)
                kernel.out = True
            out = ir.ExternOutput(self._new_name("buf"), layout, kernel, path, alias_of)
            self.names[out.name] = out
            for d, e in enumerate(layout.size):
                if e.is_Symbol and e not in self.symbol_sources:
                    self.unbacked[e] = (out.name, d)
                    self.symbol_sources[e] = f"{out.name}.size({d})"
            kernel.outputs.append(out)
            return out
        if isinstance(val, (list, tuple)):
            result = type(val)(make_output(v, (i,)) for i, v in enumerate(val))
        else:
            result = make_output(val, ())
        kernel.result_spec = result
        self.operations.append(kernel)
        return result

    def _realize_pending(self) -> None:
        """Before an op that mutates its inputs, compute every value that is still lazy."""
        for value in list(self.env.values()):
            for leaf in pytree.tree_leaves(value):
                if isinstance(leaf, (ir.Pointwise, ir.View)) and leaf._realized is None:
                    leaf.realize()

    def _output_value(self, value: Any, node: Any) -> Any:
        if not isinstance(value, ir.IRNode):
            return value
        val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        stride = to_exprs(val.stride()) if isinstance(val, torch.Tensor) else None
        if isinstance(value, ir.View) and value._realized is None:
            view = value.as_strided() if _is_view_op(node) else None
            if view is not None and (stride is None or _aliases_an_input(view)
                                     or same_strides(view.layout, view.get_size(), stride)):
                return view
            # a view of a computed buffer laid out otherwise than eager's (a padded attention
            # bias's slice, saved for the backward): what the backward was compiled for
            return value.realize(stride) if view is None else self._traced_layout(value, val)
        if isinstance(value, ir.InputBuffer) and not (node.op == "placeholder" or _is_view_op(node)):
            return ir.Pointwise(value.get_size(), value.get_dtype(), value.make_loader()).realize(stride)
        if isinstance(value, ir.ExternOutput) and value.kernel.out and val is not None:
            return self._traced_layout(value, val)  # a result allocated padded: eager's strides
        if isinstance(value, (ir.Buffer, ir.ReinterpretView)):
            return value
        return value.realize(stride)


def _aliases_an_input(view: ir.ReinterpretView) -> bool:
    """Is ``view`` a view of an input, a constant or an aten output aliasing one (so that, as an
    output, it must stay one: the caller may write through it)?"""
    data = view.data
    return isinstance(data, (ir.InputBuffer, ir.ConstantBuffer)) or bool(getattr(data, "alias_of", None))


def _is_sizes(val: Any) -> bool:
    """Is ``val`` a symbolic int, or a list of ints with a symbolic one (``aten.size``)?"""
    if isinstance(val, torch.SymInt):
        return True
    return isinstance(val, (list, tuple)) and any(isinstance(v, torch.SymInt) for v in val) \
        and all(isinstance(v, (int, torch.SymInt)) for v in val)


def _size_value(val: Any) -> Any:
    """A SymInt (SymFloat) of the graph as the lowerings see it: a plain int (float) when static."""
    expr = to_expr(val)
    if expr.is_Integer:
        return int(expr)
    return float(expr) if expr.is_Number else expr


def scalar_input_name(position: int) -> str:
    """The wrapper's variable of a non-tensor input."""
    return f"scalar{position}"


def _bias_add_fuses(node: torch.fx.Node) -> bool:
    """Is every use of ``node`` (through view ops) a loop kernel, so an add would fuse into it?"""
    for user in node.users:
        if user.op != "call_function" or user.target in EXTERN_OPS or user.target not in LOWERINGS:
            return False
        if _is_view_op(user) and not _bias_add_fuses(user):
            return False
    return True


def _op_name(node: torch.fx.Node | None) -> str:
    """The name of the aten op whose lowering realized a buffer (``native_batch_norm``), for
    kernel names; "" for the graph's output and placeholders."""
    if node is None or node.op != "call_function":
        return ""
    target = node.target
    name = getattr(target, "_opname", None) or getattr(target, "__name__", "")
    return re.sub(r"\W", "_", name)


def _is_view_op(node: Any) -> bool:
    """Does this fx node return an alias of its input (so the output may alias it too)?"""
    schema = getattr(getattr(node, "target", None), "_schema", None)
    return schema is not None and any(r.alias_info is not None for r in schema.returns)


def graph_device(gm: torch.fx.GraphModule) -> torch.device:
    """The device kernels are generated for: that of the tensors the graph computes on, the one
    decision the lowering and the wrapper share. A CPU tensor beside CUDA ones (a mask made from
    numpy, an optimizer's step count, an index) is an argument of the CUDA graph, not its device:
    a CPU tensor first among the inputs made every CUDA op of wav2vec2's masked backward an aten
    call. A graph that makes CUDA tensors from no CUDA input (``torch.zeros(device="cuda")``) is
    a CUDA graph too."""
    devices = (val.device for node in gm.graph.nodes if isinstance(val := node.meta.get("val"), torch.Tensor))
    return next((d for d in devices if d.type != "cpu"), torch.device("cpu"))


def _lowerable_meta(val: Any, device_type: str) -> bool:
    leaves = pytree.tree_leaves(val)
    return bool(leaves) and all(isinstance(v, torch.Tensor) and v.device.type == device_type
                                and not v.dtype.is_complex for v in leaves)


def _matches(result: Any, val: Any) -> bool:
    if isinstance(val, (list, tuple)):
        return isinstance(result, (list, tuple)) and len(result) == len(val) and all(
            _matches(r, v) for r, v in zip(result, val))
    return (isinstance(result, ir.IRNode) and isinstance(val, torch.Tensor)
            and same_sizes(result.get_size(), to_exprs(val.shape))
            and result.get_dtype() == val.dtype)
