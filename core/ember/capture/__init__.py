"""Frame capture: run a function's bytecode symbolically and produce an fx graph plus guards.

:func:`capture` is the entry point used by the runtime on a cache miss. It returns a
:class:`Capture`: the GraphModule (or None when there is no tensor work), the sources of its
inputs, the guards, and the Python source of the expression that rebuilds the return value.
"""
from __future__ import annotations

import dataclasses
import logging
import types
from typing import Any

import torch
import torch.fx

from ..errors import Unsupported
from .frame import Frame
from .graph import remove_dead_nodes
from .output import OutputBuilder
from .sources import Constants, DictEntrySource, Source
from .state import CaptureState


@dataclasses.dataclass
class Capture:
    graph_module: torch.fx.GraphModule | None
    input_sources: list[Source]
    example_inputs: list[torch.Tensor]
    return_expr: str
    consts: Constants
    state: CaptureState

    @property
    def guards(self):  # noqa: ANN201 - GuardSet
        return self.state.guards


def capture(fn: types.FunctionType, f_locals: dict[str, Any]) -> Capture:
    """Interpret ``fn`` called with the arguments bound in ``f_locals``."""
    state = CaptureState()
    state.guards.grad_mode()
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    saved_level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)  # errors on fakes become our Unsupported, not log spam
    try:
        return _capture(state, fn, f_locals)
    finally:
        fake_log.setLevel(saved_level)


def _capture(state: CaptureState, fn: types.FunctionType, f_locals: dict[str, Any]) -> Capture:
    code = fn.__code__
    closure = dict(zip(code.co_freevars, fn.__closure__ or ()))
    frame = Frame(state, code, fn.__globals__, {}, closure, lazy_args=f_locals)
    try:
        result = frame.run()
        builder = OutputBuilder(state.graph, state.guards.consts)
        return_expr = builder.expr(result)
    except Unsupported as exc:
        exc.guards = state.guards  # what was read before the failure decides the fallback entry
        raise
    graph = state.graph
    graph.output(builder.outputs)
    remove_dead_nodes(graph.graph)
    if any(n.meta.get("mutates") for n in graph.graph.nodes):
        # in-place work on inputs is only right for the aliasing seen at capture time
        state.guards.distinct([s for s, _, _ in graph.inputs if not isinstance(s, DictEntrySource)])
    has_work = any(n.op in ("call_function", "call_method") for n in graph.graph.nodes)
    gm = None
    used: list[tuple[Source, torch.fx.Node, torch.Tensor]] = []
    if has_work:
        # inputs the graph does not read are dropped (their guards stay)
        for source, node, tensor in graph.inputs:
            if node.users:
                used.append((source, node, tensor))
            else:
                graph.graph.erase_node(node)
        gm = torch.fx.GraphModule(torch.nn.Module(), graph.graph, class_name="EmberGraph")
    return Capture(
        graph_module=gm,
        input_sources=[s for s, _, _ in used],
        example_inputs=[t for _, _, t in used],
        return_expr=return_expr,
        consts=state.guards.consts,
        state=state,
    )


__all__ = ["Capture", "capture"]
