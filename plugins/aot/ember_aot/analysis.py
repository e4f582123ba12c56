"""Runs the captured torch-level graph once on fake tensors to learn what eager would do.

The result (``GraphAnalysis``) says, with no real computation:
- which inputs the graph mutates (their version counter moved), and how the runtime replays
  each write. A write autograd does not record (grad mode off, or nothing requiring grad
  involved) is written back after the graph, without autograd; an input that requires grad
  may be written so (an optimizer's step updates its parameters under ``no_grad``) only by a
  graph that needs no backward. A write autograd records (``grad_mutated_inputs``: an
  activation handed across a graph break, ``h[mask] = emb`` under grad mode) is done as
  torch's AOTAutograd does it: the traced graph writes a copy of the input and returns the
  copy's final value as one more differentiable output, which the runtime copies into the
  real input under grad mode, so the input's history goes through the compiled graph's
  backward. The fakes mirror the inputs' leafness for that: eager refuses such a write to a
  leaf that requires grad (the analysis then raises as eager would) and takes it on a non-leaf;
- for every output: whether it requires grad, and whether it aliases an input or another
  output. Aliased outputs are not produced by the compiled graph; the runtime regenerates them
  as views (of the real input, or of one "base" tensor the compiled graph returns), so callers
  observe the same aliasing as in eager; outputs one ``unbind`` or ``split`` made are regenerated
  by one call (``views.MultiView``), so that an in-place op on one fails as in eager.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Sequence

import torch
import torch.fx
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
from torch.utils import _pytree as pytree

from .errors import AOTUnsupported
from .identity import IdentityRecorder

# How an output of the user graph is produced at run time.
GRAPH = "graph"            # an output of the compiled graph
INPUT_ALIAS = "input"      # a view of (or the very same tensor as) a graph input
BASE_ALIAS = "base"        # a view of a base tensor the compiled graph returns
CONSTANT = "constant"      # not a tensor: returned as traced (a symbolic size: its value per call)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Size, stride and storage offset relative to the tensor the view is regenerated from."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int


@dataclasses.dataclass(frozen=True)
class OutputInfo:
    kind: str
    requires_grad: bool = False
    source: int = -1              # INPUT_ALIAS: position in the flat args; BASE_ALIAS: group id
    identity: bool = False        # the output is the source tensor itself
    layout: Layout | None = None  # views: how to regenerate from the source; GRAPH: own layout
    dtype: torch.dtype | None = None
    device: torch.device | None = None
    value: Any = None             # CONSTANT: the value


@dataclasses.dataclass
class GraphAnalysis:
    outputs: list[OutputInfo]
    out_spec: pytree.TreeSpec
    mutated_inputs: list[int]             # positions in the flat args
    base_groups: list[list[int]]          # output positions sharing one intermediate base
    base_requires_grad: list[bool]
    base_layouts: list[Layout]            # expected layout of each base (checked at run time)
    base_dtypes: list[torch.dtype]
    base_devices: list[torch.device]
    grad_enabled: bool
    identities: dict[str, torch.fx.Node] = dataclasses.field(default_factory=dict)  # see identity.py
    # per base group: the node of the torch-level graph whose value the base is (None: no node's)
    base_nodes: list[str | None] = dataclasses.field(default_factory=list)
    # sets of output positions made by one call of a multi-output view op (``unbind``, ``split``)
    # from one source, requiring grad: autograd refuses an in-place op on any of them
    multi_views: list[list[int]] = dataclasses.field(default_factory=list)
    # positions in the flat args of the inputs written where autograd records it (see the module
    # docstring), and the layout of each one's new value: produced after the bases
    grad_mutated_inputs: list[int] = dataclasses.field(default_factory=list)
    grad_mutated_layouts: list[tuple[Layout, torch.dtype, torch.device]] = dataclasses.field(
        default_factory=list)

    @property
    def graph_outputs(self) -> list[int]:
        """Positions of the user outputs the compiled graph produces (in that order)."""
        return [k for k, o in enumerate(self.outputs) if o.kind == GRAPH]

    @property
    def produced(self) -> list[tuple[bool, Layout, torch.dtype, torch.device]]:
        """(requires_grad, layout, dtype, device) of each tensor the graph produces: the outputs
        it computes, the bases of aliased outputs, then the new values of the inputs in
        ``grad_mutated_inputs``."""
        outs = [
            (o.requires_grad, o.layout, o.dtype, o.device)
            for o in self.outputs
            if o.kind == GRAPH
        ]
        bases = zip(self.base_requires_grad, self.base_layouts, self.base_dtypes, self.base_devices)
        written = [(True, layout, dtype, device) for layout, dtype, device in self.grad_mutated_layouts]
        return outs + list(bases) + written

    @property
    def needs_autograd(self) -> bool:
        """True when the compiled graph must support backward (some produced tensor needs grad)."""
        return self.grad_enabled and any(p[0] for p in self.produced)


def fake_like(mode: FakeTensorMode, t: torch.Tensor) -> torch.Tensor:
    """A fresh fake leaf with ``t``'s size, stride, dtype, device and requires_grad."""
    with mode:
        fake = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
    if t.requires_grad:
        fake.requires_grad_(True)
    return fake


