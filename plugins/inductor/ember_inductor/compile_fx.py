"""Compile one aten-level graph: (layout pass on GPUs) -> lower -> schedule -> generate kernels -> wrapper.

The returned callable takes the graph's flat inputs positionally and returns a tuple of outputs.
A graph in which nothing was fused (only aten calls) runs as the aten graph itself.
``CompiledGraph.artifact()`` describes a compiled graph in picklable data (wrapper source, its
constants and extern ops, the kernels' spec, the aten graph pickled for the layout fallback);
``load_compiled_graph`` rebuilds it in another process from the kernel caches, without lowering,
scheduling or generating code.
"""
from __future__ import annotations

import logging
import pickle
from typing import Any, Callable, Sequence

import torch
import torch.fx

from . import debug, layout
from .codegen.common import CompiledKernels, backend_for, backend_named
from .codegen.wrapper import LayoutMismatch, WrapperCodegen, wrapper_globals
from .graph import GraphLowering
from .scheduler import FusedGroup, Scheduler

log = logging.getLogger("ember.inductor")


class CompiledGraph:
    """Runs the generated wrapper; the first call also checks aten output layouts."""

    def __init__(self, gm: torch.fx.GraphModule | bytes, call: Callable, call_checked: Callable,
                 keepalive: Any, parts: dict[str, Any]) -> None:
        self._gm = gm  # or the pickled graph, unpickled when first needed
        self._call = call_checked
        self._fast = call
        self._keepalive = keepalive  # the loaded library must outlive the kernels' callables
        self._parts = parts  # the wrapper and what it runs with (see _assemble), or only the
        # fallback ops of a graph that runs as its aten graph

    @property
    def gm(self) -> torch.fx.GraphModule:
        if isinstance(self._gm, bytes):
            self._gm = pickle.loads(self._gm)
        return self._gm

    @property
    def kernel_count(self) -> int:
        return self._parts.get("kernel_count", 0)

    @property
    def fallback_ops(self) -> list[str]:
        """Ops of the graph run by aten kernels."""
        return self._parts["fallback_ops"]

    @property
    def wrapper_source(self) -> str:
        return self._parts.get("wrapper", "")

    @property
    def source(self) -> str:
        """The generated kernels' source."""
        return self._keepalive.source if isinstance(self._keepalive, CompiledKernels) else ""

    def __call__(self, *args: Any) -> Any:
        if self._call is self._fast:
            return self._fast(args)
        try:
            out = self._call(args)
        except LayoutMismatch as exc:
            log.warning("ember_inductor: %s; running this graph with aten instead", exc)
            self._fast = self._call = _run_gm(self.gm)
            return self._fast(args)
        self._call = self._fast
        return out

    def artifact(self) -> dict[str, Any] | None:
        """This graph in picklable data for ``load_compiled_graph``; None for a graph that runs
        as its aten graph (nothing was generated)."""
        kernels = self._keepalive
        if not isinstance(kernels, CompiledKernels):
            return None
        gm = self._gm if isinstance(self._gm, bytes) else pickle.dumps(self._gm)
        return {**self._parts, "gm": gm, "backend": kernels.backend, "kernels": kernels.spec}


def _run_gm(gm: torch.fx.GraphModule) -> Callable:
    def run(args: Sequence[Any]) -> Any:
        out = gm(*args)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)
    return run


def compile_aten_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> CompiledGraph:
    """Compile an aten graph whose nodes carry ``meta["val"]`` (FakeTensors)."""
    device = _device(example_inputs)
    if device.type == "cuda":
        layout.channels_last_convolutions(gm)
    dump = debug.DebugDump.create(gm)
    graph = GraphLowering(gm).run()
    scheduler = Scheduler(graph)
    if dump:
        dump.write_ir(graph, scheduler)
    groups = [g for g in scheduler.groups if isinstance(g, FusedGroup)]
    run = _run_gm(gm)
    if not groups:
        return CompiledGraph(gm, run, run, None, {"fallback_ops": graph.fallback_ops})
    kernels = backend_for(device.type).compile(scheduler)
    codegen = WrapperCodegen(scheduler, kernels.kernels, device, kernels.tensor_args)
    source = codegen.generate()
    if dump:
        dump.write_code(kernels.source, source)
    if graph.fallback_ops:
        log.debug("ops run by aten: %s", sorted(set(graph.fallback_ops)))
    return _assemble(gm, {"wrapper": source, "device": device, "values": codegen.values, "ops": codegen.ops,
                          "kernel_count": len(groups), "fallback_ops": graph.fallback_ops}, kernels,
                     f"<ember_inductor wrapper {debug.graph_hash(gm)}>")


def load_compiled_graph(artifact: dict[str, Any]) -> CompiledGraph:
    """The graph ``CompiledGraph.artifact()`` described, its kernels loaded from the caches."""
    kernels = backend_named(artifact["backend"]).load(artifact["kernels"])
    return _assemble(artifact["gm"], artifact, kernels, "<ember_inductor wrapper (cached)>")


def _assemble(gm: torch.fx.GraphModule | bytes, parts: dict[str, Any], kernels: CompiledKernels,
              filename: str) -> CompiledGraph:
    """The CompiledGraph running wrapper source ``parts["wrapper"]`` with ``kernels``."""
    env = wrapper_globals(parts["device"], parts["values"], parts["ops"])
    for name, _params, fn in kernels.kernels.values():
        env[name] = fn
    exec(compile(parts["wrapper"], filename, "exec"), env)
    kept = {name: parts[name] for name in ("wrapper", "device", "values", "ops", "kernel_count", "fallback_ops")}
    return CompiledGraph(gm, env["call"], env["call_checked"], kernels, kept)


def _device(example_inputs: Sequence[Any]) -> torch.device:
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            return x.device
    return torch.device("cpu")
