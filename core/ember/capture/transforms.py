"""torch.func transforms inside captured code: ``grad``, ``vmap``, ``jacrev``, ``jacfwd``, ``hessian``, ``jvp``.

``torch.func.grad(f, argnums=1)`` made in captured code is a :class:`TransformedVar` (the
transform, the function and its options, which must be known now). Calling it speculates ``f``
into a subgraph (:mod:`.subgraphs`) on the arguments the transform hands it (``vmap``: one slice
along each ``in_dims``), then traces the transform applied to that subgraph with ``make_fx`` on
the call's fake tensors: functorch computes the gradients or the batching, and the trace holds
plain aten ops, which are copied into the graph where the call was. Values the body lifted from
outside it are inputs of the trace, held constant by the transform (as torch.func holds closure
variables). ``jvp(f, primals, tangents)`` is the same done at once.
"""
from __future__ import annotations

import dataclasses
import inspect
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._pytree import tree_flatten, tree_unflatten

from ..errors import Unsupported
from .builtin_calls import handles
from .constants import NotConstant, python_value
from .dispatch import handles_call
from .subgraphs import speculate
from .values import ConstVar, DictVar, Identity, ListVar, TensorVar, TupleVar, UserDictVar, Var

if TYPE_CHECKING:
    from .frame import Frame

#: transforms that return a new function, with the names of their options
_RETURNS_FUNCTION = (torch.func.grad, torch.func.grad_and_value, torch.func.vmap, torch.func.jacrev,
                     torch.func.jacfwd, torch.func.hessian)


@dataclasses.dataclass(eq=False)
class TransformedVar(Var):
    """``transform(fn, **options)`` made in captured code, not called yet."""

    transform: Callable[..., Any]
    fn: Var
    options: dict[str, Any]

    def python_type(self) -> type:
        return types.FunctionType


class _Slot:
    """Where the n-th tensor goes in a Python structure rebuilt around traced tensors."""

    def __init__(self, index: int) -> None:
        self.index = index


def _structure(frame: "Frame", var: Var, tensors: list[TensorVar]) -> Any:
    """``var`` as a Python value with a :class:`_Slot` for each tensor (appended to ``tensors``)."""
    if isinstance(var, TensorVar):
        tensors.append(var)
        return _Slot(len(tensors) - 1)
    if isinstance(var, TupleVar) and var.tuple_type is tuple:
        return tuple(_structure(frame, v, tensors) for v in var.items)
    if isinstance(var, ListVar):
        return [_structure(frame, v, tensors) for v in var.items]
    if isinstance(var, DictVar) and not isinstance(var, UserDictVar) \
            and not any(isinstance(k, Identity) for k in var.items):
        return {k: _structure(frame, v, tensors) for k, v in var.items.items()}
    try:
        return python_value(var)
    except NotConstant:
        frame.fail(f"a torch.func transform's argument holds a {type(var).__name__}")
    raise AssertionError


def _fill(structure: Any, values: list[Any]) -> Any:
    if isinstance(structure, _Slot):
        return values[structure.index]
    if isinstance(structure, (tuple, list)):
        return type(structure)(_fill(v, values) for v in structure)
    if isinstance(structure, dict):
        return {k: _fill(v, values) for k, v in structure.items()}
    return structure


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of a Python structure, in :func:`_structure`'s order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _rebuild(structure: Any, items: list[Var]) -> Var:
    if isinstance(structure, _Slot):
        return items[structure.index]
    if isinstance(structure, tuple):
        return TupleVar([_rebuild(v, items) for v in structure])
    if isinstance(structure, list):
        return ListVar([_rebuild(v, items) for v in structure])
    if isinstance(structure, dict):
        return DictVar({k: _rebuild(v, items) for k, v in structure.items()})
    return ConstVar(structure)


