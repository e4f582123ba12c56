"""Runs compiled forward/backward graphs with the semantics of the original torch-level graph.

``CompiledPlan`` is one specialization of a captured graph. A call:
1. runs the compiled forward — inside ``AOTFunction`` nodes (``torch.autograd.Function``)
   when outputs need grad, else under ``no_grad``: one node per gradient group
   (``grad_groups``: usually one), each linked only to the inputs its compiled backward returns
   gradients for, as eager autograd links outputs only to what they were computed from;
2. writes the new values of mutated inputs back into the caller's tensors (one
   ``_foreach_copy_`` per dtype and device), and those of the inputs written where autograd
   records it (``GraphAnalysis.grad_mutated_inputs``) with a ``copy_`` under grad mode, so
   that the input's history, as after eager's in-place op, runs through the compiled graph's
   backward (into the input's history before the call);
3. rebuilds the user's outputs: tensors the graph produced, views of inputs (regenerated from
   the real input after the write-back, so they alias it as in eager), views of a base tensor
   the graph returned (so outputs that aliased each other in eager still do), constants. An
   in-place op on any of them is taken or refused as eager's autograd would (``views``).

Tensors saved for the backward live on the autograd ctx, so each call has its own. A plan
traced with symbolic sizes (``symbolic_inputs``) saves sizes too, as ints; the layouts it needs
as numbers (tangents to make, views to regenerate) and the sizes the graph returns are computed
per call from the inputs' sizes (``symbolic.SizeProgram``). The backward
is not differentiable itself: gradients taken with ``create_graph=True`` raise a clear error
when differentiated again (double backward).
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import weakref
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .analysis import CONSTANT, GRAPH, INPUT_ALIAS, GraphAnalysis, same_stride
from .bw_variants import BackwardVariants
from .grad_groups import GradGroup
from .mutations import AliasCheck, WriteBack, apart, picker
from .symbolic import SizeProgram
from .views import MultiView, not_a_view

log = logging.getLogger("ember.aot")

TangentLayout = tuple[tuple[int, ...], tuple[int, ...], torch.dtype, torch.device]


def _coerce(grad: torch.Tensor | None, layout: TangentLayout) -> torch.Tensor:
    """``grad`` with the strides the backward graph was traced for (copied only if needed); zeros
    for an output that got no gradient (grads are not materialized: most outputs never get one)."""
    size, stride, dtype, device = layout
    if grad is None:
        return torch.empty_strided(size, stride, dtype=dtype, device=device).zero_()
    if grad.dtype == dtype and same_stride(size, grad.stride(), stride):
        return grad
    out = torch.empty_strided(size, stride, dtype=dtype, device=grad.device)
    out.copy_(grad)
    return out


class AOTFunction(torch.autograd.Function):
    """One gradient group of a compiled graph (``CompiledPlan.grad_groups``). Forward: the
    compiled forward (run by the first group, into ``outs``), giving this group's outputs: all
    the forward outputs when the graph has one group; backward: the group's compiled backward."""

    @staticmethod
    def forward(ctx, plan: "CompiledPlan", g: int, primals: list[Any],  # type: ignore[override]
                outs: list[torch.Tensor], layouts: list[TangentLayout], *inputs: torch.Tensor):
        if not outs:
            outs.extend(plan.fw(*primals))
        m, n = len(plan.mutated_inputs), plan.num_fwd_outputs
        ctx.plan, ctx.group, ctx.layouts = plan, g, layouts
        # The inputs that get gradients, so that gradients computed with create_graph=True stay
        # connected to them (see _no_double_backward). Leaves are alive anyway; non-leaf inputs
        # are held weakly, so this does not keep activations alive.
        ctx.grad_primals = [p if p.is_leaf else weakref.ref(p) for p in inputs]
        ctx.set_materialize_grads(False)
        if plan._one_group:
            _save(ctx, plan.kept_apart(outs[n:], primals))
            # the new values of mutated inputs stay in ``outs`` for the write-back: they never
            # get gradients, and each output of an autograd Function costs a wrapping
            fwd = tuple(map(not_a_view, outs[m:n]))
            if plan.nondiff_produced:
                ctx.mark_non_differentiable(*(fwd[i] for i in plan.nondiff_produced))
            return fwd
        # detached: a node's saved values must not hold (and keep alive) another node's outputs
        _save(ctx, plan.kept_apart([_detached(outs[n + s]) for s in plan.grad_groups[g].saved], primals))
        return tuple(not_a_view(outs[i]) for i in plan.group_outputs[g])

    @staticmethod
    def backward(ctx, *grads: torch.Tensor):  # type: ignore[override]
        plan: CompiledPlan = ctx.plan
        group = plan.grad_groups[ctx.group]
        if plan._one_group:
            grads = tuple(grads[i] for i in plan.diff_produced)
        create_graph = torch.is_grad_enabled()  # autograd runs a backward without grad otherwise
        if create_graph:
            with torch.no_grad():
                results = _run_backward(ctx, plan, group, grads)
        else:
            results = _run_backward(ctx, plan, group, grads)
        if create_graph and results:
            results = _no_double_backward(results, ctx.grad_primals)
        if not group.grads:  # linked to every input requiring grad (see CompiledPlan.__call__)
            results = [None] * len(ctx.grad_primals)
        elif any(g is None for g in grads):
            _drop_unreached(results, plan, group, grads)
        return (None, None, None, None, None, *results)


