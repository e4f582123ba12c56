"""Backward graphs specialised to the outputs that got a gradient.

Eager autograd never runs the backward of an output that receives no gradient. A compiled
backward graph reads a tangent for every differentiable output, and the runtime passes zeros for
the missing ones; a zero is not the same as nothing: ``0 * inf`` (the backward of the variance
of one element, say) puts a NaN into a gradient where eager has a number. When some tangents
are missing, the runtime runs instead a copy of the group's backward graph where their
contributions are dropped (``specialize``), compiled on first use for each set of missing
tangents (``BackwardVariants``). The backward graph is linear in its tangents, so a value
computed only from missing tangents (and saved values) is dropped; a sum with one dropped term
is the other term; any other op that mixes a dropped value with a live one reads zeros for the
dropped one, as before. The calling convention stays the same (the missing tangents are passed
and unused), and the common path, all tangents given, is untouched. With symbolic sizes the
zeros' sizes are nodes reading the inputs' sizes, and a sum is replaced by its term only when
their shapes agree for every size.
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

import torch
import torch.fx

from .symbolic import SizeNodes, hint, known_equal, known_same_shape

aten = torch.ops.aten
log = logging.getLogger("ember.aot")

_ADDS = (aten.add.Tensor, aten.sub.Tensor)
# ops that read only their input's metadata (shape, dtype): a dropped input is read as zeros and
# their result is not dropped (``ones_like(t)`` is ones whatever ``t`` holds)
_METADATA_ONLY = {"zeros_like", "ones_like", "empty_like", "full_like", "new_zeros", "new_ones",
                  "new_empty", "new_full", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset"}


def _metadata_only(node: torch.fx.Node) -> bool:
    return getattr(node.target, "__name__", "").split(".")[0] in _METADATA_ONLY


def specialize(gm: torch.fx.GraphModule, num_tangents: int, missing: frozenset[int]) -> torch.fx.GraphModule:
    """A copy of the backward ``gm`` without the contributions of the tangents at positions
    ``missing`` among its last ``num_tangents`` placeholders; a gradient computed from missing
    tangents only comes out as zeros (the runtime sets it None)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    graph = torch.fx.Graph()
    graph._codegen = gm.graph._codegen
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    dropped: set[torch.fx.Node] = set()
    live_tangent: dict[torch.fx.Node, bool] = {}  # node -> computed from a given tangent
    sizes = SizeNodes(graph)

    def zeros(node: torch.fx.Node) -> torch.fx.Node:
        return _zeros(graph, node.meta["val"], sizes)

    tangents = {p: i for i, p in enumerate(placeholders[len(placeholders) - num_tangents:])}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = graph.node_copy(node)
            if node in tangents:
                if tangents[node] in missing:
                    dropped.add(node)
                else:
                    live_tangent[node] = True
            continue
        inputs = node.all_input_nodes
        if node.op == "output":
            graph.node_copy(node, lambda a: zeros(a) if a in dropped else env[a])
            continue
        live = any(live_tangent.get(a, False) for a in inputs)
        gone = [a for a in inputs if a in dropped]
        if gone and _metadata_only(node):
            live, gone = False, []
        if gone and not live:
            dropped.add(node)
            continue
        live_tangent[node] = live
        if gone and node.target in _ADDS and not node.kwargs and len(node.args) == 2:
            a, b = node.args
            kept = a if b in dropped else b
            if _same_meta(kept, node):
                if kept is a or node.target is aten.add.Tensor:
                    env[node] = env[kept]
                else:
                    env[node] = graph.call_function(aten.neg.default, (env[b],))
                    env[node].meta["val"] = node.meta["val"]
                continue
        env[node] = graph.node_copy(node, lambda a: zeros(a) if a in dropped else env[a])
    graph.eliminate_dead_code()
    return torch.fx.GraphModule(gm, graph)


def _zeros(graph: torch.fx.Graph, val: torch.Tensor, sizes: SizeNodes) -> torch.fx.Node:
    """Zeros laid out as ``val`` (a dense layout: channels-last, transposed), so that the ops
    reading them give their results the strides traced, which later views rely on. The order is
    read from the example's strides (hints: no guard); symbolic sizes become size nodes."""
    order = sorted(range(val.dim()), key=lambda d: -hint(val.stride(d)))  # outermost first (stable)
    if not _dense(val, order):  # expanded or overlapping: contiguous zeros, as before
        order = list(range(val.dim()))
    z = graph.call_function(aten.zeros.default, (sizes.sizes([val.shape[d] for d in order]),),
                            {"dtype": val.dtype, "device": val.device})
    z.meta["val"] = val.permute(order)  # contiguous: the strides sorted
    if order != sorted(order):
        z = graph.call_function(aten.permute.default, (z, [order.index(d) for d in range(val.dim())]))
        z.meta["val"] = val
    return z


def _dense(val: torch.Tensor, order: list[int]) -> bool:
    """Whether ``val``'s strides are those of a contiguous tensor with its dimensions in ``order``."""
    expected = 1
    for d in reversed(order):
        if not known_equal(val.shape[d], 1) and not known_equal(val.stride(d), expected):
            return False
        expected *= val.shape[d]
    return True


def _same_meta(kept: object, node: torch.fx.Node) -> bool:
    """Whether the sum ``node`` can be replaced by its term ``kept``: no broadcast, same dtype
    and the same strides (a later ``view`` of the sum may need its layout)."""
    if not isinstance(kept, torch.fx.Node):
        return False
    a, b = kept.meta.get("val"), node.meta.get("val")
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
            and a.dtype == b.dtype and known_same_shape(a, b) and _same_strides(a, b))


def _same_strides(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal strides for every admitted size, ignoring dimensions of size 1 (whose stride never
    matters)."""
    return all(known_equal(n, 1) or known_equal(sa, sb) for n, sa, sb in zip(a.shape, a.stride(), b.stride()))


class BackwardVariants:
    """Per gradient group, its backward graph and, compiled on first use, its specialisations."""

    def __init__(self, graphs: Sequence[torch.fx.GraphModule],
                 compile_fn: Callable[[torch.fx.GraphModule], Callable]) -> None:
        self.graphs = list(graphs)
        self.compile_fn = compile_fn
        self.cache: dict[tuple[int, frozenset[int]], Callable] = {}

    def get(self, group: int, num_tangents: int, missing: frozenset[int], default: Callable) -> Callable:
        """The backward of ``group`` without the tangents ``missing``; ``default`` (the full
        backward, zeros for the missing tangents) if it cannot be compiled."""
        key = (group, missing)
        if key not in self.cache:
            try:
                self.cache[key] = self.compile_fn(specialize(self.graphs[group], num_tangents, missing))
            except Exception as exc:  # the full backward still runs; only 0 * inf can differ
                log.warning("ember_aot: cannot compile the backward for the outputs given a "
                            "gradient, running the full one with zeros: %s: %s", type(exc).__name__, exc)
                self.cache[key] = default
        return self.cache[key]
