"""Small helpers on aten fx graphs shared by the partitioners and the memory report.

- ``JointParts``: the joint graph's placeholders (``primals_*`` / ``tangents_*``) and outputs
  (forward outputs first, then gradients).
- ``extract``: copy the part of a graph that computes some nodes from some other nodes into a
  new flat GraphModule.
- ``node_bytes``: bytes a node's value occupies, 0 for inputs and views of inputs (at the
  capture's sizes when they are symbolic).
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Iterable

import torch
import torch.fx

from .symbolic import hint

#: ``node.meta`` key set on placeholders of inputs the graph mutates: their values change after
#: the forward, so a partitioner must not save them (or views of them) for the backward.
MUTATED = "ember_aot_mutated"


@dataclasses.dataclass
class JointParts:
    primals: list[torch.fx.Node]
    tangents: list[torch.fx.Node]
    fwd_outputs: list[torch.fx.Node]
    grads: list[torch.fx.Node]
    tangent_dependent: set[torch.fx.Node]

    @classmethod
    def of(cls, joint: torch.fx.GraphModule, num_fwd_outputs: int) -> "JointParts":
        nodes = list(joint.graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        tangents = [n for n in placeholders if n.name.startswith("tangents")]
        primals = [n for n in placeholders if not n.name.startswith("tangents")]
        outs = list(nodes[-1].args[0])
        dependent = set(tangents)
        for n in nodes:
            if n.op != "output" and any(a in dependent for a in n.all_input_nodes):
                dependent.add(n)
        return cls(primals, tangents, outs[:num_fwd_outputs], outs[num_fwd_outputs:], dependent)


def ancestors(roots: Iterable[torch.fx.Node], stop: set[torch.fx.Node] = frozenset()) -> set:
    """``roots`` and every node they read, not walking past nodes in ``stop``."""
    seen: set[torch.fx.Node] = set()
    stack = [r for r in roots if isinstance(r, torch.fx.Node)]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n not in stop:
            stack.extend(n.all_input_nodes)
    return seen


def extract(
    root: torch.fx.GraphModule,
    inputs: list[torch.fx.Node],
    outputs: list[torch.fx.Node],
) -> torch.fx.GraphModule:
    """A GraphModule computing ``outputs`` from placeholders standing for ``inputs``."""
    needed = ancestors(outputs, stop=set(inputs))
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in inputs:
        p = graph.placeholder(n.name)
        p.meta = dict(n.meta)
        env[n] = p
    for n in root.graph.nodes:
        if n in env or n not in needed:
            continue
        if n.op == "placeholder":
            raise RuntimeError(f"partition error: {n.name} is needed but is not an input")
        env[n] = graph.node_copy(n, lambda a: env[a])
    graph.output(tuple(env[n] for n in outputs))
    gm = torch.fx.GraphModule(root, graph)
    gm.recompile()
    return gm


def is_view(node: torch.fx.Node) -> bool:
    """True for aten view ops (output aliases the first input) and ``getitem``."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return True
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return False
    schema = target._schema
    return (
        not schema.is_mutable
        and len(schema.returns) == 1
        and schema.returns[0].alias_info is not None
    )


def input_root(node: torch.fx.Node) -> torch.fx.Node | None:
    """The placeholder or constant ``node`` is (a chain of views of), else None."""
    while True:
        if node.op in ("placeholder", "get_attr"):
            return node
        if not is_view(node) or node.target is operator.getitem:
            return None
        node = node.args[0]


def rooted_at_input(node: torch.fx.Node) -> bool:
    """True when ``node`` is a placeholder, a constant, or a chain of views of one."""
    return input_root(node) is not None


def tensor_bytes(val: object) -> int:
    """Bytes of a tensor's elements (not of its whole storage); for symbolic sizes, at the sizes
    of the capture (a heuristic's number: reading it adds no guard)."""
    if isinstance(val, torch.Tensor):
        return hint(val.numel()) * val.element_size()
    return 0


def node_bytes(node: torch.fx.Node) -> int:
    """Activation bytes a node's value costs to keep: 0 for inputs, constants and their views."""
    if rooted_at_input(node):
        return 0
    return tensor_bytes(node.meta.get("val"))