def _run_backward(ctx: Any, plan: "CompiledPlan", group: GradGroup, grads: Sequence[Any]) -> list[Any]:
    """The group's compiled backward on the saved values and the tangents (grad mode off)."""
    bw = plan.bw[ctx.group]
    missing: frozenset[int] = frozenset()
    if plan.bw_variants is not None and any(g is None for g in grads):
        missing = frozenset(k for k, g in enumerate(grads) if g is None)
        bw = plan.bw_variants.get(ctx.group, len(grads), missing, bw)
    tangents = [_coerce(g, ctx.layouts[i]) for g, i in zip(grads, group.outputs)]
    saved = _saved(ctx)
    try:
        return list(bw(*saved, *tangents))
    except RuntimeError as exc:  # a specialised backward that fails: the full one, as before
        if bw is plan.bw[ctx.group]:
            raise
        log.warning("ember_aot: a backward specialised to the gradients given failed (%s); "
                    "running the full backward", exc)
        plan.bw_variants.cache[(ctx.group, missing)] = bw = plan.bw[ctx.group]
        return list(bw(*saved, *tangents))


def _save(ctx: Any, values: Sequence[Any]) -> None:
    """Keep the forward's ``values`` for the backward: tensors through ``save_for_backward``,
    sizes (ints, in a plan with symbolic sizes) on the ctx."""
    if all(map(isinstance, values, itertools.repeat(torch.Tensor))):
        ctx.save_for_backward(*values)
        ctx.scalars = ()
        return
    ctx.save_for_backward(*(v for v in values if isinstance(v, torch.Tensor)))
    ctx.scalars = tuple((k, v) for k, v in enumerate(values) if not isinstance(v, torch.Tensor))


def _saved(ctx: Any) -> Sequence[Any]:
    """The values ``_save`` kept, in their order."""
    tensors = ctx.saved_tensors
    if not ctx.scalars:
        return tensors
    out = list(tensors)
    for k, v in ctx.scalars:  # ascending positions: each lands where it was
        out.insert(k, v)
    return out


def _detached(value: Any) -> Any:
    return value.detach() if isinstance(value, torch.Tensor) else value


def _drop_unreached(results: list[torch.Tensor | None], plan: "CompiledPlan", group: GradGroup,
                    grads: Sequence[Any]) -> None:
    """Set to None the gradients computed only from outputs that got no gradient: eager autograd
    never reaches those inputs and leaves their ``.grad`` None (optimizers skip such parameters;
    a zero gradient would still move them through momentum and weight decay)."""
    given = 0
    for g, k in zip(grads, group.outputs):
        if g is not None:
            given |= 1 << k
    for r, k in enumerate(group.grads):
        mask = plan.grad_tangents[k]
        if mask and not mask & given:
            results[r] = None


_DOUBLE_BACKWARD = (
    b"ember_aot: double backward (differentiating gradients obtained with create_graph=True) "
    b"through a compiled graph is not supported; run this function without ember to do that"
)


def _no_double_backward(grads: list[torch.Tensor], refs: list[Any]) -> list[torch.Tensor]:
    """``grads`` plus a zero that depends on the inputs through a node raising a clear error,
    so differentiating the gradients again fails loudly."""
    primals = [r if isinstance(r, torch.Tensor) else r() for r in refs]
    primals = [p for p in primals if p is not None]
    with torch.enable_grad():
        anchor = sum(p.reshape(-1)[:0].sum() for p in primals)
        if not isinstance(anchor, torch.Tensor) or not anchor.requires_grad:
            anchor = torch.zeros((), requires_grad=True)
        zero = torch._C._functions.DelayedError(_DOUBLE_BACKWARD, 1)(anchor)
        return [g + zero.to(g.dtype) for g in grads]


