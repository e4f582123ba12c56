"""``EMBER_DEBUG=1``: write everything about each compiled graph into one folder and log where.

Folder: ``$EMBER_DEBUG_DIR`` (default ``./ember_debug``) / ``graph_<n>_<hash>/`` with
``aten_graph.py``, ``fx_graph.py`` (when the backend saw one), ``ir.txt``, ``fusion.txt``,
``kernels.cpp`` or ``kernels.py`` (Triton) and ``wrapper.py``.
"""
from __future__ import annotations

import hashlib
import itertools
import logging
import os
from typing import Any

import torch.fx

log = logging.getLogger("ember.inductor")
_counter = itertools.count()
_pending_fx: list[str] = []


def enabled() -> bool:
    return os.environ.get("EMBER_DEBUG", "") not in ("", "0")


def graph_hash(gm: torch.fx.GraphModule) -> str:
    return hashlib.sha256(gm.code.encode()).hexdigest()[:10]


def note_fx_graph(gm: torch.fx.GraphModule) -> None:
    """Remember the torch-level graph the backend received, for the next dump."""
    if enabled():
        _pending_fx.append(gm.print_readable(print_output=False))


class DebugDump:
    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def create(cls, gm: torch.fx.GraphModule) -> "DebugDump | None":
        if not enabled():
            return None
        root = os.environ.get("EMBER_DEBUG_DIR", os.path.join(os.getcwd(), "ember_debug"))
        path = os.path.join(root, f"graph_{next(_counter)}_{os.getpid()}_{graph_hash(gm)}")
        os.makedirs(path, exist_ok=True)
        dump = cls(path)
        if _pending_fx:
            dump._write("fx_graph.py", _pending_fx[-1])
        dump._write("aten_graph.py", gm.print_readable(print_output=False))
        log.warning("ember_inductor debug output for graph %s in %s", graph_hash(gm), path)
        return dump

    def _write(self, name: str, text: str) -> None:
        with open(os.path.join(self.path, name), "w") as f:
            f.write(text)

    def write_ir(self, graph: Any, scheduler: Any) -> None:
        from . import ir
        from .scheduler import EmptyGroup, FusedGroup
        lines = []
        for op in graph.operations:
            if isinstance(op, ir.ComputedBuffer):
                kind = f"Reduction[{op.data.reduction_type}] rsize={op.data.rsize}" if op.is_reduction() else \
                    f"Scatter[atomic_add] size={op.data.size} into {op.target.name}" \
                    if isinstance(op, ir.ScatterBuffer) else "Pointwise"
                lines.append(f"{op.name}: {kind} size={op.layout.size} stride={op.layout.stride} {op.layout.dtype}")
            else:
                lines.append(f"{op.name}: ExternKernel {op.op} -> {[o.name for o in op.outputs]}")
        lines.append(f"outputs: {graph.outputs}")
        self._write("ir.txt", "\n".join(lines) + "\n")
        fus = []
        for k, g in enumerate(scheduler.groups):
            if isinstance(g, FusedGroup):
                fus.append(f"group {k}: kernel over outer={g.plan.outer} r={g.plan.r}: "
                           f"{[n.name for n in g.nodes]} stages={[(lvl, [p.node.name for p in ps]) for lvl, ps in g.plan.stages]}")
            elif isinstance(g, EmptyGroup):
                fus.append(f"group {k}: no kernel, empty buffer {g.node.name}")
            else:
                fus.append(f"group {k}: extern {g.node.kernel.op} ({g.node.name})")
        self._write("fusion.txt", "\n".join(fus) + "\n")

    def write_code(self, kernels: str, wrapper: str, language: str) -> None:
        self._write("kernels.py" if language == "triton" else "kernels.cpp", kernels)
        self._write("wrapper.py", wrapper)
