"""Rewrites the in-place ops of a traced aten graph into functional ones, where nothing aliases them.

``trace_joint`` records forward and backward under autograd, then must make the graph functional.
Tracing it a second time through ``torch.func.functionalize`` does that for any graph, at the
cost of a second trace (about as long as the first). Most training graphs need much less: their
only mutations are a BatchNorm's running statistics (``copy_`` into a buffer, ``add_`` on its
counter), written to tensors that no view aliases. ``remove_mutations`` handles exactly those
graphs. Each ``x = op_(b, ...)`` becomes ``x = op(b, ...)`` and later readers of ``b`` read ``x``;
a ``copy_(b, src)`` whose source already has ``b``'s shape and dtype becomes ``src``. A mutated
graph input gets a trailing ``copy_`` of its final value, which is how functionalization reports
it. It returns False, having changed nothing, when a mutation could be observed through an alias
(a view of the mutated tensor, graph inputs sharing storage, an op writing several arguments),
and the caller then functionalizes by tracing again.

``remove_leftover_mutations`` is the same rewrite after functionalization, for the in-place ops
it lets through: a composite kernel may run below the functionalization layer (torch 2.13's
bfloat16 ``rms_norm`` adds its epsilon with ``add_`` on the mean it just computed), so its
in-place ops on its own temporaries reach the graph. Only such writes to graph intermediates
are rewritten; the trailing ``copy_`` into mutated inputs stays as functionalization wrote it.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.fx
from torch._subclasses import FakeTensorMode

from .symbolic import known_same_shape

aten = torch.ops.aten


def _is_op(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)


def _is_mutation(node: torch.fx.Node) -> bool:
    return _is_op(node) and node.target._schema.is_mutable


def _is_view(node: torch.fx.Node) -> bool:
    """An op whose result may share memory with an argument, other than an in-place op."""
    return (_is_op(node) and not node.target._schema.is_mutable
            and any(r.alias_info is not None for r in node.target._schema.returns))


def _functional(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """``aten.add.Tensor`` for ``aten.add_.Tensor``: the out-of-place op with the same arguments."""
    name = op._schema.name.split("::")[-1]
    if not name.endswith("_") or name.startswith("_"):
        return None
    overload = getattr(getattr(aten, name[:-1], None), op._overloadname, None)
    if overload is None or overload._schema.is_mutable:
        return None
    if [a.name for a in overload._schema.arguments] != [a.name for a in op._schema.arguments]:
        return None
    return overload


def _vals(args: Any) -> Any:
    return torch.fx.node.map_arg(args, lambda n: n.meta["val"])


_SOURCE = (None, None)  # a copy_ becomes its source


def _unaliased(tensor: torch.fx.Node, writes: list[torch.fx.Node]) -> bool:
    """Whether ``tensor`` (written by the in-place ops ``writes``) is its own memory and no view
    of it exists: a graph input, or the result of an op that is neither a view nor in-place.
    make_fx hands later readers the last in-place op's node, so views of those count too."""
    own = tensor.op == "placeholder" or (_is_op(tensor) and not _is_view(tensor) and not _is_mutation(tensor))
    return own and not any(_is_view(u) for n in (tensor, *writes) for u in n.users)


def _replacement(node: torch.fx.Node, mode: FakeTensorMode) -> tuple | None:
    """What the in-place ``node`` becomes: ``_SOURCE`` for a ``copy_``, else the functional op and
    its value; None when it writes more than its first argument, has no functional twin, or the
    twin's result would differ in shape or dtype (or might, for some admitted size)."""
    schema = node.target._schema
    written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if written != [schema.arguments[0].name]:
        return None
    dst = node.args[0].meta.get("val")
    if node.target is aten.copy_.default:
        src = node.args[1].meta.get("val") if isinstance(node.args[1], torch.fx.Node) else None
        same = (len(node.args) == 2 and not node.kwargs and isinstance(src, torch.Tensor)
                and (src.dtype, src.device) == (dst.dtype, dst.device) and known_same_shape(src, dst))
        return _SOURCE if same else None
    op = _functional(node.target)
    if op is None:
        return None
    with mode, torch.no_grad():
        val = op(*_vals(node.args), **_vals(node.kwargs))
    same = isinstance(val, torch.Tensor) and val.dtype == dst.dtype and known_same_shape(val, dst)
    return (op, val) if same else None