@dataclasses.dataclass
class CompiledPlan:
    """One compiled specialization of a captured graph (see the module docstring)."""

    gm: torch.fx.GraphModule
    analysis: GraphAnalysis
    tensor_pos: list[int]               # positions of the primals: tensors (and varying ints, symbolic)
    mutated_inputs: list[int]           # primal indices written back after the forward
    inputs_mutated_in_graph: list[int]  # primal indices the compiled graph mutates itself
    num_fwd_outputs: int
    fw: Callable[..., Sequence[torch.Tensor]]
    bw: list[Callable[..., Sequence[torch.Tensor]]] = dataclasses.field(default_factory=list)
    diff_outputs: list[int] = dataclasses.field(default_factory=list)
    tangent_layouts: list[TangentLayout] = dataclasses.field(default_factory=list)
    grad_inputs: list[int] = dataclasses.field(default_factory=list)
    grad_groups: list[GradGroup] = dataclasses.field(default_factory=list)  # one per bw
    # per gradient: bit mask of the tangents (indices into diff_outputs) it is computed from
    grad_tangents: list[int] = dataclasses.field(default_factory=list)
    # backward graphs specialised to the tangents given, when some are None (see bw_variants)
    bw_variants: BackwardVariants | None = None
    # symbolic plan: the values traced with, one per argument (fakes with symbolic sizes, SymInts
    # for varying ints); sizes, layouts and size outputs are then computed per call. None: static
    symbolic_inputs: list[Any] | None = None

    def __post_init__(self) -> None:
        diff, n_mut = set(self.diff_outputs), len(self.mutated_inputs)
        # one gradient group: positions among the produced outputs the autograd Function returns
        self.diff_produced = [i - n_mut for i in self.diff_outputs]
        self.nondiff_produced = [i - n_mut for i in range(n_mut, self.num_fwd_outputs) if i not in diff]
        self.group_outputs = [tuple(self.diff_outputs[i] for i in g.outputs) for g in self.grad_groups]
        self._group_inputs = [picker([self.grad_inputs[k] for k in g.grads]) for g in self.grad_groups]
        self._one_group = len(self.grad_groups) == 1
        tensors_only = self.symbolic_inputs is None or all(
            isinstance(self.symbolic_inputs[i], torch.Tensor) for i in self.tensor_pos)
        n_graph, n_bases = len(self.analysis.graph_outputs), len(self.analysis.base_groups)
        # (position in the args, slot of its new value) of each input written under autograd
        self._grad_written = [(i, n_mut + n_graph + n_bases + k)
                              for k, i in enumerate(self.analysis.grad_mutated_inputs)]
        self._grad_written_primals = grad_written = [self.tensor_pos.index(i) for i, _ in self._grad_written]
        self._mutates = bool(self.mutated_inputs or self.inputs_mutated_in_graph or grad_written)
        self._aliased = AliasCheck(self.mutated_inputs + self.inputs_mutated_in_graph + grad_written,
                                   tensors_only)
        self._write_back = WriteBack(self.mutated_inputs)
        self._warned = False
        self._base_slots = [n_mut + n_graph + g for g in range(n_bases)]
        produced = iter(range(n_mut, n_mut + n_graph))
        # (kind, slot or constant, layout of the view or None for the tensor itself, grad)
        self._rebuild: list[tuple[str, Any, Any, bool]] = []
        for info in self.analysis.outputs:
            if info.kind == GRAPH:
                self._rebuild.append((GRAPH, next(produced), None, False))
            elif info.kind == CONSTANT:
                self._rebuild.append((CONSTANT, info.value, None, False))
            else:
                slot = info.source if info.kind == INPUT_ALIAS else self._base_slots[info.source]
                layout = None if info.identity else (info.layout.size, info.layout.stride, info.layout.offset)
                self._rebuild.append((info.kind, slot, layout, info.requires_grad))
        self._base_layouts = [(b.size, b.stride) for b in self.analysis.base_layouts]
        # outputs one multi-output view call made: (positions, their (kind, slot), their layouts)
        self._multi_views = [(ks, self._rebuild[ks[0]][:2], [self._rebuild[k][2] for k in ks])
                             for ks in self.analysis.multi_views]
        self._n_outputs = len(self._rebuild)
        # the common case: the user's outputs are the graph's outputs, in order, as a tuple
        self._passthrough = (
            not self.mutated_inputs and not self._base_slots and not self.analysis.multi_views
            and not self._grad_written
            and [r[:2] for r in self._rebuild] == [(GRAPH, i) for i in range(n_graph)]
            and self.analysis.out_spec == pytree.tree_structure(tuple(range(n_graph)))
        )
        # symbolic sizes: the layouts above as numbers, for the sizes of each call (those of the
        # outputs only when they are rebuilt)
        outputs = None if self._passthrough else (self._rebuild, self._base_layouts)
        self._sizes = None if self.symbolic_inputs is None else SizeProgram(
            (self.tangent_layouts, outputs), self.symbolic_inputs)

    def kept_apart(self, saved: Sequence[Any], primals: Sequence[Any]) -> Sequence[Any]:
        """``saved``, with a copy of each value that shares memory with an input the call will
        write under autograd (the backward reads the value before the write)."""
        if not self._grad_written_primals:
            return saved
        return apart(saved, [primals[j] for j in self._grad_written_primals])

    def calls_fw_as_is(self, nargs: int) -> bool:
        """Whether a call of ``nargs`` arguments without grad is ``self.fw(*args)`` and nothing
        else: no backward, no input to write back, no output to rebuild or size to compute."""
        return (not self.bw and not self._mutates and self._passthrough and self._sizes is None
                and self.tensor_pos == list(range(nargs)) and self.num_fwd_outputs == self._n_outputs)

    def _eager(self, args: Sequence[Any], why: str) -> Any:
        if not self._warned:
            log.warning("ember_aot: running this graph eagerly for this call: %s", why)
            self._warned = True
        return self.gm(*args)

    def _grouped_forward(self, primals: list[Any], layouts: list[TangentLayout]) -> list[torch.Tensor]:
        """The compiled forward's outputs, with one autograd node per gradient group."""
        outs: list[torch.Tensor] = []
        for g, pick in enumerate(self._group_inputs):
            attached = AOTFunction.apply(self, g, primals, outs, layouts, *pick(primals))
            for i, t in zip(self.group_outputs[g], attached):
                outs[i] = t
        return outs

    def _bases_match(self, outs: Sequence[torch.Tensor], layouts: list[tuple]) -> bool:
        for slot, (size, stride) in zip(self._base_slots, layouts):
            base = outs[slot]
            if tuple(base.size()) != size or not same_stride(size, base.stride(), stride):
                return False
        return True

    def __call__(self, *args: Any) -> Any:
        primals = [args[i] for i in self.tensor_pos]
        tangent_layouts, rebuild, base_layouts = self.tangent_layouts, self._rebuild, self._base_layouts
        if self._sizes is not None:
            tangent_layouts, outputs = self._sizes(args)
            if outputs is not None:
                rebuild, base_layouts = outputs
        if self._mutates and self._aliased(primals):
            return self._eager(args, "a mutated input shares memory with another input")
        if self._one_group:
            # without gradients to return (no graph input gets one), the outputs still need grad
            linked = self._group_inputs[0](primals) or [
                p for p in primals if isinstance(p, torch.Tensor) and p.requires_grad]
            raw: list[Any] = []
            outs = AOTFunction.apply(self, 0, primals, raw, tangent_layouts, *linked)
            if self.mutated_inputs:
                outs = (*raw[:len(self.mutated_inputs)], *outs)
        elif self.bw:
            outs = self._grouped_forward(primals, tangent_layouts)
        elif torch.is_grad_enabled():
            with torch.no_grad():
                outs = self.fw(*primals)
        else:
            outs = self.fw(*primals)
        if self._passthrough:
            return tuple(outs[:self._n_outputs])
        if self._base_slots and not self._bases_match(outs, base_layouts):
            if self.inputs_mutated_in_graph:
                raise RuntimeError("ember_aot: compiled graph returned a base with another layout")
            return self._eager(args, "the compiled graph returned a base with another layout")
        if self.mutated_inputs:
            self._write_back(primals, outs)
        for i, slot in self._grad_written:
            args[i].copy_(outs[slot])
        result = []
        for kind, slot, layout, grad in rebuild:
            if kind == GRAPH:
                result.append(outs[slot])
            elif kind == CONSTANT:
                result.append(slot)
            else:
                src = args[slot] if kind == INPUT_ALIAS else outs[slot]
                if src.requires_grad and not grad:
                    src = src.detach()
                if layout is None:
                    result.append(src)
                else:
                    size, stride, offset = layout
                    result.append(src.as_strided(size, stride, src.storage_offset() + offset))
        for positions, (kind, slot), layouts in self._multi_views:
            src = args[slot] if kind == INPUT_ALIAS else outs[slot]
            for k, view in zip(positions, MultiView.apply(src, layouts)):
                result[k] = view
        return pytree.tree_unflatten(result, self.analysis.out_spec)


class EagerPlan:
    """Runs the original graph with PyTorch eager (for graphs ember_aot cannot compile)."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm

    def __call__(self, *args: Any) -> Any:
        return self.gm(*args)
