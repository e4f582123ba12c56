"""Partitioners: split a joint forward+backward graph into a forward and a backward graph.

Both take ``(joint_gm, joint_inputs, *, num_fwd_outputs)`` and return ``(fw_gm, bw_gm)``:
- ``fw_gm(*primals) -> (*forward_outputs, *saved)``;
- ``bw_gm(*saved, *tangents) -> (*gradients)``.

``save_all_partition`` computes everything that does not depend on a tangent in the forward and
saves every such value the backward reads. ``min_cut_partition`` (the default) chooses what to
save by a minimum s-t cut: each candidate node is split into an in/out pair joined by an edge
weighing the bytes it would cost to save; nodes that are expensive (matmul, convolution,
reductions...) or random (dropout) are pinned to the forward, cheap pointwise and view ops may
be recomputed in the backward. The cut is the cheapest set of values that separates what the
forward computes from what the backward needs. Inputs cost nothing to save; a view of one costs
a little (``VIEW_OF_INPUT``), so the input is saved and the view recomputed. Random ops are
never recomputed, so dropout's backward uses the forward's mask.

A joint pass (``aot_autograd(joint_pass=...)``) may mark a node ``meta[SAVE] = True``: the
min-cut then keeps it in the forward and saves it rather than recomputing it (a layout conversion
of a weight feeding convolutions in both halves: recomputed, it ties in bytes with saving the
weight, and costs the backward one more kernel per weight).

Activation checkpointing: the nodes a checkpointed region made carry torch's recompute tags
(``meta["recompute"]``, a ``CheckpointPolicy``, and ``meta["ac_graph_id"]``, set while make_fx
traces ``tag_activation_checkpoint``). The min-cut honours them as torch's partitioner does: a
node tagged MUST/PREFER_RECOMPUTE may be recomputed whatever its cost (a matmul included) and
must be, in the backward (its ``_in`` tied to the sink), so the cut saves the region's inputs
rather than its activations; a node tagged MUST_SAVE, and the last node of a region that feeds a
later region directly, are saved (:func:`recompute_tags`). Random ops stay in the forward.

Symbolic sizes: a size the backward needs (a ``sym_size`` node, or arithmetic on sizes) is saved
as a Python number (weight 1) or recomputed from a saved tensor's size; and every size symbol
the backward's inputs carry is bound by one of them (a tensor dimension or a saved size equal
to the bare symbol: ``symbol_bindings``), so a compiler of the backward alone can read each
symbol's value off its inputs.
"""
from __future__ import annotations

import logging
import math
import operator
from typing import Sequence

import torch
import torch.fx
from torch.utils.checkpoint import CheckpointPolicy

from .graph_utils import (
    MUTATED,
    JointParts,
    ancestors,
    extract,
    input_root,
    is_view,
    node_bytes,
)
from .symbolic import SYMBOLIC, is_sym_node, symbol_bindings

log = logging.getLogger("ember.aot")
aten = torch.ops.aten

Partition = tuple[torch.fx.GraphModule, torch.fx.GraphModule]

#: ``node.meta`` key of the nodes a joint pass wants saved, never recomputed (module docstring).
SAVE = "ember_aot_save"

#: What saving a view of an input weighs in the cut: keeping it costs no bytes, as saving the
#: input does, but the view is a forward output rebuilt on every call (a wrapper's
#: ``as_strided``, a CUDA graph's output slot: resnet18's 40 batch-norm weights as ``[C, 1, 1]``)
#: where the input is handed over as it is and the backward recomputes the view for free. Below
#: a saved size's 1, so a view whose recompute would need a size saved is still saved itself.
VIEW_OF_INPUT = 0.5

# Cheap non-pointwise ops that the min-cut partitioner may recompute in the backward.
_CHEAP = {
    aten.full.default,
    aten.full_like.default,
    aten.zeros.default,
    aten.zeros_like.default,
    aten.ones.default,
    aten.ones_like.default,
    aten.scalar_tensor.default,
    aten.arange.default,
    aten.arange.start,
    aten.arange.start_step,
    aten._to_copy.default,
    aten.clone.default,
    aten.lift_fresh_copy.default,
    # one index per line on a filled tensor (nll_loss's one-hot gradient): rebuilt from the labels
    aten.scatter.value,
    aten.scatter.src,
    # row reductions whose result is their input's size: recomputing reads what saving would write
    # (a language model's float32 log-softmax over the vocabulary, recomputed from bf16 logits)
    aten._softmax.default,
    aten._log_softmax.default,
}


def _build(joint: torch.fx.GraphModule, parts: JointParts, saved: list[torch.fx.Node]) -> Partition:
    saved = saved + symbol_bindings(joint, parts, saved)
    fw = extract(joint, parts.primals, parts.fwd_outputs + saved)
    bw = extract(joint, saved + parts.tangents, parts.grads)
    return fw, bw


def _ordered(joint: torch.fx.GraphModule, nodes: set[torch.fx.Node]) -> list[torch.fx.Node]:
    return [n for n in joint.graph.nodes if n in nodes]


def save_all_partition(
    joint: torch.fx.GraphModule,
    joint_inputs: Sequence[torch.Tensor],
    *,
    num_fwd_outputs: int,
) -> Partition:
    """Forward = everything tangent-independent; save every such value the backward reads."""
    parts = JointParts.of(joint, num_fwd_outputs)
    dep = parts.tangent_dependent
    backward = ancestors(parts.grads, stop=set(parts.tangents)) & dep
    saved = set()
    for n in backward:
        saved.update(a for a in n.all_input_nodes if a not in dep and a.op != "get_attr")
    saved.update(g for g in parts.grads if g not in dep)
    return _build(joint, parts, _ordered(joint, saved))


