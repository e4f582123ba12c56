"""Which sizes are symbolic, and backends that want concrete ones.

Policy (``ember.compile(dynamic=...)``, as torch.compile's):
- ``None`` (default), "automatic dynamic": the first capture specialises every size; a later
  capture of the same function makes symbolic the dimensions (and the int arguments) whose
  value differs from what an earlier capture saw at the same source, and they stay symbolic;
- ``True``: every dimension (and every int argument) is symbolic from the first capture;
- ``False``: every size is specialised (one entry per shape).
``mark_dynamic(t, dim)`` / ``mark_static(t, dim)`` override the policy for one tensor. Sizes 0
and 1 are always specialised (the ShapeEnv does it), so broadcasting stays decided at capture.

Parameters and buffers keep static sizes (unless marked). Ints read from the frame's arguments,
from the items of containers and from the attributes of plain objects reached from them (a step
counter, a length, a KV cache's ``cumulative_length``) follow the same policy; ints that are
attributes of an nn.Module stay constants (a module's sizes), as torch.compile does.

A backend that does not declare ``BackendSpec(dynamic=True)`` gets, for a graph with symbolic
sizes, a :class:`PerShapeCache`: it is compiled once per concrete signature (tensor sizes and
int values), bounded by ``config.cache_size_limit``, so that it stays correct.
"""
from __future__ import annotations

import logging
import warnings
from typing import Any, Callable

import torch
import torch.fx

from . import config
from .capture.sources import AttrSource, DictEntrySource, ItemSource, LocalSource, Source
from .capture.symbolic import has_symbolic

log = logging.getLogger("ember.dynamic")

_DYNAMIC_ATTR = "_ember_dynamic_dims"
_STATIC_ATTR = "_ember_static_dims"


def _mark(t: torch.Tensor, dim: int | list[int] | tuple[int, ...], attr: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(t).__name__}")
    dims = [dim] if isinstance(dim, int) else list(dim)
    marked = set(getattr(t, attr, ()))
    for d in dims:
        if not -t.dim() <= d < max(t.dim(), 1):
            raise IndexError(f"dimension {d} out of range for a {t.dim()}-d tensor")
        marked.add(d % t.dim())
    setattr(t, attr, frozenset(marked))


def mark_dynamic(t: torch.Tensor, dim: int | list[int] | tuple[int, ...]) -> None:
    """Make dimension(s) ``dim`` of ``t`` symbolic from the first capture that reads ``t``."""
    _mark(t, dim, _DYNAMIC_ATTR)


def mark_static(t: torch.Tensor, dim: int | list[int] | tuple[int, ...]) -> None:
    """Always specialise dimension(s) ``dim`` of ``t`` (even with ``dynamic=True``)."""
    _mark(t, dim, _STATIC_ATTR)


def _from_arguments(source: Source) -> bool:
    """``source`` reads from the frame's arguments through items and attributes of objects that
    are not nn.Modules."""
    while isinstance(source, (ItemSource, AttrSource)):
        if isinstance(source, AttrSource) and source.of_module:
            return False
        source = source.base
    return isinstance(source, LocalSource)


def _of_module(source: Source, t: torch.Tensor) -> bool:
    """Parameters and buffers (read from a module's tables) keep static sizes, as torch.compile's
    ``force_parameter_static_shapes``: their sizes do not vary and kernels want them fixed."""
    return isinstance(t, torch.nn.Parameter) or isinstance(source, DictEntrySource)


