"""Splits a compiled graph's backward into independent groups, one autograd node each.

Eager autograd links each output only to the inputs it was computed from. One
``torch.autograd.Function`` for a whole compiled graph links every output to every input, so a
backward from one output walks into the history of inputs it does not depend on. Gradient
accumulation shows it: ``total = total + loss`` after ``loss.backward()`` lands in the same graph
as the next micro-batch's forward, and the next ``loss.backward()`` then runs into the first
loss's freed graph ("Trying to backward through the graph a second time"); it would also turn
gradients eager leaves at None into zeros.

``split_backward`` puts the differentiable outputs and the inputs that get gradients into
connected components of two relations read off the joint graph: "the output is computed from the
input" (forward data flow) and "the input's gradient reads the output's tangent". Each
component gets its own piece of the partitioned backward graph, reading only its own tangents and
the saved values it needs, and the runtime gives it its own autograd node linked to its own
inputs only. A graph with one component (the usual case) keeps its backward graph whole.
"""
from __future__ import annotations

import dataclasses
import logging

import torch
import torch.fx

from .graph_utils import ancestors, extract
from .symbolic import binding_inputs

log = logging.getLogger("ember.aot")


@dataclasses.dataclass(frozen=True)
class GradGroup:
    """One autograd node's share of a compiled graph."""

    outputs: tuple[int, ...]       # positions in the plan's diff_outputs (the tangents it reads)
    grads: tuple[int, ...]         # positions in the plan's grad_inputs (the gradients it returns)
    saved: tuple[int, ...] | None  # positions in the forward's saved values it reads; None: all


def split_backward(
    joint: torch.fx.GraphModule,
    num_primals: int,
    num_fwd_outputs: int,
    diff_outputs: list[int],
    grad_inputs: list[int],
    bw_gm: torch.fx.GraphModule,
) -> list[tuple[GradGroup, torch.fx.GraphModule]]:
    """The groups of ``joint``'s gradients, each with its part of ``bw_gm`` (see the module
    docstring). ``joint`` takes the primals then the tangents and returns the forward outputs
    then the gradients of the primals ``grad_inputs``; ``bw_gm(*saved, *tangents)`` returns those
    gradients."""
    num_tangents, num_grads = len(diff_outputs), len(grad_inputs)
    whole = [(GradGroup(tuple(range(num_tangents)), tuple(range(num_grads)), None), bw_gm)]
    components = _components(joint, num_primals, num_fwd_outputs, diff_outputs, grad_inputs)
    if len(components) < 2:
        return whole
    placeholders = [n for n in bw_gm.graph.nodes if n.op == "placeholder"]
    saved, tangents = placeholders[:-num_tangents], placeholders[-num_tangents:]
    grads = list(next(n for n in bw_gm.graph.nodes if n.op == "output").args[0])
    saved_index = {n: s for s, n in enumerate(saved)}
    groups = []
    for outputs, group_grads in components:
        read = ancestors([grads[k] for k in group_grads], stop=set(placeholders))
        own = [tangents[i] for i in outputs]
        if any(t in read and t not in own for t in tangents):
            # cannot happen for a joint graph's own backward; a custom partitioner may differ
            log.debug("gradient groups: a group's backward reads another's tangent; not splitting")
            return whole
        needed = [n for n in saved if n in read]
        needed += binding_inputs(needed + own, saved)  # the sizes its inputs carry, bare
        needed.sort(key=saved.index)
        sub = extract(bw_gm, needed + own, [grads[k] for k in group_grads])
        groups.append((GradGroup(outputs, group_grads, tuple(saved_index[n] for n in needed)), sub))
    return groups


def _components(
    joint: torch.fx.GraphModule,
    num_primals: int,
    num_fwd_outputs: int,
    diff_outputs: list[int],
    grad_inputs: list[int],
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(diff output positions, grad positions) of each connected component, by first output.
    Components without an output or without a gradient join the first one that has both."""
    placeholders = [n for n in joint.graph.nodes if n.op == "placeholder"]
    primal_bit = {placeholders[j]: 1 << k for k, j in enumerate(grad_inputs)}
    tangent_bit = {t: 1 << i for i, t in enumerate(placeholders[num_primals:])}
    reads_primal: dict[torch.fx.Node, int] = {}
    reads_tangent: dict[torch.fx.Node, int] = {}
    for n in joint.graph.nodes:
        p, t = primal_bit.get(n, 0), tangent_bit.get(n, 0)
        for a in n.all_input_nodes:
            p |= reads_primal[a]
            t |= reads_tangent[a]
        reads_primal[n], reads_tangent[n] = p, t
    outs = list(next(n for n in joint.graph.nodes if n.op == "output").args[0])

    parent = list(range(len(diff_outputs) + len(grad_inputs)))  # outputs, then grads

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def link(i: int, k: int) -> None:
        parent[find(len(diff_outputs) + k)] = find(i)

    for i, pos in enumerate(diff_outputs):
        for k in _bits(reads_primal.get(outs[pos], 0)):
            link(i, k)
    for k in range(len(grad_inputs)):
        for i in _bits(reads_tangent.get(outs[num_fwd_outputs + k], 0)):
            link(i, k)
    members: dict[int, tuple[list[int], list[int]]] = {}
    for i in range(len(diff_outputs)):
        members.setdefault(find(i), ([], []))[0].append(i)
    for k in range(len(grad_inputs)):
        members.setdefault(find(len(diff_outputs) + k), ([], []))[1].append(k)
    full = [m for m in members.values() if m[0] and m[1]]
    if not full:
        return []
    for outputs, grads in members.values():
        if not (outputs and grads):
            full[0][0].extend(outputs)
            full[0][1].extend(grads)
    return sorted((tuple(sorted(o)), tuple(sorted(g))) for o, g in full)


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out