def is_random(node: torch.fx.Node) -> bool:
    """Ops that draw random numbers (never recomputed)."""
    target = node.target
    return isinstance(target, torch._ops.OpOverload) and (
        torch.Tag.nondeterministic_seeded in target.tags
    )


_RECOMPUTE = (CheckpointPolicy.MUST_RECOMPUTE, CheckpointPolicy.PREFER_RECOMPUTE)


def recompute_tags(joint: torch.fx.GraphModule) -> tuple[set[torch.fx.Node], set[torch.fx.Node]]:
    """(nodes a checkpointed region asks to recompute, nodes to save) from torch's recompute tags;
    a region's node read by a later region (a higher ``ac_graph_id``) is saved: the boundary
    between two consecutive regions."""
    recompute = {n for n in joint.graph.nodes if n.meta.get("recompute") in _RECOMPUTE and not is_random(n)}
    save = {n for n in joint.graph.nodes if n.meta.get("recompute") == CheckpointPolicy.MUST_SAVE}
    for node in recompute:
        region = node.meta.get("ac_graph_id")
        if region is not None and any(u in recompute and u.meta.get("ac_graph_id", region) > region
                                      for u in node.users):
            save.add(node)
    return recompute - save, save


def is_recomputable(node: torch.fx.Node) -> bool:
    """Cheap, deterministic ops the backward may recompute instead of saving their result."""
    if node.op == "get_attr":
        return True
    if node.op != "call_function" or is_random(node) or node.meta.get(SAVE):
        return False
    if node.target is operator.getitem or is_view(node):
        return True
    if is_sym_node(node):  # arithmetic on sizes; a size read off a tensor is saved, as an int
        return all(is_sym_node(a) for a in node.all_input_nodes)
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return False
    return torch.Tag.pointwise in target.tags or target in _CHEAP


def _weight(node: torch.fx.Node) -> float:
    val = node.meta.get("val")
    if isinstance(val, SYMBOLIC):
        return 1.0  # a size, saved as a Python number
    if not isinstance(val, torch.Tensor):
        return math.inf  # tuples and non-tensors cannot be saved
    root = input_root(node)
    if root is not None and root.meta.get(MUTATED):
        return math.inf  # the input is overwritten after the forward
    if root is not None and root is not node:
        return VIEW_OF_INPUT  # cut the input itself rather than its view (module docstring)
    return float(node_bytes(node))


def min_cut_partition(
    joint: torch.fx.GraphModule,
    joint_inputs: Sequence[torch.Tensor],
    *,
    num_fwd_outputs: int,
) -> Partition:
    """Save the fewest bytes between forward and backward; recompute cheap ops in the backward."""
    import networkx as nx  # here: its import is slow, and a plan from the disk cache skips it

    parts = JointParts.of(joint, num_fwd_outputs)
    dep = parts.tangent_dependent
    needed_bw = ancestors(parts.grads, stop=set(parts.tangents))
    grads = set(parts.grads)
    recompute, save = recompute_tags(joint)
    flow = nx.DiGraph()
    flow.add_node("source")
    flow.add_node("sink")
    for n in joint.graph.nodes:
        if n.op == "output":
            continue
        n_in, n_out = n.name + "_in", n.name + "_out"
        if n in dep:
            if n in needed_bw:
                flow.add_edge(n_in, "sink", capacity=math.inf)
            continue
        if n.op == "placeholder" or n in save or (n not in recompute and not is_recomputable(n)):
            flow.add_edge("source", n_in, capacity=math.inf)
        if n in recompute and n in needed_bw:
            flow.add_edge(n_in, "sink", capacity=math.inf)  # checkpointed: computed again in the backward
        if n in grads:
            flow.add_edge(n_out, "sink", capacity=math.inf)
        flow.add_edge(n_in, n_out, capacity=_weight(n))
        for user in n.users:
            if user.op != "output":
                flow.add_edge(n_out, user.name + "_in", capacity=math.inf)
    try:
        cut, (reachable, _) = nx.minimum_cut(flow, "source", "sink")
    except nx.NetworkXUnbounded:
        cut = math.inf
    if cut == math.inf:
        log.debug("min-cut found no finite cut; saving everything the backward reads")
        return save_all_partition(joint, joint_inputs, num_fwd_outputs=num_fwd_outputs)
    saved = {
        n
        for n in joint.graph.nodes
        if n.op not in ("output", "get_attr")
        and n not in dep
        and n.name + "_in" in reachable
        and n.name + "_out" not in reachable
        and (n.name + "_out") in flow
    }
    return _build(joint, parts, _ordered(joint, saved))


def saved_bytes(fw_gm: torch.fx.GraphModule, num_fwd_outputs: int) -> int:
    """Activation bytes a forward graph hands to the backward (inputs and their views are free)."""
    output = next(n for n in reversed(fw_gm.graph.nodes) if n.op == "output")
    saved = list(output.args[0])[num_fwd_outputs:]
    unique = {n for n in saved if isinstance(n, torch.fx.Node)}
    return sum(node_bytes(n) for n in unique)
