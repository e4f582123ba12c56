"""Compile one aten-level graph: (layout pass on GPUs) -> lower -> schedule -> generate kernels -> wrapper.

The returned callable takes the graph's flat inputs positionally and returns a tuple of outputs.
A graph in which nothing was fused (only aten calls) runs as the aten graph itself.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import torch
import torch.fx

from . import debug, layout
from .codegen.common import backend_for
from .codegen.wrapper import LayoutMismatch, WrapperCodegen
from .graph import GraphLowering
from .scheduler import FusedGroup, Scheduler

log = logging.getLogger("ember.inductor")


class CompiledGraph:
    """Runs the generated wrapper; the first call also checks aten output layouts."""

    def __init__(self, gm: torch.fx.GraphModule, call: Callable, call_checked: Callable,
                 keepalive: Any) -> None:
        self.gm = gm
        self._call = call_checked
        self._fast = call
        self._keepalive = keepalive  # the loaded library must outlive the kernels' callables
        self.kernel_count = 0
        self.fallback_ops: list[str] = []
        self.source = ""
        self.wrapper_source = ""

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
        compiled = CompiledGraph(gm, run, run, None)
        compiled.fallback_ops = graph.fallback_ops
        return compiled
    kernels = backend_for(device.type).compile(scheduler)
    source, env = WrapperCodegen(scheduler, kernels.kernels, device, kernels.tensor_args).generate()
    for name, _params, fn in kernels.kernels.values():
        env[name] = fn
    code = compile(source, f"<ember_inductor wrapper {debug.graph_hash(gm)}>", "exec")
    exec(code, env)
    if dump:
        dump.write_code(kernels.source, source)
    compiled = CompiledGraph(gm, env["call"], env["call_checked"], kernels)
    compiled.kernel_count = len(groups)
    compiled.fallback_ops = graph.fallback_ops
    compiled.source = kernels.source
    compiled.wrapper_source = source
    if graph.fallback_ops:
        log.debug("ops run by aten: %s", sorted(set(graph.fallback_ops)))
    return compiled


def _device(example_inputs: Sequence[Any]) -> torch.device:
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            return x.device
    return torch.device("cpu")
