"""Graph preparation before import: flat functional torch-level graphs with every tensor an input.

The core hands over graphs with parameters lifted to placeholders, but a graph may still hold
``call_module`` nodes or ``get_attr`` tensors (hand-traced modules, third-party callers). Those are
inlined and lifted here so that TVM never bakes a tensor in as a constant: a parameter changed in
place between calls is then always seen. In-place ops on fresh intermediates are rewritten to
their out-of-place forms; in-place ops that could be observed from outside the graph (on inputs
or on tensors that have views) are reported so that the caller keeps the graph in PyTorch.
"""
from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx

#: operator.i* functions (``x += y``) and their out-of-place twins.
_INPLACE_OPERATORS = {
    operator.iadd: operator.add,
    operator.isub: operator.sub,
    operator.imul: operator.mul,
    operator.itruediv: operator.truediv,
    operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod,
    operator.ipow: operator.pow,
    operator.iand: operator.and_,
    operator.ior: operator.or_,
    operator.ixor: operator.xor,
}

#: Torch-level ops whose result may share storage with their first argument.
VIEW_OPS = frozenset({
    "view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "permute",
    "t", "T", "mT", "expand", "expand_as", "narrow", "select", "getitem", "contiguous",
    "view_as", "reshape_as", "chunk", "split", "unbind", "movedim", "swapaxes", "diagonal",
    "as_strided", "detach", "unfold", "real", "imag", "alias", "type_as", "to", "float", "half",
    "dropout", "type", "identity",
})


class _InlineTracer(fx.Tracer):
    """Traces through every submodule, so parameters appear as ``get_attr`` nodes."""

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return False


def node_name(node: fx.Node) -> str:
    """The op name used by the TVM importer and by ember's tables for a call node."""
    if node.op == "call_method":
        return str(node.target)
    return getattr(node.target, "__name__", str(node.target))


def inline_modules(gm: fx.GraphModule) -> fx.GraphModule:
    """Retrace ``gm`` through its submodules when it calls any (else return it unchanged)."""
    if not any(n.op == "call_module" for n in gm.graph.nodes):
        return gm
    graph = _InlineTracer().trace(gm)
    return fx.GraphModule(gm, graph)


def lift_attributes(gm: fx.GraphModule) -> tuple[fx.GraphModule, list[torch.Tensor]]:
    """Turn tensor ``get_attr`` nodes into trailing placeholders.

    Returns the rewritten graph and the live tensors (the module's own objects, so in-place
    changes stay visible) that the caller appends to the inputs on every call.
    """
    lifted: list[torch.Tensor] = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    anchor = placeholders[-1] if placeholders else None
    for node in list(gm.graph.nodes):
        if node.op != "get_attr":
            continue
        value: Any = gm
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            continue
        if anchor is None:
            with gm.graph.inserting_before(next(iter(gm.graph.nodes))):
                new = gm.graph.placeholder(f"lifted_{len(lifted)}")
        else:
            with gm.graph.inserting_after(anchor):
                new = gm.graph.placeholder(f"lifted_{len(lifted)}")
        anchor = new
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
        lifted.append(value)
    if lifted:
        gm.recompile()
    return gm, lifted


def _inplace_form(node: fx.Node) -> tuple[str, Any] | None:
    """``(op, out-of-place target)`` when ``node`` mutates its first argument, else None."""
    if node.op == "call_function" and node.target in _INPLACE_OPERATORS:
        return "call_function", _INPLACE_OPERATORS[node.target]
    if node.kwargs.get("inplace") is True and node.op == "call_function":
        return "call_function", node.target
    if node.op == "call_method":
        name = str(node.target)
        if name.endswith("_") and not name.startswith("_"):
            return "call_method", name[:-1]
    if node.op == "call_function":
        name = getattr(node.target, "__name__", "")
        if name.endswith("_") and not name.startswith("_"):
            base = getattr(torch, name[:-1], None)
            if base is not None:
                return "call_function", base
    return None


def functionalize_inplace(gm: fx.GraphModule) -> str:
    """Rewrite in-place ops on private intermediates to out-of-place ops.

    Returns "" on success, else the reason the graph must stay in PyTorch (an in-place op on
    an input, or on a tensor that is a view or has views, whose effect could be observed).
    """
    changed = False
    for node in list(gm.graph.nodes):
        form = _inplace_form(node)
        if form is None:
            continue
        target = node.args[0] if node.args else None
        if not isinstance(target, fx.Node):
            return f"in-place op {node.format_node()} on a non-tensor"
        if target.op == "placeholder":
            return f"in-place op {node_name(node)!r} mutates graph input {target.name!r}"
        if target.op != "call_function" and target.op != "call_method":
            return f"in-place op {node_name(node)!r} on {target.op} {target.name!r}"
        if node_name(target) in VIEW_OPS:
            return f"in-place op {node_name(node)!r} on view {target.name!r}"
        for user in target.users:
            if user is not node and node_name(user) in VIEW_OPS:
                return f"in-place op {node_name(node)!r} on {target.name!r}, which has views"
        op, new_target = form
        kwargs = dict(node.kwargs)
        if kwargs.get("inplace") is True:
            kwargs["inplace"] = False
        with gm.graph.inserting_after(node):
            new = gm.graph.create_node(op, new_target, node.args, kwargs)
        node.replace_all_uses_with(new)
        # Later readers of the mutated tensor must read the new value.
        order = {n: i for i, n in enumerate(gm.graph.nodes)}
        target.replace_all_uses_with(
            new, delete_user_cb=lambda user: order[user] > order[new]
        )
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.recompile()
    return ""