def eager_like(mode: FakeTensorMode, t: torch.Tensor) -> torch.Tensor:
    """``fake_like``, and a non-leaf where ``t`` is a non-leaf that requires grad, so that
    autograd takes or refuses an in-place op on it as eager does."""
    fake = fake_like(mode, t)
    return as_non_leaf(mode, fake) if t.requires_grad and not t.is_leaf else fake


def as_non_leaf(mode: FakeTensorMode, fake: torch.Tensor) -> torch.Tensor:
    """A copy of the fake leaf ``fake`` that autograd recorded, with its sizes and strides
    (``clone`` would make a tensor that is not dense contiguous); ``fake`` itself where its
    memory overlaps (an expanded tensor: eager refuses to write one in place anyway)."""
    with mode, torch.enable_grad():
        out = torch.empty_strided(fake.size(), fake.stride(), dtype=fake.dtype, device=fake.device)
        try:
            return out.copy_(fake)
        except RuntimeError:
            return fake


def same_stride(size: Sequence[int], stride: Sequence[int], expected: Sequence[int]) -> bool:
    """Strides agree on every dimension of size other than 1 (where a stride means nothing)."""
    return all(s == 1 or a == b for s, a, b in zip(size, stride, expected))


def _storage_id(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


def _layout(t: torch.Tensor, source: torch.Tensor) -> Layout:
    return Layout(tuple(t.size()), tuple(t.stride()), t.storage_offset() - source.storage_offset())


def group_base(members: list[torch.Tensor]) -> torch.Tensor:
    """The tensor the compiled graph returns for outputs sharing one storage.

    Normally their common autograd base. ``y`` and ``y.detach()`` share storage but not a base:
    the base is then the root that requires grad; members that do not require grad are
    regenerated from a detached base.
    """
    roots: list[torch.Tensor] = []
    for o in members:
        root = o._base if o._base is not None else o
        if o.dtype != root.dtype or any(root.dtype != r.dtype for r in roots):
            raise AOTUnsupported("outputs alias each other through different dtypes")
        if not any(root is r for r in roots):
            roots.append(root)
    base = next((r for r in roots if r.requires_grad), roots[0])
    for o in members:
        root = o._base if o._base is not None else o
        if o.requires_grad and root is not base:
            raise AOTUnsupported("outputs requiring grad alias each other through different bases")
    return base


def _multi_views(flat: list[Any], outputs: list[OutputInfo], fakes: list[Any], bases: list[torch.Tensor]
                 ) -> list[list[int]]:
    """Output positions that one call of a multi-output view op made (they share their autograd
    node), from one dense source, requiring grad (see ``GraphAnalysis.multi_views``)."""
    by_node: dict[int, list[int]] = {}
    for k, (o, info) in enumerate(zip(flat, outputs)):
        if info.kind in (INPUT_ALIAS, BASE_ALIAS) and info.requires_grad and not info.identity \
                and o.grad_fn is not None:
            by_node.setdefault(id(o.grad_fn), []).append(k)
    sets = []
    for ks in by_node.values():
        kinds = {(outputs[k].kind, outputs[k].source) for k in ks}
        if len(ks) < 2 or len(kinds) != 1:
            continue
        kind, source = next(iter(kinds))
        src = fakes[source] if kind == INPUT_ALIAS else bases[source]
        if _dense(src):
            sets.append(ks)
    return sets


def _dense(t: torch.Tensor) -> bool:
    """Is ``t`` laid out densely (a permutation of contiguous strides) at static sizes?"""
    dims = sorted((st, s) for s, st in zip(t.size(), t.stride()) if s != 1)
    if any(isinstance(v, torch.SymInt) for d in dims for v in d):
        return False
    expected = 1
    for st, s in dims:
        if st != expected:
            return False
        expected *= s
    return True


def analyze(
    gm: torch.fx.GraphModule, args: Sequence[Any], mode: FakeTensorMode, grad_enabled: bool
) -> GraphAnalysis:
    """Run ``gm`` on fakes of ``args`` under ``mode`` with grad mode ``grad_enabled``."""
    fakes = [eager_like(mode, a) if isinstance(a, torch.Tensor) else a for a in args]
    tensors = {i: f for i, f in enumerate(fakes) if isinstance(f, torch.Tensor)}
    versions = {i: f._version for i, f in tensors.items()}
    histories = {i: f.grad_fn for i, f in tensors.items()}
    required = {i for i, f in tensors.items() if f.requires_grad}
    layouts = {i: (f.size(), f.stride(), f.storage_offset()) for i, f in tensors.items()}
    recorder = IdentityRecorder(gm)
    # data-dependent values (``item()``, ``nonzero``) make unbacked symbols: these belong to no
    # traced node (the trace makes its own), so they are not left pending for make_fx to bind
    env = mode.shape_env
    fresh = env.ignore_fresh_unbacked_symbols() if env is not None else contextlib.nullcontext()
    with mode, torch.set_grad_enabled(grad_enabled), fresh:
        result = recorder.run(*fakes)
    flat, spec = pytree.tree_flatten(result)

    mutated, grad_mutated = [], []
    for i, f in tensors.items():
        if (f.size(), f.stride(), f.storage_offset()) != layouts[i]:
            raise AOTUnsupported(f"the graph changes the metadata (shape/stride) of input {i}")
        if f._version != versions[i]:
            # autograd recorded the write where it gave the input a new history
            recorded = grad_enabled and f.requires_grad and f.grad_fn is not histories[i]
            (grad_mutated if recorded else mutated).append(i)
    # an input that required grad and was written without autograd recording it was written
    # with grad mode off inside the graph
    grad_inputs_written = [i for i in mutated if grad_enabled and i in required]

    storage_to_input = {}
    for i, f in tensors.items():
        storage_to_input.setdefault(_storage_id(f), i)
    by_storage: dict[int, list[int]] = {}
    for k, o in enumerate(flat):
        if isinstance(o, torch.Tensor) and _storage_id(o) not in storage_to_input:
            by_storage.setdefault(_storage_id(o), []).append(k)
    groups = [ks for ks in by_storage.values() if len(ks) > 1]
    group_of = {k: g for g, ks in enumerate(groups) for k in ks}

    bases = [group_base([flat[k] for k in ks]) for ks in groups]

    outputs = []
    for k, o in enumerate(flat):
        if not isinstance(o, torch.Tensor):
            if isinstance(o, (torch.SymFloat, torch.SymBool)):
                raise AOTUnsupported("symbolic float or bool outputs")
            if isinstance(o, torch.SymInt) and free_unbacked_symbols(o):  # a value of the data, not of the sizes
                raise AOTUnsupported(f"output {k} is an int the data decides ({o})")
            outputs.append(OutputInfo(CONSTANT, value=o))
        elif _storage_id(o) in storage_to_input:
            j = storage_to_input[_storage_id(o)]
            src = fakes[j]
            if o.dtype != src.dtype:
                raise AOTUnsupported(f"output {k} is a dtype view of input {j}")
            if free_unbacked_symbols((o.size(), o.stride(), o.storage_offset())):
                raise AOTUnsupported(f"output {k} is a view of input {j} at a place the data decides (x[x.item()])")
            outputs.append(
                OutputInfo(INPUT_ALIAS, o.requires_grad, j, o is src, _layout(o, src), o.dtype)
            )
        elif k in group_of:
            g = group_of[k]
            base = bases[g]
            outputs.append(
                OutputInfo(BASE_ALIAS, o.requires_grad, g, o is base, _layout(o, base), o.dtype)
            )
        else:
            outputs.append(
                OutputInfo(GRAPH, o.requires_grad, layout=_layout(o, o), dtype=o.dtype, device=o.device)
            )
    analysis = GraphAnalysis(
        outputs=outputs,
        out_spec=spec,
        mutated_inputs=mutated,
        base_groups=groups,
        base_requires_grad=[b.requires_grad for b in bases],
        base_layouts=[Layout(tuple(b.size()), tuple(b.stride()), b.storage_offset()) for b in bases],
        base_dtypes=[b.dtype for b in bases],
        base_devices=[b.device for b in bases],
        grad_enabled=grad_enabled,
        identities=recorder.identities,
        base_nodes=[recorder.producer(b) for b in bases],
        multi_views=_multi_views(flat, outputs, fakes, bases),
        grad_mutated_inputs=grad_mutated,
        grad_mutated_layouts=[(_layout(fakes[i], fakes[i]), fakes[i].dtype, fakes[i].device)
                              for i in grad_mutated],
    )
    if grad_inputs_written and analysis.needs_autograd:
        raise AOTUnsupported(f"in-place mutation of input {grad_inputs_written[0]}, which requires grad, "
                             "in a graph that needs a backward")
    return analysis
