"""Traces the torch-level graph to a functional aten graph with make_fx under fake tensors.

Two entry points:
- ``trace_inference``: forward only, traced through ``torch.func.functionalize`` (with symbolic
  sizes, which that would pin, as the joint is traced: below).
- ``trace_joint``: forward and backward together. The captured graph runs under real autograd
  (on fake tensors), ``torch.autograd.grad`` produces the backward, and make_fx records both as
  one straight-line aten program. Its in-place ops are then rewritten into functional ones
  (``inplace.remove_mutations``) or, where an alias could observe them, the program is traced
  again through ``torch.func.functionalize`` (functorch's functionalize cannot host autograd
  itself). Functionalization lets some in-place ops on a composite kernel's own temporaries
  through (``inplace.remove_leftover_mutations`` rewrites those).
  Running the user's graph under autograd, rather than an already-lowered copy, keeps
  ``torch.no_grad()`` regions and ``detach()`` inside the graph exact.

Both return a ``TracedGraph`` whose module has flat tensor placeholders ``primals_*`` (the
tensor inputs, in order) and, for the joint, ``tangents_*``; its outputs are, in order: the new
values of mutated inputs (functionalization's trailing ``copy_`` into an input, turned into an
output), the tensors the user graph produces (see ``GraphAnalysis.produced``), then for the
joint the non-None gradients of the primals. An input written where autograd records it
(``GraphAnalysis.grad_mutated_inputs``) is not written at all: the user graph writes a copy of
it (with its strides), whose final value is one of the produced tensors, and the gradient of
the primal is what flows into it through the copy (torch's AOTAutograd traces such inputs the
same way).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import torch
import torch.fx
from torch._subclasses import FakeTensorMode
from torch.fx import traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

from .analysis import GraphAnalysis, fake_like, group_base
from .decompositions import DecompositionTable
from .errors import AOTUnsupported
from .graph_utils import MUTATED
from .inplace import remove_leftover_mutations, remove_mutations
from .symbolic import is_symbolic, known_equal
from .written_back import WrittenBackInterpreter

aten = torch.ops.aten


@dataclasses.dataclass
class TracedGraph:
    gm: torch.fx.GraphModule
    mutated_inputs: list[int]   # primal index of each leading mutation output
    num_fwd_outputs: int        # mutation outputs + produced tensors
    diff_outputs: list[int]     # forward-output indices that receive a tangent
    tangent_layouts: list[tuple[tuple[int, ...], tuple[int, ...], torch.dtype, torch.device]]
    grad_inputs: list[int]      # primal index of each gradient output
    inputs_mutated_in_graph: list[int] = dataclasses.field(default_factory=list)
    grad_tangents: list[int] = dataclasses.field(default_factory=list)  # see _tangent_masks


def primal_positions(args: Sequence[Any]) -> list[int]:
    """Positions of the arguments that become the traced graph's placeholders: the tensors, and
    the ints that vary (``SymInt``, in a symbolic trace); other values are baked in."""
    return [i for i, a in enumerate(args) if isinstance(a, (torch.Tensor, torch.SymInt))]


class _Calls:
    """Binds the user graph's other arguments so traced functions take the primals only."""

    def __init__(self, gm: torch.fx.GraphModule, args: Sequence[Any], analysis: GraphAnalysis):
        self.gm = gm
        self.args = list(args)
        self.tensor_pos = primal_positions(args)
        self.analysis = analysis

    def produced(self, primals: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        full = list(self.args)
        for i, p in zip(self.tensor_pos, primals):
            full[i] = p
        written = self.analysis.grad_mutated_inputs
        for i in written:  # a copy with the input's strides (``clone`` would make some contiguous)
            p = full[i]
            full[i] = torch.empty_strided(p.size(), p.stride(), dtype=p.dtype, device=p.device).copy_(p)
        # node by node, so that each aten node keeps the ``stack_trace`` (the user's line) of
        # the node it comes from: an error when the graph runs names the user's code
        keep = frozenset(name for name in self.analysis.base_nodes if name is not None)
        interpreter = WrittenBackInterpreter(self.gm, keep)
        with fx_traceback.preserve_node_meta():
            flat = pytree.tree_leaves(interpreter.run(*full))
        outs = [flat[k] for k in self.analysis.graph_outputs]
        for group, node in zip(self.analysis.base_groups, self.analysis.base_nodes):
            # the base analysis chose: an output itself, or the node whose value it was; tracing
            # (functionalization) does not always keep ``_base`` links, and another member
            # (an ``unbind`` output) would be returned as the base
            member = next((k for k in group if self.analysis.outputs[k].identity), None)
            if member is not None:
                outs.append(flat[member])
            elif node in interpreter.kept:
                outs.append(interpreter.kept[node])
            else:
                outs.append(group_base([flat[k] for k in group]))
        return outs + [full[i] for i in written]


def _fakes(mode: FakeTensorMode, calls: _Calls, keep_grad: bool) -> list[Any]:
    return [_fresh(mode, calls.args[i], keep_grad) for i in calls.tensor_pos]


def _sizes(value: Any) -> tuple:
    """A primal's sizes and strides (a symbolic int: itself)."""
    if isinstance(value, torch.Tensor):
        return (*value.shape, *value.stride())
    return (value,)


def _fresh(mode: FakeTensorMode, value: Any, keep_grad: bool) -> Any:
    """A fresh fake leaf like the tensor ``value``; a symbolic int as it is."""
    if not isinstance(value, torch.Tensor):
        return value
    return fake_like(mode, value if keep_grad else value.detach())


def trace_inference(
    gm: torch.fx.GraphModule,
    args: Sequence[Any],
    analysis: GraphAnalysis,
    decompositions: DecompositionTable,
    mode: FakeTensorMode,
    keep_input_mutations: bool = False,
) -> TracedGraph:
    """Trace the forward of ``gm`` alone (no autograd) to a functional aten graph."""
    calls = _Calls(gm, args, analysis)

    def forward(primals):
        return calls.produced(primals)

    primals = _fakes(mode, calls, keep_grad=False)
    if any(is_symbolic(v) for p in primals for v in _sizes(p)):
        # torch.func.functionalize reads sizes as ints (``linear`` on a 3-d input), which pins
        # every symbol it meets: trace as the joint is traced, functionalizing only if needed
        with mode, torch.no_grad():
            traced = make_fx(forward, decomposition_table=decompositions)(primals)
        if remove_mutations(traced, mode, primals):
            return _finalize(traced, calls, len(primals), 0, keep_input_mutations)
    with mode, torch.no_grad():
        traced = make_fx(
            torch.func.functionalize(forward, remove="mutations"),
            decomposition_table=decompositions,
        )(primals)
    remove_leftover_mutations(traced, mode)
    return _finalize(traced, calls, len(primals), 0, keep_input_mutations)


def trace_joint(
    gm: torch.fx.GraphModule,
    args: Sequence[Any],
    analysis: GraphAnalysis,
    decompositions: DecompositionTable,
    mode: FakeTensorMode,
) -> TracedGraph:
    """Trace forward and backward of ``gm`` into one functional aten graph."""
    calls = _Calls(gm, args, analysis)
    produced = analysis.produced
    diff = [k for k, p in enumerate(produced) if p[0]]
    tangent_layouts = []
    for k in diff:
        _, layout, dtype, device = produced[k]
        tangent_layouts.append((layout.size, _tangent_stride(layout.size, layout.stride), dtype, device))
    primals = _fakes(mode, calls, keep_grad=True)
    wrt = [j for j, p in enumerate(primals) if isinstance(p, torch.Tensor) and p.requires_grad]
    with mode:
        tangents = [torch.empty_strided(s, st, dtype=dt, device=dev) for s, st, dt, dev in tangent_layouts]
    grad_mask: list[bool] = []

    def joint(primals, tangents):
        with torch.enable_grad():
            outs = calls.produced(primals)
            diff_outs = [outs[k] for k in diff]
            inputs = [primals[j] for j in wrt]
            if diff_outs and inputs:
                grads = torch.autograd.grad(diff_outs, inputs, tangents, allow_unused=True)
            else:
                grads = [None] * len(inputs)
        grad_mask[:] = [g is not None for g in grads]
        return list(outs) + [g for g in grads if g is not None]

    with mode:
        traced = make_fx(joint, decomposition_table=decompositions)(primals, tangents)
    if not remove_mutations(traced, mode, primals):
        first = traced

        def joint_again(primals, tangents):
            return first(primals, tangents)

        plain = [_fresh(mode, p, keep_grad=False) for p in primals]
        with mode:
            traced = make_fx(
                torch.func.functionalize(joint_again, remove="mutations"),
                decomposition_table=decompositions,
            )(plain, tangents)
        remove_leftover_mutations(traced, mode)
    result = _finalize(traced, calls, len(primals), len(tangents), False)
    result.diff_outputs = [len(result.mutated_inputs) + k for k in diff]
    result.tangent_layouts = tangent_layouts
    result.grad_inputs = [j for j, keep in zip(wrt, grad_mask) if keep]
    result.grad_tangents = _tangent_masks(result.gm, len(primals), result.num_fwd_outputs)
    return result


def _tangent_masks(gm: torch.fx.GraphModule, num_primals: int, num_fwd_outputs: int) -> list[int]:
    """For each gradient output of the joint graph, a bit mask of the tangents it is computed
    from (bit k: the k-th tangent). Eager autograd leaves an input's ``.grad`` None when none of
    the outputs it reaches got a gradient; the runtime uses these masks to do the same instead
    of returning the zeros the graph computes from zero tangents."""
    masks: dict[torch.fx.Node, int] = {}
    placeholders = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            k = placeholders - num_primals
            masks[node] = 1 << k if k >= 0 else 0
            placeholders += 1
        elif node.op != "output":
            mask = 0
            for a in node.all_input_nodes:
                mask |= masks[a]
            masks[node] = mask
    output = next(n for n in gm.graph.nodes if n.op == "output")
    return [masks[g] if isinstance(g, torch.fx.Node) else 0 for g in output.args[0][num_fwd_outputs:]]


def _tangent_stride(size: tuple[int, ...], stride: tuple[int, ...]) -> tuple[int, ...]:
    """The output's stride when it is dense (contiguous or channels-last), else contiguous.
    Symbolic sizes: the output's stride only when it is dense for every admitted size."""
    contiguous = []
    acc = 1
    for s in reversed(size):
        contiguous.append(acc)
        acc = acc * s if isinstance(s, torch.SymInt) else acc * max(s, 1)  # symbolic sizes are >= 2
    contiguous = tuple(reversed(contiguous))
    if len(size) == 4:
        n, c, h, w = size
        channels_last = (h * w * c, 1, w * c, c)
        if _known_same_stride(size, stride, channels_last):
            return stride
    return stride if _known_same_stride(size, stride, contiguous) else contiguous


def _known_same_stride(size: Sequence[Any], stride: Sequence[Any], expected: Sequence[Any]) -> bool:
    """``same_stride`` for every admitted size (sizes may be symbolic)."""
    return all(known_equal(s, 1) or known_equal(a, b) for s, a, b in zip(size, stride, expected))


def _is_mutable(node: torch.fx.Node) -> bool:
    target = node.target
    return isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable


def _finalize(
    traced: torch.fx.GraphModule,
    calls: _Calls,
    num_primals: int,
    num_tangents: int,
    keep_input_mutations: bool,
) -> TracedGraph:
    """Turn trailing ``copy_`` into inputs into outputs, drop ``detach``, flatten the module."""
    graph = traced.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == num_primals + num_tangents
    primal_index = {n: j for j, n in enumerate(placeholders[:num_primals])}
    output_node = next(n for n in graph.nodes if n.op == "output")
    outs = list(pytree.tree_leaves(output_node.args[0]))

    mutations: dict[int, torch.fx.Node] = {}
    in_graph: list[int] = []
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target is aten.detach.default:
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
        elif node.target is aten.copy_.default and node.args[0] in primal_index:
            j = primal_index[node.args[0]]
            if j in mutations or j in in_graph:
                raise AOTUnsupported(f"input {j} written back twice by functionalization")
            if keep_input_mutations:
                in_graph.append(j)
            else:
                mutations[j] = node.args[1]
                graph.erase_node(node)
        elif _is_mutable(node) and not keep_input_mutations:
            raise AOTUnsupported(f"mutating op {node.target} survived functionalization")

    expected = {calls.tensor_pos.index(i) for i in calls.analysis.mutated_inputs}
    missing = expected - set(mutations) - set(in_graph)
    if missing:
        raise AOTUnsupported(f"mutation of inputs {sorted(missing)} not seen by functionalization")
    if num_tangents:
        _check_forward_only(list(mutations.values()), placeholders[num_primals:])

    order = sorted(mutations)
    for j in order + in_graph:
        placeholders[j].meta[MUTATED] = True
    new_outs = [mutations[j] for j in order] + outs
    gm = _flat_module(traced, placeholders, new_outs)
    return TracedGraph(
        gm=gm,
        mutated_inputs=order,
        num_fwd_outputs=len(order) + len(calls.analysis.produced),
        diff_outputs=[],
        tangent_layouts=[],
        grad_inputs=[],
        inputs_mutated_in_graph=in_graph,
    )


def _check_forward_only(nodes: list[torch.fx.Node], tangents: list[torch.fx.Node]) -> None:
    """Input mutations must be computable in the forward (not depend on any tangent)."""
    seen: set[torch.fx.Node] = set()
    stack = list(nodes)
    tangent_set = set(tangents)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in tangent_set:
            raise AOTUnsupported("an input is mutated by the backward pass")
        stack.extend(n.all_input_nodes)


def _flat_module(
    root: torch.fx.GraphModule, placeholders: list[torch.fx.Node], outputs: list[torch.fx.Node]
) -> torch.fx.GraphModule:
    """Copy ``root``'s graph into one with plain (non-pytree) codegen and a tuple output."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in root.graph.nodes:
        if node.op == "output":
            continue
        env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[n] for n in outputs))
    graph.eliminate_dead_code()
    gm = torch.fx.GraphModule(root, graph)
    gm.recompile()
    return gm
