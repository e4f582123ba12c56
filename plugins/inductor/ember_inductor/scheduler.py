"""Scheduler: dependencies, dead code removal, fusion into kernels, program order.

A kernel (:class:`FusedGroup`) iterates ``outer`` ranges (parallel) and, for reductions, ``r``
ranges inside. Nodes fuse when their iteration spaces agree (same numel, or numel = outer*r for
pointwise work inside a reduction loop) and every read of a buffer produced in the kernel is at
exactly the index it was written at, so no value is ever recomputed and no cross-iteration
dependence appears. Reads are analysed by running node bodies with a recording ops handler.
A node whose outer iteration space has no elements computes nothing: it is an
:class:`EmptyGroup`, for which no kernel is planned nor generated (its index expressions would
divide by the zero sizes); the wrapper only allocates its empty buffer.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import sympy

from . import indexing, ir, mutation
from .indexing import FloorDiv, ModularIndexing
from .virtualized import RecordingHandler, set_handler

MAX_FUSED_NODES = 64
SHARED_FRACTION = 64  # a read shared by two kernels fuses them when at least 1/64 of their work


class SchedulerNode:
    """A computed buffer with its reads and writes in its own index variables."""

    def __init__(self, buf: ir.ComputedBuffer, order: int) -> None:
        self.buf = buf
        self.name = buf.name
        self.order = order
        self.size, self.rsize = buf.ranges()
        self.body = buf.store_fn()
        self.ivars = indexing.make_vars("i", len(self.size))
        self.jvars = indexing.make_vars("j", len(self.rsize))
        rec = RecordingHandler()
        with set_handler(rec):
            self.body(self.ivars, self.jvars)
        self.reads = rec.loads
        self.writes = rec.stores
        self.read_names = {n for n, _ in self.reads}
        # a scatter adds into its target in place: it runs after the target's kernel, alone
        self.fusable = not isinstance(buf, ir.ScatterBuffer)
        if not self.fusable:
            self.read_names.add(buf.target.name)
        self.is_reduction = buf.is_reduction()
        self.numel = indexing.numel(self.size)
        self.rnumel = indexing.numel(self.rsize)
        self.reduction_types = rec.reduction_types
        self.indirect = rec.indirect  # reads through loaded indices

    def is_extern(self) -> bool:
        return False


class ExternNode:
    def __init__(self, kernel: ir.ExternKernel, order: int) -> None:
        self.kernel = kernel
        self.name = kernel.name
        self.order = order
        self.read_names = {ir.unwrap_storage_name(b) for b in kernel.input_buffers()}
        self.writes = [(o.name, None) for o in kernel.outputs]

    def is_extern(self) -> bool:
        return True


@dataclasses.dataclass
class NodePlacement:
    node: SchedulerNode
    level: str  # "outer" (once per outer iteration) or "inner" (inside the r loop)
    index_map: Callable[[Sequence, Sequence], tuple[list, list]]  # kernel vars -> node vars


@dataclasses.dataclass
class KernelPlan:
    outer: list
    r: list
    placements: list[NodePlacement]
    stages: list[tuple[str, list[NodePlacement]]]


def _remap(kvars: Sequence, kranges: Sequence, target: Sequence) -> list:
    if list(kranges) == list(target):
        return list(kvars)
    return indexing.delinearize(indexing.linearize(kvars, kranges), target)


def _count_div(e: Any) -> int:
    return len(e.atoms(FloorDiv, ModularIndexing)) if isinstance(e, sympy.Basic) else 0


def plan_kernel(nodes: list[SchedulerNode], roots: dict[str, str]) -> KernelPlan | None:
    """Loop structure for ``nodes`` in one kernel, or None when they cannot share one (``roots``:
    buffer name -> that of its memory, for the inputs written in place: ``mutation.fits``).

    Raises ``IndexTooComplex`` when an index of the kernel does not simplify within budget."""
    reds = [n for n in nodes if n.is_reduction]
    if reds:
        lead = reds[0]
        outer0, r0 = list(lead.size), list(lead.rsize)
        if any((n.numel, n.rnumel) != (lead.numel, lead.rnumel) for n in reds):
            return None
    else:
        lead = max(nodes, key=lambda n: len(n.size))
        outer0, r0 = list(lead.size), []
    O, R = indexing.numel(outer0), indexing.numel(r0)
    xv, rv = indexing.make_vars("x", len(outer0)), indexing.make_vars("r", len(r0))
    # size-1 dimensions contribute nothing to any index
    xv = [sympy.S.Zero if s == 1 else v for v, s in zip(xv, outer0)]
    rv = [sympy.S.Zero if s == 1 else v for v, s in zip(rv, r0)]
    maps: list[tuple[SchedulerNode, str, Callable]] = []
    for n in nodes:
        if n.is_reduction:
            maps.append((n, "inner", lambda x, r, n=n, o=outer0, rr=r0: (
                _remap(x, o, n.size), _remap(r, rr, n.rsize))))
        elif n.numel == O:
            maps.append((n, "outer", lambda x, r, n=n, o=outer0: (_remap(x, o, n.size), [])))
        elif R != 1 and R != 0 and n.numel == O * R:
            k, acc = 0, 1
            while k < len(n.size) and acc != O:
                acc *= n.size[k]
                k += 1
            if acc != O:
                return None
            maps.append((n, "inner", lambda x, r, n=n, k=k, o=outer0, rr=r0: (
                _remap(x, o, n.size[:k]) + _remap(r, rr, n.size[k:]), [])))
        else:
            return None
    ranges = {v: s for v, s in list(zip(xv, outer0)) + list(zip(rv, r0)) if s != 1}
    exprs = _mapped_exprs(maps, xv, rv, ranges)
    if exprs is None or not mutation.fits(nodes, exprs, roots):
        return None
    # merge loop dimensions jointly for every index expression of the kernel
    all_exprs = [e for per in exprs.values() for lst in per for _, e in lst]
    perm = list(range(len(outer0))) if reds else _loop_order(exprs[lead.name][1], xv, outer0)
    outer1, re_perm = indexing.merge_loops([outer0[i] for i in perm], all_exprs, [xv[i] for i in perm])
    r1, re_r = indexing.merge_loops(r0, all_exprs, rv)

    def re_x(x: Sequence) -> list:
        """The kernel's (merged, reordered) outer variables as the lead node's, in its order."""
        old = [sympy.S.Zero] * len(perm)
        for i, v in zip(perm, re_perm(x)):
            old[i] = v
        return old
    placements = [NodePlacement(n, level, lambda x, r, f=f: f(re_x(x), re_r(r)))
                  for n, level, f in maps]
    return KernelPlan(outer1, r1, placements, _stages(placements, reds))


def _scalar(g: Any) -> bool:
    """A kernel computing one element, without reduction: any number of them share one launch
    (a training step's batch norms each count their batches in a one-element buffer)."""
    return isinstance(g, FusedGroup) and not g.plan.r and indexing.numel(g.plan.outer) == 1 \
        and not any(n.is_reduction for n in g.nodes)


def _loop_order(writes: list, xv: list, sizes: list) -> list[int]:
    """The outer dimensions of a pointwise kernel in the order of the lead node's stores:
    largest stride first, so the last loop runs along its memory (a channels-last store loops
    over the channels last, not over the width, which is ``C`` apart). Logical order when the
    store's index is not affine or its strides are symbolic."""
    order = list(range(len(sizes)))
    lin = indexing.as_linear(writes[0][1], xv) if writes else None
    if lin is None or not all(sympy.sympify(st).is_Integer for st in lin[1]):
        return order
    strides = [int(st) if sizes[i] != 1 else 0 for i, st in enumerate(lin[1])]
    return sorted(order, key=lambda i: -strides[i])  # stable: ties keep the logical order


def _mapped_exprs(maps: list, xv: list, rv: list, ranges: dict) -> dict | None:
    """Index expressions of every node in kernel variables; None if fusion would be illegal."""
    out: dict[str, tuple[list, list]] = {}
    written: dict[str, Any] = {}
    for n, level, f in maps:
        idx, ridx = f(xv, rv)
        sub = dict(zip(n.ivars, idx)) | dict(zip(n.jvars, ridx))

        def conv(e: Any) -> Any:
            return indexing.simplify_index(sympy.sympify(e).xreplace(sub), ranges, strict=True)
        reads = [(name, conv(e)) for name, e in n.reads]
        writes = [(name, conv(e)) for name, e in n.writes]
        extra = sum(_count_div(e) for _, e in reads + writes) - sum(
            _count_div(e) for _, e in n.reads + n.writes)
        if extra > 0:
            return None
        for name, e in reads:
            if name in written and written[name] != e:
                return None
        for name, e in writes:
            written[name] = e
        out[n.name] = (reads, writes)
    return out


def _stages(placements: list[NodePlacement], reds: list) -> list[tuple[str, list[NodePlacement]]]:
    stages: list[tuple[str, list[NodePlacement]]] = []
    if not reds:
        return [("outer", list(placements))]
    for p in placements:
        if stages and stages[-1][0] == p.level:
            produced = {q.node.name for q in stages[-1][1] if q.node.is_reduction}
            if p.level == "outer" or not (p.node.read_names & produced):
                stages[-1][1].append(p)
                continue
        stages.append((p.level, [p]))
    return stages


class FusedGroup:
    def __init__(self, nodes: list[SchedulerNode], plan: KernelPlan) -> None:
        self.nodes = nodes
        self.plan = plan
        self.names = {n.name for n in nodes}
        self.order = min(n.order for n in nodes)
        self.read_names = set().union(*(n.read_names for n in nodes)) - self.names
        self.in_place = {t for t in map(mutation.target_of, nodes) if t is not None}  # inputs written
        self.written = self.names | self.in_place  # the names its kernel stores to

    def is_extern(self) -> bool:
        return False


class ExternGroup:
    def __init__(self, node: ExternNode) -> None:
        self.node = node
        self.nodes = [node]
        self.names = {o for o, _ in node.writes} | {node.name}
        self.order = node.order
        self.read_names = set(node.read_names)

    def is_extern(self) -> bool:
        return True


class EmptyGroup:
    """A node with a 0-element outer iteration space: no kernel, only its (empty) buffer."""

    def __init__(self, node: SchedulerNode) -> None:
        self.node = node
        self.nodes = [node]
        self.names = {node.name}
        self.order = node.order
        self.read_names: set[str] = set()  # no element is computed, so nothing is read

    def is_extern(self) -> bool:
        return False


class Scheduler:
    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.output_names = {ir.unwrap_storage_name(o) for o in graph.outputs
                             if isinstance(o, (ir.Buffer, ir.ReinterpretView))}
        nodes: list[Any] = []
        for i, op in enumerate(graph.operations):
            nodes.append(ExternNode(op, i) if isinstance(op, ir.ExternKernel) else SchedulerNode(op, i))
        self.nodes = self._remove_dead(nodes)
        self.roots = ir.storage_roots(graph.names)
        outputs = {self.roots.get(name, name) for name in self.output_names} | self.output_names
        for m in mutation.decide(self.nodes, self.roots, outputs, self._plans_alone):
            self.nodes[self.nodes.index(m)] = SchedulerNode(m.buf, m.order)  # stores into its own buffer,
            self.output_names.add(m.name)  # which the wrapper copies into the input at the end
        self._readers_of: list[Any] | None = None
        self._readers_index: dict[str, list[Any]] = {}
        self._war_list: list[Any] | None = None
        self._war: dict[int, list[Any]] = {}
        self.groups = self._fuse()
        self.groups = self._order(self.groups)

    def _plans_alone(self, n: SchedulerNode) -> bool:
        """Whether ``n`` alone makes a kernel (or, empty, none)."""
        try:
            return n.numel == 0 or plan_kernel([n], self.roots) is not None
        except indexing.IndexTooComplex:
            return False

    # -- dead code -------------------------------------------------------------------------
    def _remove_dead(self, nodes: list[Any]) -> list[Any]:
        producer = {}
        for n in nodes:
            for name, _ in n.writes:
                producer[name] = n
        live: set[int] = set()
        stack = [producer[name] for name in self.output_names if name in producer]
        stack += [n for n in nodes if n.is_extern() and n.kernel.mutates]
        stack += [n for n in nodes if isinstance(getattr(n, "buf", None), ir.MutationBuffer)]
        for n in nodes:
            if n.is_extern():
                for o in n.kernel.outputs:
                    if o.alias_of and o.name in self.output_names and o.alias_of in producer:
                        stack.append(producer[o.alias_of])
        while stack:
            n = stack.pop()
            if id(n) in live:
                continue
            live.add(id(n))
            for name in n.read_names:
                if name in producer:
                    stack.append(producer[name])
                    p = producer[name]
                    if p.is_extern():
                        for o in p.kernel.outputs:
                            if o.name == name and o.alias_of in producer:
                                stack.append(producer[o.alias_of])
        return [n for n in nodes if id(n) in live]

    # -- fusion ----------------------------------------------------------------------------
    def _fuse(self) -> list[Any]:
        groups: list[Any] = []
        group_of: dict[str, Any] = {}
        for n in self.nodes:
            if n.is_extern():
                g: Any = ExternGroup(n)
            elif n.numel == 0:
                g = EmptyGroup(n)
            else:
                plan = plan_kernel([n], self.roots)
                assert plan is not None
                g = FusedGroup([n], plan)
            groups.append(g)
            for name in g.names:
                group_of[name] = g
        self._barriers = [g for g in groups if g.is_extern() and g.node.kernel.mutates]
        tried: set[tuple[frozenset, frozenset]] = set()  # pairs of one-element groups tried (see _scalar)
        changed = True
        while changed:
            changed = False
            for g in list(groups):
                if g not in groups or not isinstance(g, FusedGroup):
                    continue
                candidates = [group_of[name] for name in sorted(g.read_names) if name in group_of]
                readers = {name: None for name in g.read_names}
                candidates += [h for h in groups if h is not g and isinstance(h, FusedGroup)
                               and self._shares_data(g, h.read_names & readers.keys())]
                if _scalar(g):  # one-element kernels fuse with any other, each pair tried once
                    key = frozenset(g.names)
                    candidates += [h for h in groups
                                   if h is not g and _scalar(h) and (frozenset(h.names), key) not in tried]
                    tried.update((frozenset(h.names), key) for h in groups if _scalar(h))
                for h in candidates:
                    if h is g or not isinstance(h, FusedGroup) or h not in groups:
                        continue
                    merged = self._try_merge(h, g, groups)
                    if merged is not None:
                        groups = [x for x in groups if x is not h and x is not g] + [merged]
                        for name in merged.names:
                            group_of[name] = merged
                        g = merged
                        changed = True
        # an empty buffer read only by other empty nodes is never needed
        needed = set(self.output_names).union(*(g.read_names for g in groups))
        return [g for g in groups if not isinstance(g, EmptyGroup) or g.names & needed]

    def _shares_data(self, g: FusedGroup, shared: set[str]) -> bool:
        """Whether kernels that both read ``shared`` gain from one loop: only when a shared buffer
        is not much smaller than ``g``'s iteration space. Sharing a handful of scalars (an
        optimizer step's bias corrections, read by every parameter's update) would make one loop
        over all parameters, its hundreds of streams slower than a loop per parameter."""
        if not shared:
            return False
        works = [sympy.sympify(n.numel * n.rnumel) for n in g.nodes]
        if not all(w.is_number for w in works):  # symbolic sizes: not compared
            return True
        for name in shared:
            buf = self.graph.names.get(name)
            size = indexing.numel(buf.get_size()) if buf is not None and hasattr(buf, "get_size") else None
            if size is None or not size.is_number or size * SHARED_FRACTION >= max(works):
                return True
        return False

    def _try_merge(self, a: FusedGroup, b: FusedGroup, groups: list[Any]) -> FusedGroup | None:
        nodes = mutation.kernel_order(a.nodes + b.nodes, self.roots)
        if nodes is None or len(nodes) > MAX_FUSED_NODES or not all(n.fusable for n in nodes):
            return None
        lo, hi = min(a.order, b.order), max(max(n.order for n in a.nodes), max(n.order for n in b.nodes))
        if any(lo < x.order < hi for x in self._barriers):
            return None
        if self._path_through_other(a, b, groups) or self._path_through_other(b, a, groups):
            return None
        try:
            plan = plan_kernel(nodes, self.roots)
        except indexing.IndexTooComplex:  # these nodes' indices do not fold into one kernel's
            return None
        return None if plan is None else FusedGroup(nodes, plan)

    def _path_through_other(self, src: Any, dst: Any, groups: list[Any]) -> bool:
        """Is there a dependency path src -> X -> ... -> dst with X another group (a write in
        place after the reads of the old value is one too)?"""
        readers = self._readers(groups)
        war = self._war_of(groups)

        def consumers_of(g: Any) -> list[Any]:
            return [h for name in g.names for h in readers.get(name, ()) if h is not g] + war.get(id(g), [])
        stack = [h for h in consumers_of(src) if h is not dst]
        seen: set[int] = set()
        while stack:
            g = stack.pop()
            if id(g) in seen:
                continue
            seen.add(id(g))
            for h in consumers_of(g):
                if h is dst:
                    return True
                stack.append(h)
        return False

    def _war_of(self, groups: list[Any]) -> dict[int, list[Any]]:
        """``mutation.war_edges`` of this list of groups (built once per list, as ``_readers``)."""
        if self._war_list is not groups:
            self._war_list, self._war = groups, mutation.war_edges(groups, self.roots)
        return self._war

    def _readers(self, groups: list[Any]) -> dict[str, list[Any]]:
        """Buffer name -> the groups reading it, for this list of groups (built once per list:
        every merge makes a new list)."""
        if self._readers_of is not groups:
            index: dict[str, list[Any]] = {}
            for g in groups:
                for name in g.read_names:
                    index.setdefault(name, []).append(g)
            self._readers_of, self._readers_index = groups, index
        return self._readers_index

    def _order(self, groups: list[Any]) -> list[Any]:
        """Topological order of the groups, program order among independent ones."""
        producer = {name: g for g in groups for name in g.names}
        deps = {id(g): {id(producer[n]) for n in g.read_names if n in producer} - {id(g)} for g in groups}
        for before, after in mutation.war_edges(groups, self.roots).items():
            for g in after:
                deps[id(g)].add(before)
        for b in self._barriers:
            bg = producer[b.node.name]
            for g in groups:
                if g is bg:
                    continue
                if g.order < b.order:
                    deps[id(bg)].add(id(g))
                else:
                    deps[id(g)].add(id(bg))
        done: set[int] = set()
        out: list[Any] = []
        pending = sorted(groups, key=lambda g: g.order)
        while pending:
            for g in pending:
                if deps[id(g)] <= done:
                    out.append(g)
                    done.add(id(g))
                    pending.remove(g)
                    break
            else:
                raise RuntimeError("cycle in the fused graph")
        return out

    # -- what must be stored ---------------------------------------------------------------
    def stored_buffers(self, group: FusedGroup) -> set[str]:
        """Buffers written by ``group`` that must live in memory (others stay in registers)."""
        outside: set[str] = set(self.output_names)
        for g in self.groups:
            if g is not group:
                outside |= g.read_names
        stage_of = {p.node.name: k for k, (_, ps) in enumerate(group.plan.stages) for p in ps}
        keep = set(group.in_place)
        for n in group.nodes:
            if n.name in outside:
                keep.add(n.name)
                continue
            stage = stage_of[n.name]
            if n.is_reduction or group.plan.stages[stage][0] == "outer":
                continue  # available as a local for the rest of the outer iteration
            if any(n.name in m.read_names and stage_of[m.name] != stage for m in group.nodes):
                keep.add(n.name)
        return keep
