"""Aten fx graph -> ONNX model, and the question "can this node be converted?".

A graph is converted node by node (:class:`~.torchlib_bridge.NodeTranslator`); the ONNX model
keeps the fx placeholders as graph inputs, in order, and the fx outputs as graph outputs.
:func:`unsupported_reason` answers per node whether conversion will work, by actually
translating the node on its own into a scratch graph, so the partitioner only ever hands the
converter nodes it has already seen succeed.
"""
from __future__ import annotations

import operator
from typing import Any, Iterable

import onnx
import onnx_ir as ir
import onnxscript.optimizer
import torch
import torch.fx

from . import torchlib_bridge as bridge

DEFAULT_OPSET = 18
_IR_VERSION = 10  # onnxruntime >= 1.17 reads IR version 10


def _tensor_metas(arg: Any) -> Iterable[Any]:
    """The ``meta["val"]`` of every fx node referenced by ``arg`` (nested lists included)."""
    if isinstance(arg, torch.fx.Node):
        yield arg.meta.get("val")
    elif isinstance(arg, (list, tuple)):
        for a in arg:
            yield from _tensor_metas(a)


def _dtype_problem(metas: Iterable[Any]) -> str:
    allowed = bridge.supported_dtypes()
    for meta in metas:
        if isinstance(meta, (list, tuple)):
            problem = _dtype_problem(meta)
            if problem:
                return problem
        elif not isinstance(meta, torch.Tensor):
            return f"non-tensor value {type(meta).__name__}"
        elif meta.dtype not in allowed:
            return f"dtype {meta.dtype} has no ONNX equivalent here"
    return ""


def unsupported_reason(node: torch.fx.Node, opset: int = DEFAULT_OPSET) -> str:
    """"" when ``node`` (an aten call_function) converts to ONNX, else the reason it does not."""
    if node.op != "call_function":
        return f"{node.op} node"
    if node.target is operator.getitem:
        source = node.args[0]
        return unsupported_reason(source, opset) if isinstance(source, torch.fx.Node) else "getitem"
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return f"{target} is not an aten operator"
    if target._schema.is_mutable:
        return "mutates its inputs"
    if torch.Tag.nondeterministic_seeded in target.tags and not _no_dropout(node):
        return "draws random numbers (kept on PyTorch's generator)"
    problem = _dtype_problem(list(_tensor_metas((node.args, list(node.kwargs.values())))))
    problem = problem or _dtype_problem([node.meta.get("val")])
    if problem:
        return problem
    translator = bridge.NodeTranslator(_empty_model(opset), opset)
    problem = translator.can_dispatch(node)
    if problem:
        return problem
    values: bridge.ValueMap = {
        n.name: bridge.new_input(n.name, n.meta["val"], opset) for n in node.all_input_nodes
    }
    try:
        translator.translate(node, values)
    except Exception as exc:  # torch_lib rejects these arguments: keep the node in PyTorch
        return f"torch_lib cannot translate it ({type(exc).__name__}: {exc})".splitlines()[0]
    return ""


def _no_dropout(node: torch.fx.Node) -> bool:
    """Whether a "random" op is deterministic here: attention with ``dropout_p == 0``."""
    schema = node.target._schema  # type: ignore[union-attr]
    for i, arg in enumerate(schema.arguments):
        if arg.name == "dropout_p":
            value = node.args[i] if i < len(node.args) else node.kwargs.get("dropout_p", arg.default_value)
            return value == 0
    return False


def _empty_model(opset: int) -> ir.Model:
    graph = ir.Graph([], [], nodes=[], opset_imports={"": opset}, name="ember_onnxrt")
    return ir.Model(graph, ir_version=_IR_VERSION, producer_name="ember_onnxrt")


def _add_opset_imports(model: ir.Model) -> None:
    """Import every domain the graph and its functions use (onnxruntime needs them all)."""

    def note(imports: dict[str, int], node: ir.Node) -> None:
        if node.domain not in imports:
            imports[node.domain] = node.version if node.version is not None else 1

    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        note(model.opset_imports, node)
    for function in model.functions.values():
        for node in ir.traversal.RecursiveGraphIterator(function):
            note(function.opset_imports, node)
        for domain, version in function.opset_imports.items():
            model.opset_imports.setdefault(domain, version)


def to_onnx(gm: torch.fx.GraphModule, opset: int = DEFAULT_OPSET, optimize: bool = True) -> onnx.ModelProto:
    """Convert ``gm`` (aten call_functions with ``meta["val"]``) to a checked ONNX model.

    Graph inputs are named after the placeholders, outputs ``output_<i>``.
    """
    model = _empty_model(opset)
    translator = bridge.NodeTranslator(model, opset)
    values: bridge.ValueMap = {}
    graph = model.graph
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = bridge.new_input(node.name, node.meta["val"], opset)
            values[node.name] = value
            graph.inputs.append(value)
        elif node.op == "call_function":
            graph.extend(translator.translate(node, values))
        elif node.op == "output":
            _set_outputs(graph, node.args[0], values)
        else:
            raise NotImplementedError(f"cannot convert {node.op} node {node.name}")
    _add_opset_imports(model)
    if optimize:
        onnxscript.optimizer.optimize(model)
    proto = ir.serde.serialize_model(model)
    return proto


def _set_outputs(graph: ir.Graph, results: Any, values: bridge.ValueMap) -> None:
    results = results if isinstance(results, (list, tuple)) else (results,)
    for i, result in enumerate(results):
        value = values[result.name]
        if value.is_graph_input() or value.is_graph_output():
            # ONNX needs a distinct value per graph output: pass it through an Identity.
            identity = ir.Node("", "Identity", [value], num_outputs=1)
            graph.append(identity)
            identity.outputs[0].dtype, identity.outputs[0].shape = value.dtype, value.shape
            value = identity.outputs[0]
        value.name = f"output_{i}"
        graph.outputs.append(value)