class ShapePolicy:
    """The policy of one compiled function, with what its captures saw (automatic dynamic)."""

    def __init__(self, dynamic: bool | None) -> None:
        self.dynamic = dynamic
        self._sizes: dict[str, tuple[int, ...]] = {}  # source -> sizes at the first capture
        self._dims: dict[str, set[int]] = {}  # source -> dimensions seen to change
        self._ints: dict[str, int] = {}
        self._varying_ints: set[str] = set()

    def tensor_dims(self, source: Source, t: torch.Tensor) -> frozenset[int]:
        """The dimensions of input ``t`` (read from ``source``) to make symbolic in this capture."""
        key = source.describe()
        sizes = tuple(t.shape)
        seen = self._sizes.setdefault(key, sizes)
        if len(seen) == len(sizes) and seen != sizes:
            changed = {d for d, (a, b) in enumerate(zip(seen, sizes)) if a != b}
            if not changed <= self._dims.get(key, set()):
                log.info("automatic dynamic: %s dims %s changed (%s -> %s)", key, sorted(changed), seen, sizes)
            self._dims.setdefault(key, set()).update(changed)
        if self.dynamic is False or _of_module(source, t):
            dims = set()
        elif self.dynamic is True:
            dims = set(range(t.dim()))
        else:
            dims = set(self._dims.get(key, ()))
        dims |= set(getattr(t, _DYNAMIC_ATTR, ()))
        dims -= set(getattr(t, _STATIC_ATTR, ()))
        return frozenset(dims)

    def int_is_dynamic(self, source: Source, value: int) -> bool:
        """Whether the int argument ``value`` read from ``source`` becomes a SymInt."""
        if type(value) is not int or not _from_arguments(source) or self.dynamic is False:
            return False
        key = source.describe()
        seen = self._ints.setdefault(key, value)
        if seen != value and key not in self._varying_ints:
            log.info("automatic dynamic: int %s changed (%s -> %s)", key, seen, value)
            self._varying_ints.add(key)
        return self.dynamic is True or key in self._varying_ints


def is_dynamic(gm: torch.fx.GraphModule) -> bool:
    """Whether ``gm`` has symbolic sizes: some placeholder's value has free symbols."""
    return any(n.op == "placeholder" and has_symbolic(_sizes_of(n.meta.get("val"))) for n in gm.graph.nodes)


def _sizes_of(val: Any) -> Any:
    if isinstance(val, torch.Tensor):
        return (*val.shape, *val.stride())
    return val


def signature(inputs: tuple) -> tuple:
    """What a per-shape compilation specialises on: sizes of tensors, values of ints."""
    return tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in inputs)


class PerShapeCache:
    """Calls a backend compiled for the concrete signature of each call's inputs (made on
    first use of that signature); beyond ``config.cache_size_limit`` signatures the graph runs
    as captured (it is correct for every size its guards admit), with one warning."""

    def __init__(self, compile_fn: Callable[[torch.fx.GraphModule, list], Callable], gm: torch.fx.GraphModule,
                 example_inputs: list, name: str) -> None:
        self.compile_fn = compile_fn
        self.gm = gm
        self.name = name
        self.compiled: dict[tuple, Callable] = {}
        self.warned = False
        self._lookup(tuple(example_inputs))  # compile errors surface now, as for any backend

    def _lookup(self, inputs: tuple) -> Callable:
        key = signature(inputs)
        fn = self.compiled.get(key)
        if fn is not None:
            return fn
        if len(self.compiled) >= config.cache_size_limit:
            if not self.warned:
                self.warned = True
                warnings.warn(f"ember: backend {self.name!r} (no dynamic shapes) was compiled for "
                              f"{len(self.compiled)} shapes (cache_size_limit={config.cache_size_limit}); "
                              "other shapes run the captured graph as it is", stacklevel=4)
            return self.gm.forward
        log.info("backend %s compiles the graph for the shapes %s", self.name, key)
        fn = self.compiled[key] = self.compile_fn(specialize(self.gm, list(inputs)), list(inputs))
        return fn

    def __call__(self, *inputs: Any) -> Any:
        return self._lookup(inputs)(*inputs)


def specialize(gm: torch.fx.GraphModule, inputs: list) -> torch.fx.GraphModule:
    """A copy of ``gm`` whose nodes' ``val``/``example_value`` are fakes of these concrete inputs
    (no symbols), for a backend that reads them."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}), type_expr=None)
    copy = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    for node in copy.graph.nodes:
        node.meta.pop("val", None)
        node.meta.pop("example_value", None)
    try:
        FakeTensorProp(copy, FakeTensorMode(allow_non_fake_inputs=True)).propagate(*inputs)
    except Exception:  # a backend that needs no metadata still works; one that does says so
        log.info("could not compute concrete metadata for %s", gm, exc_info=True)
        return copy
    for node in copy.graph.nodes:
        if "val" in node.meta:
            node.meta["example_value"] = node.meta["val"]
    return copy


__all__ = ["PerShapeCache", "ShapePolicy", "is_dynamic", "mark_dynamic", "mark_static", "signature", "specialize"]
