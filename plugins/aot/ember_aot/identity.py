"""Finds the calls of the torch-level graph that return one of their arguments itself, and removes them.

``x.type_as(x)``, ``x.to(x.dtype)``, ``x.contiguous()`` on a contiguous ``x``... return ``x``
itself in eager: the result is an alias, and an in-place op on ``x`` afterwards is seen through
it. Tracing does not always keep that: under ``torch.func.functionalize``, ``type_as`` to the
same dtype yields a new tensor holding ``x``'s value at that point, so a later ``x.div_(2)`` is
lost for its readers (a silently wrong result). Rather than trust every op's tracing, the fake
run of ``analysis.analyze`` notes each call whose result *is* one of its tensor arguments, with
no change to that argument (version counter, requires_grad, size, stride and offset), and
``forward_identities`` gives the tracers a copy of the graph where the readers of such a call
read the argument instead: the same program, with the aliasing explicit.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.fx


def _state(t: torch.Tensor) -> tuple:
    return (t._version, t.requires_grad, t.size(), t.stride(), t.storage_offset())


class IdentityRecorder(torch.fx.Interpreter):
    """Runs a graph like ``GraphModule.__call__``; ``identities`` maps the name of each call that
    returned an argument unchanged to that argument's node; ``producer(t)`` names the node that
    first returned the tensor ``t`` (None if none did)."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.identities: dict[str, torch.fx.Node] = {}
        self._producers: dict[int, tuple[str, torch.Tensor]] = {}  # id -> (node name, the tensor, kept alive)

    def run_node(self, n: torch.fx.Node) -> Any:
        if n.op not in ("call_function", "call_method"):
            return self._note(n, super().run_node(n))
        inputs = [(a, self.env[a]) for a in n.all_input_nodes if isinstance(self.env.get(a), torch.Tensor)]
        before = [_state(t) for _, t in inputs]
        result = super().run_node(n)
        for (node, t), state in zip(inputs, before):
            if result is t and _state(t) == state:
                self.identities[n.name] = node
                break
        return self._note(n, result)

    def _note(self, n: torch.fx.Node, result: Any) -> Any:
        if isinstance(result, torch.Tensor):
            self._producers.setdefault(id(result), (n.name, result))
        return result

    def producer(self, t: torch.Tensor) -> str | None:
        name, tensor = self._producers.get(id(t), (None, None))
        return name if tensor is t else None


def forward_identities(gm: torch.fx.GraphModule, identities: dict[str, torch.fx.Node]) -> torch.fx.GraphModule:
    """A copy of ``gm`` without the calls named in ``identities``: their readers read the argument
    they returned. ``gm`` itself when there is none."""
    if not identities:
        return gm
    graph = torch.fx.Graph()
    graph._codegen = gm.graph._codegen  # the calling convention (pytree in/out) stays the same
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        if node.name in identities:
            env[node] = env[identities[node.name]]
        else:
            env[node] = graph.node_copy(node, lambda a: env[a])
    return torch.fx.GraphModule(gm, graph)
