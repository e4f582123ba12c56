"""Split an aten graph into onnxruntime pieces and PyTorch eager pieces.

Every call_function node is asked :func:`~.converter.unsupported_reason`; torch.fx's
``CapabilityBasedPartitioner`` then groups the convertible nodes into the largest acyclic
partitions (each becomes a ``fused_<n>`` submodule) and leaves the others in the outer graph,
where they run as aten calls. The caller swaps each ``fused_<n>`` for an onnxruntime module.
"""
from __future__ import annotations

import dataclasses
import logging
import operator
from collections import Counter
from typing import Mapping

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .converter import unsupported_reason

log = logging.getLogger("ember.onnxrt")


class _OnnxSupport(OperatorSupportBase):
    """Node support as the converter sees it; remembers why nodes were refused."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.refused: dict[str, str] = {}

    def is_node_supported(self, submodules: Mapping[str, torch.nn.Module], node: torch.fx.Node) -> bool:
        reason = unsupported_reason(node, self.opset)
        if reason:
            self.refused[node.name] = f"{node.target}: {reason}"
        return not reason


@dataclasses.dataclass
class Partitioning:
    """The split graph: ``gm`` calls ``submodule_names`` (to run in onnxruntime) and aten ops."""

    gm: torch.fx.GraphModule
    submodule_names: list[str]
    eager_ops: Counter[str]
    reasons: dict[str, str]


def partition(aten_gm: torch.fx.GraphModule, opset: int) -> Partitioning:
    """Group the convertible nodes of ``aten_gm`` into ``fused_<n>`` submodules (in place)."""
    support = _OnnxSupport(opset)
    partitioner = CapabilityBasedPartitioner(
        aten_gm, support, allows_single_node_partition=True
    )
    gm = partitioner.partition_and_fuse()
    names = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    eager_nodes = [n for n in gm.graph.nodes
                   if n.op == "call_function" and n.target is not operator.getitem]
    eager = Counter(str(n.target) for n in eager_nodes)
    reasons = {str(n.target): support.refused[n.name] for n in eager_nodes if n.name in support.refused}
    return Partitioning(gm, names, eager, reasons)


def log_placement(part: Partitioning, onnx_ops: int, failed: Mapping[str, str]) -> None:
    """Say what runs where: info for the summary, one warning when anything stays in PyTorch."""
    eager_total = sum(part.eager_ops.values())
    log.info(
        "onnxrt: %d aten op(s) in %d onnxruntime partition(s), %d op(s) in PyTorch eager",
        onnx_ops, len(part.submodule_names) - len(failed), eager_total,
    )
    details = [f"{op} x{count}" + (f" ({part.reasons[op]})" if op in part.reasons else "")
               for op, count in sorted(part.eager_ops.items())]
    details += [f"partition {name} ({why})" for name, why in failed.items()]
    if details:
        log.warning("onnxrt: running in PyTorch eager instead of onnxruntime: %s", "; ".join(details))
