"""Graph inputs written in place (``ir.MutationBuffer``): which new values may be stored straight
into their input's memory, and the order that keeps every read of an input's old value first.

A new value is written in place unless one of these holds, in which case it is computed into a
buffer of its own and copied into the input after every kernel (``in_place`` False):
- the graph returns the new value itself (which then needs memory of its own), or the input or
  a view of it (kept as simple as the copy-back it replaces);
- its own kernel would read the input at another element than the one it writes (a transpose,
  a shifted slice: a later iteration would read an element already overwritten), or reads with
  loaded indices (bounds are checked after the loops: the input would be half written when the
  call raises);
- ordering every reader of the old value before it closes a cycle (``x.copy_(y); y.copy_(x)``:
  each kernel reads what the other writes).

The scheduler then keeps these rules (``war_edges``, ``kernel_order``, ``fits``): a kernel that
reads an input written in place by another kernel runs before it (write after read); inside one
kernel, every node reading the input comes before the node that writes it, and reads it at the
very element written, never through loaded indices.
"""
from __future__ import annotations

from typing import Any, Iterable

from . import ir


def target_of(node: Any) -> str | None:
    """The input a scheduler node writes in place, if any."""
    buf = getattr(node, "buf", None)
    return buf.target.name if isinstance(buf, ir.MutationBuffer) and buf.in_place else None


def decide(nodes: list[Any], roots: dict[str, str], output_roots: set[str], single_kernel_ok: Any) -> list[Any]:
    """Turn off ``in_place`` on the mutations that may not write in place (module docstring);
    returns those, whose scheduler nodes must be made again (their stores changed).
    ``single_kernel_ok(node)``: whether the node alone makes a kernel that keeps the rules."""
    mutations = [n for n in nodes if target_of(n) is not None]
    if not mutations:
        return []
    reads = {id(n): {roots.get(r, r) for r in n.read_names} for n in nodes}
    consumers: dict[str, list[Any]] = {}
    for n in nodes:
        for r in n.read_names:
            consumers.setdefault(r, []).append(n)
    war: dict[int, list[Any]] = {}  # id(reader of an old value) -> mutations that wait for it
    demoted = []
    for m in mutations:
        target = m.buf.target.name
        readers = [n for n in nodes if n is not m and target in reads[id(n)]]
        if (target in output_roots or m.name in output_roots or not single_kernel_ok(m)
                or _reaches(m, set(map(id, readers)), consumers, war)):
            m.buf.in_place = False
            demoted.append(m)
            continue
        for n in readers:
            war.setdefault(id(n), []).append(m)
    return demoted


def _reaches(start: Any, goals: set[int], consumers: dict[str, list[Any]], war: dict[int, list[Any]]) -> bool:
    """Whether a node of ``goals`` runs after ``start`` (data and write-after-read edges)."""
    stack, seen = [start], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if id(n) in goals and n is not start:
            return True
        names = [n.name] + ([o for o, _ in n.writes] if n.is_extern() else [])  # not an input written
        stack.extend(c for name in names for c in consumers.get(name, ()))
        stack.extend(war.get(id(n), ()))
    return False


def kernel_order(nodes: Iterable[Any], roots: dict[str, str]) -> list[Any] | None:
    """``nodes`` in an order for one kernel: program order, but a node writing an input in place
    after every node of the kernel reading that input; None when no order can (a node reads
    both the old value and one computed after the write)."""
    pending = sorted(nodes, key=lambda n: n.order)
    if all(target_of(n) is None for n in pending):
        return pending
    names = {n.name for n in pending}
    out: list[Any] = []
    while pending:
        done = {n.name for n in out}
        for n in pending:
            needs = {r for r in n.read_names if r in names} - done - {n.name}
            target = target_of(n)
            if target is not None:
                needs |= {m.name for m in pending if m is not n and any(roots.get(r, r) == target for r in m.read_names)}
            if not needs:
                out.append(n)
                pending.remove(n)
                break
        else:
            return None
    return out


def fits(nodes: list[Any], exprs: dict[str, tuple[list, list]], roots: dict[str, str]) -> bool:
    """Whether a kernel of ``nodes``, with their reads and writes in kernel variables (``exprs``:
    node name -> (reads, writes)), reads each input it writes in place only at the element
    written and by its own name (not through an aten view of it), and reads nothing through
    loaded indices."""
    written = {target_of(n): exprs[n.name][1][0][1] for n in nodes if target_of(n) is not None}
    if not written:
        return True
    if any(n.indirect for n in nodes):
        return False
    return all(name == roots.get(name, name) and e == written[name]
               for reads, _ in exprs.values() for name, e in reads if roots.get(name, name) in written)


def war_edges(groups: list[Any], roots: dict[str, str]) -> dict[int, list[Any]]:
    """id(group) -> the groups that must run after it: those writing in place an input it reads."""
    writers: dict[str, Any] = {}
    for g in groups:
        for n in g.nodes:
            target = target_of(n)
            if target is not None:
                writers[target] = g
    edges: dict[int, list[Any]] = {}
    if not writers:
        return edges
    for g in groups:
        for r in g.read_names:
            w = writers.get(roots.get(r, r))
            if w is not None and w is not g:
                edges.setdefault(id(g), []).append(w)
    return edges
