"""Runs compiled forward/backward graphs with the semantics of the original torch-level graph.

``CompiledPlan`` is one specialization of a captured graph. A call:
1. runs the compiled forward — inside ``AOTFunction`` (a ``torch.autograd.Function`` whose
   backward runs the compiled backward) when outputs need grad, else under ``no_grad``;
2. writes the new values of mutated inputs back into the caller's tensors (``copy_``);
3. rebuilds the user's outputs: tensors the graph produced, views of inputs (regenerated from
   the real input after the write-back, so they alias it as in eager), views of a base tensor
   the graph returned (so outputs that aliased each other in eager still do), constants.

Tensors saved for the backward live on the autograd ctx, so each call has its own. The backward
is once-differentiable: double backward raises a clear error.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.autograd.function import once_differentiable
from torch.utils import _pytree as pytree

from .analysis import CONSTANT, GRAPH, INPUT_ALIAS, GraphAnalysis

log = logging.getLogger("ember.aot")

TangentLayout = tuple[tuple[int, ...], tuple[int, ...], torch.dtype]


def _same_stride(size, stride, expected) -> bool:
    return all(s == 1 or a == b for s, a, b in zip(size, stride, expected))


def _coerce(grad: torch.Tensor, layout: TangentLayout) -> torch.Tensor:
    """``grad`` with the strides the backward graph was traced for (copied only if needed)."""
    size, stride, dtype = layout
    if grad.dtype == dtype and _same_stride(size, grad.stride(), stride):
        return grad
    out = torch.empty_strided(size, stride, dtype=dtype, device=grad.device)
    out.copy_(grad)
    return out


class AOTFunction(torch.autograd.Function):
    """Forward = the compiled forward graph; backward = the compiled backward graph."""

    @staticmethod
    def forward(ctx, plan: "CompiledPlan", *primals: torch.Tensor):  # type: ignore[override]
        outs = plan.fw(*primals)
        n = plan.num_fwd_outputs
        fwd = tuple(outs[:n])
        ctx.plan = plan
        ctx.save_for_backward(*outs[n:])
        ctx.mark_non_differentiable(*(fwd[i] for i in plan.nondiff_outputs))
        return fwd

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads: torch.Tensor):  # type: ignore[override]
        plan: CompiledPlan = ctx.plan
        tangents = [
            _coerce(grads[i], layout) for i, layout in zip(plan.diff_outputs, plan.tangent_layouts)
        ]
        results = plan.bw(*ctx.saved_tensors, *tangents)
        out: list[torch.Tensor | None] = [None] * (len(plan.tensor_pos) + 1)
        for j, g in zip(plan.grad_inputs, results):
            out[j + 1] = g
        return tuple(out)


@dataclasses.dataclass
class CompiledPlan:
    """One compiled specialization of a captured graph (see the module docstring)."""

    gm: torch.fx.GraphModule
    analysis: GraphAnalysis
    tensor_pos: list[int]
    mutated_inputs: list[int]           # primal indices written back after the forward
    inputs_mutated_in_graph: list[int]  # primal indices the compiled graph mutates itself
    num_fwd_outputs: int
    fw: Callable[..., Sequence[torch.Tensor]]
    bw: Callable[..., Sequence[torch.Tensor]] | None = None
    diff_outputs: list[int] = dataclasses.field(default_factory=list)
    tangent_layouts: list[TangentLayout] = dataclasses.field(default_factory=list)
    grad_inputs: list[int] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        diff = set(self.diff_outputs)
        self.nondiff_outputs = [i for i in range(self.num_fwd_outputs) if i not in diff]
        self._mutates = bool(self.mutated_inputs or self.inputs_mutated_in_graph)
        self._warned = False
        n_mut = len(self.mutated_inputs)
        n_graph = len(self.analysis.graph_outputs)
        self._base_slots = [n_mut + n_graph + g for g in range(len(self.analysis.base_groups))]
        produced = iter(range(n_mut, n_mut + n_graph))
        self._rebuild: list[tuple[str, Any, Any]] = []
        for info in self.analysis.outputs:
            if info.kind == GRAPH:
                self._rebuild.append((GRAPH, next(produced), None))
            elif info.kind == CONSTANT:
                self._rebuild.append((CONSTANT, info.value, None))
            else:
                slot = info.source if info.kind == INPUT_ALIAS else self._base_slots[info.source]
                self._rebuild.append((info.kind, slot, None if info.identity else info.layout))

    def _eager(self, args: Sequence[Any], why: str) -> Any:
        if not self._warned:
            log.warning("ember_aot: running this graph eagerly for this call: %s", why)
            self._warned = True
        return self.gm(*args)

    def _bases_match(self, outs: Sequence[torch.Tensor]) -> bool:
        for slot, layout in zip(self._base_slots, self.analysis.base_layouts):
            base = outs[slot]
            if tuple(base.size()) != layout.size or not _same_stride(
                layout.size, base.stride(), layout.stride
            ):
                return False
        return True

    def __call__(self, *args: Any) -> Any:
        primals = [args[i] for i in self.tensor_pos]
        if self._mutates and _mutated_input_aliases(primals, self):
            return self._eager(args, "a mutated input shares memory with another input")
        if self.bw is not None:
            outs = AOTFunction.apply(self, *primals)
        else:
            with torch.no_grad():
                outs = self.fw(*primals)
        if self._base_slots and not self._bases_match(outs):
            if self.inputs_mutated_in_graph:
                raise RuntimeError("ember_aot: compiled graph returned a base with another layout")
            return self._eager(args, "the compiled graph returned a base with another layout")
        if self.mutated_inputs:
            with torch.no_grad():
                for j, new in zip(self.mutated_inputs, outs):
                    if new is not primals[j]:
                        primals[j].copy_(new)
        result = []
        for kind, slot, layout in self._rebuild:
            if kind == GRAPH:
                result.append(outs[slot])
            elif kind == CONSTANT:
                result.append(slot)
            else:
                src = args[slot] if kind == INPUT_ALIAS else outs[slot]
                if layout is None:
                    result.append(src)
                else:
                    offset = src.storage_offset() + layout.offset
                    result.append(src.as_strided(layout.size, layout.stride, offset))
        return pytree.tree_unflatten(result, self.analysis.out_spec)


def _mutated_input_aliases(primals: list[torch.Tensor], plan: CompiledPlan) -> bool:
    storages: dict[int, int] = {}
    for t in primals:
        key = t.untyped_storage().data_ptr()
        storages[key] = storages.get(key, 0) + 1
    for j in plan.mutated_inputs + plan.inputs_mutated_in_graph:
        t = primals[j]
        if t.untyped_storage().nbytes() and storages[t.untyped_storage().data_ptr()] > 1:
            return True
    return False


class EagerPlan:
    """Runs the original graph with PyTorch eager (for graphs ember_aot cannot compile)."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm

    def __call__(self, *args: Any) -> Any:
        return self.gm(*args)