def _shares_storage(primals: Sequence[Any]) -> bool:
    keys = [p.untyped_storage()._cdata for p in primals if isinstance(p, torch.Tensor)]
    return len(set(keys)) < len(keys)


def remove_mutations(gm: torch.fx.GraphModule, mode: FakeTensorMode, primals: Sequence[Any]) -> bool:
    """Make ``gm`` functional in place (see the module docstring); False, unchanged, if it cannot.

    ``primals`` are the fake tensors the leading placeholders were traced with."""
    mutations = [n for n in gm.graph.nodes if _is_mutation(n)]
    if not mutations:
        return True
    if _shares_storage(primals):
        return False
    return _rewrite(gm, mode, mutations)


def remove_leftover_mutations(gm: torch.fx.GraphModule, mode: FakeTensorMode) -> None:
    """Rewrite, in a functionalized ``gm``, the in-place ops on intermediates that no view
    aliases into functional ones (see the module docstring); writes into graph inputs, and
    chains that cannot be rewritten, stay (the caller reports what survives)."""
    root = _written_tensors([n for n in gm.graph.nodes if _is_mutation(n)])
    if root is None:
        return
    leftovers = [n for n, tensor in root.items() if _is_mutation(n) and tensor.op != "placeholder"]
    by_tensor: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for node in leftovers:
        by_tensor.setdefault(root[node], []).append(node)
    rewritable = [n for tensor, ops in by_tensor.items() if _unaliased(tensor, ops) for n in ops]
    if rewritable:
        _rewrite(gm, mode, [n for n in gm.graph.nodes if n in set(rewritable)])


def _written_tensors(mutations: list[torch.fx.Node]) -> dict[torch.fx.Node, torch.fx.Node] | None:
    """In-place op (and each tensor written) -> the tensor it writes, following chains of
    in-place ops on their first argument; None when one writes to a non-node."""
    root: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in mutations:
        base = node.args[0] if node.args else None
        if not isinstance(base, torch.fx.Node):
            return None
        root[node] = root[base] = root.get(base, base)
    return root


def _rewrite(gm: torch.fx.GraphModule, mode: FakeTensorMode, mutations: list[torch.fx.Node]) -> bool:
    """Replace the in-place ops ``mutations`` (in graph order) by functional ones, later readers
    reading their results and a written input getting a trailing ``copy_``; False, unchanged,
    when one of them cannot be."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    root = _written_tensors(mutations)
    if root is None:
        return False
    writes: dict[torch.fx.Node, list[torch.fx.Node]] = {}  # written tensor -> its in-place ops
    for node in mutations:
        writes.setdefault(root[node], []).append(node)
    if not all(_unaliased(tensor, ops) for tensor, ops in writes.items()):
        return False
    plans = {node: _replacement(node, mode) for node in mutations}
    if any(plan is None for plan in plans.values()):
        return False
    current: dict[torch.fx.Node, torch.fx.Node] = {}  # written tensor -> node of its value so far
    for node in list(graph.nodes):
        for read in node.all_input_nodes:
            if read in root and root[read] in current:
                node.replace_input_with(read, current[root[read]])
        if node in plans:
            op, val = plans[node]
            if op is None:
                value = node.args[1]
            else:
                with graph.inserting_before(node):
                    value = graph.call_function(op, node.args, node.kwargs)
                value.meta = {**node.meta, "val": val}
            current[root[node]] = value
    for node in reversed(mutations):
        graph.erase_node(node)
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    with graph.inserting_before(output):
        for p in placeholders:
            if p in current:  # its value is the input's (a compiler reads it as any node's)
                graph.call_function(aten.copy_.default, (p, current[p])).meta["val"] = p.meta.get("val")
    graph.lint()
    gm.recompile()
    return True
