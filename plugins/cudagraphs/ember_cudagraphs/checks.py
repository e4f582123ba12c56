"""Why a graph cannot be captured into a CUDA graph: reasons found before any call.

Each function returns "" when capture is possible, else a short reason for the one log line.
Reasons found at call time (host syncs, capture errors, inputs mutated during warm-up) are the
wrapper's business.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.fx

def cuda_reason() -> str:
    """"" when CUDA graphs can be recorded on this machine."""
    if not torch.cuda.is_available():
        return "needs a CUDA device (torch.cuda.is_available() is False)"
    return ""


def device_reason(values: Sequence[Any]) -> str:
    """"" when every tensor in ``values`` (real or fake) is on one CUDA device."""
    devices = set()
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            if v.device.type != "cuda":
                return f"input {i} is a {v.device.type} tensor"
            devices.add(v.device)
    if len(devices) > 1:
        return f"inputs are on several devices ({', '.join(sorted(map(str, devices)))})"
    return ""


def _root(node: torch.fx.Node) -> torch.fx.Node:
    """The node whose memory ``node`` shares, following aten view ops back to their base."""
    while node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
        schema = node.target._schema
        first = schema.arguments[0] if schema.arguments else None
        returns_alias = bool(schema.returns) and schema.returns[0].alias_info is not None
        if not (returns_alias and first is not None and first.alias_info is not None
                and not first.alias_info.is_write and node.args
                and isinstance(node.args[0], torch.fx.Node)):
            break
        node = node.args[0]
    return node


def mutation_reason(gm: torch.fx.GraphModule | None) -> str:
    """"" unless an op of ``gm`` writes into one of its inputs (or a view of one).

    A recorded graph reads copied inputs from static buffers, so a write into such an input
    would land in the buffer, not in the caller's tensor.
    """
    if gm is None:
        return ""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    index = {n: i for i, n in enumerate(placeholders)}
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        schema = node.target._schema
        if not schema.is_mutable:
            continue
        values = dict(zip((a.name for a in schema.arguments), node.args))
        values.update(node.kwargs)
        for arg in schema.arguments:
            value = values.get(arg.name)
            if arg.alias_info is None or not arg.alias_info.is_write or not isinstance(value, torch.fx.Node):
                continue
            root = _root(value)
            if root in index:
                return f"the graph mutates input {index[root]} in place ({node.target})"
    return ""


def graph_device_reason(gm: torch.fx.GraphModule | None) -> str:
    """"" unless a placeholder of ``gm`` carries a fake value on a non-CUDA device."""
    if gm is None:
        return ""
    vals = [n.meta.get("val", n.meta.get("example_value")) for n in gm.graph.nodes if n.op == "placeholder"]
    return device_reason(vals)