def _maker(transform: Callable[..., Any]) -> Callable[..., Var]:
    def make(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
        if not args:
            frame.fail(f"torch.func.{transform.__name__} without a function")
        try:
            options = inspect.signature(transform).bind(None, *(python_value(a) for a in args[1:]),
                                                        **{k: python_value(v) for k, v in kwargs.items()})
        except (NotConstant, TypeError) as exc:
            frame.fail(f"torch.func.{transform.__name__}'s options are not constants: {exc}")
            raise AssertionError from exc
        options.apply_defaults()
        found = dict(options.arguments)
        found.pop(next(iter(found)))  # the function
        return TransformedVar(transform, args[0], found)

    return make


for _transform in _RETURNS_FUNCTION:
    handles(_transform)(_maker(_transform))


def _inner_fakes(var: TransformedVar, args: list[Var], frame: "Frame") -> list[torch.Tensor]:
    """The fake tensors the body sees: the arguments', or one slice along ``in_dims`` (vmap)."""
    if var.transform is not torch.func.vmap:
        return [t.fake for t in _flat(frame, TupleVar(list(args)))]
    in_dims = var.options.get("in_dims", 0)
    if not isinstance(in_dims, (tuple, list)):
        in_dims = [in_dims] * len(args)
    if len(in_dims) != len(args):
        frame.fail("vmap's in_dims of another length than its arguments")
    fakes = []
    with frame.state.graph.fake_mode:
        for arg, dims in zip(args, in_dims):
            tensors = _flat(frame, arg)
            leaves = tree_flatten(dims)[0] if isinstance(dims, (tuple, list, dict)) else [dims] * len(tensors)
            if len(leaves) != len(tensors) or any(not (d is None or isinstance(d, int)) for d in leaves):
                frame.fail("vmap's in_dims of an argument: not an int, None, or one per tensor of it")
            fakes += [t.fake if dim is None else _sample(t.fake, dim) for t, dim in zip(tensors, leaves)]
    return fakes


def _sample(fake: torch.Tensor, dim: int) -> torch.Tensor:
    """One sample of ``fake`` along ``dim`` (a batch of none has samples of that shape too)."""
    if fake.shape[dim] == 0:
        shape = list(fake.shape)
        del shape[dim]
        return fake.new_empty(shape)
    return fake.select(dim, 0)


def _flat(frame: "Frame", var: Var) -> list[TensorVar]:
    tensors: list[TensorVar] = []
    _structure(frame, var, tensors)
    return tensors


@handles_call(TransformedVar)
def _call_transformed(frame: "Frame", fn: TransformedVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if kwargs:
        frame.fail(f"a torch.func.{fn.transform.__name__} function called with keyword arguments")
    transform, options = fn.transform, fn.options
    return trace(frame, fn.fn, TupleVar(list(args)), _inner_fakes(fn, args, frame),
                 lambda body, *call_args: transform(body, **options)(*call_args), transform.__name__)


@handles(torch.func.jvp)
def _jvp(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    if len(args) != 3 or kwargs or not isinstance(args[1], TupleVar):
        frame.fail("torch.func.jvp(f, primals, tangents) with other arguments")
    fn, primals = args[0], args[1]
    fakes = [t.fake for t in _flat(frame, primals)]
    return trace(frame, fn, TupleVar([primals, args[2]]), fakes,
                 lambda body, p, t: torch.func.jvp(body, p, t), "jvp", body_args=primals)


def trace(frame: "Frame", fn: Var, call_args: TupleVar, inner: list[torch.Tensor],
          apply: Callable[..., Any], name: str, body_args: TupleVar | None = None) -> Var:
    """``apply(body, *call_args)`` traced into the graph; ``body`` is ``fn`` speculated on the
    fakes ``inner``, taking arguments shaped as ``body_args`` (default: ``call_args``)."""
    body_template = body_args if body_args is not None else call_args
    body_structure = _structure(frame, body_template, [])

    def pass_as(new: list[Var]) -> list[Var]:
        return list(_rebuild(body_structure, new).items)

    sub = speculate(frame, fn, inner, f"the function given to torch.func.{name}", pass_as)
    out_structure = _structure(frame, sub.template, [])
    tensors: list[TensorVar] = []
    call_structure = _structure(frame, call_args, tensors)
    n = len(tensors)
    spec: list[Any] = []

    def traced(*flat: torch.Tensor) -> list[torch.Tensor]:
        lifted = flat[n:]

        def body(*body_call: Any) -> Any:
            return _fill(out_structure, list(sub.module(*_tensors(body_call), *lifted)))

        leaves, out_spec = tree_flatten(apply(body, *_fill(call_structure, list(flat[:n]))))
        spec.append(out_spec)
        return leaves

    builder = frame.state.graph
    fakes = [t.fake for t in tensors] + [node.meta["val"] for node in sub.lifted]
    try:
        with builder.fake_mode:
            gm = make_fx(traced, tracing_mode="fake")(*fakes)
    except Unsupported:
        raise
    except Exception as exc:
        raise Unsupported(f"torch.func.{name} could not be traced: {type(exc).__name__}: {exc}") from exc
    outputs = inline_graph(frame, gm, [t.node for t in tensors] + sub.lifted, tensors)
    return _as_var(tree_unflatten(outputs, spec[-1]))


def _as_var(value: Any) -> Var:
    if isinstance(value, Var):
        return value
    if isinstance(value, tuple):
        return TupleVar([_as_var(v) for v in value])
    if isinstance(value, list):
        return ListVar([_as_var(v) for v in value])
    if isinstance(value, dict):
        return DictVar({k: _as_var(v) for k, v in value.items()})
    return ConstVar(value)


def _mutated_input(node: torch.fx.Node) -> torch.fx.Node:
    """The node an in-place op's result is (``x.asin_()`` returns ``x``), followed back to where
    the tensor was made; ``node`` itself when it is no such result."""
    while node.op == "call_function":
        schema = getattr(node.target, "_schema", None)
        returns = schema.returns if schema is not None else ()
        if len(returns) != 1 or returns[0].alias_info is None or not returns[0].alias_info.is_write \
                or not node.args or not isinstance(node.args[0], torch.fx.Node):
            break
        node = node.args[0]
    return node


def inline_graph(frame: "Frame", gm: torch.fx.GraphModule, inputs: list[torch.fx.Node],
                 input_vars: Sequence[TensorVar] = ()) -> list[Var]:
    """Copy ``gm``'s nodes into the current graph, its placeholders reading ``inputs``; its outputs'
    Vars. An output that is an input mutated in place (``vmap(Tensor.asin_)(x)``) is that input's
    Var (``input_vars``, the first of ``inputs``), the same object, as in eager."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    builder = frame.state.graph
    env: dict[torch.fx.Node, Any] = {}
    feed = iter(inputs)
    outputs: list[Var] = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = next(feed)
        elif node.op == "get_attr":
            name = f"_ember_constant{len(builder.constants)}"
            builder.constants[name] = getattr(gm, node.target)
            env[node] = builder.graph.get_attr(name)
        elif node.op == "call_function":
            new = builder.locate(builder.graph.create_node(
                "call_function", node.target, torch.fx.map_arg(node.args, env.__getitem__),
                torch.fx.map_arg(node.kwargs, env.__getitem__)))
            new.meta["val"] = new.meta["example_value"] = node.meta.get("val")
            schema = getattr(node.target, "_schema", None)
            if schema is not None and schema.is_mutable:
                new.meta["mutates"] = True
            env[node] = new
        elif node.op == "output":
            for out in tree_flatten(node.args[0])[0]:
                if not isinstance(out, torch.fx.Node) or not isinstance(out.meta.get("val"), torch.Tensor):
                    raise Unsupported("a torch.func transform returned something other than tensors")
                source = _mutated_input(out)
                k = placeholders.index(source) if source.op == "placeholder" and source is not out else -1
                outputs.append(input_vars[k] if 0 <= k < len(input_vars)
                               else builder.wrap_result(env[out], out.meta["val"]))
        else:
            raise Unsupported(f"a traced transform holds a {node.op} node")
    return outputs


__all__ = ["TransformedVar", "inline_graph", "trace"]
