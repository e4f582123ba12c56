"""Compile one aten-level graph: (layout pass on GPUs) -> lower -> schedule -> generate kernels -> wrapper.

The returned callable takes the graph's flat inputs positionally and returns a tuple of outputs.
A graph in which nothing was fused (only aten calls) runs as the aten graph itself.
``CompiledGraph.artifact()`` describes a compiled graph in picklable data (wrapper source, its
constants and extern ops, the kernels' spec, the aten graph pickled for the layout fallback);
``load_compiled_graph`` rebuilds it in another process from the kernel caches, without lowering,
scheduling or generating code.

A graph with symbolic sizes is compiled once for all of them (sizes are kernel and wrapper
arguments, see ``symbolic``); if that fails, it is compiled per concrete shape instead
(``per_shape.PerShapeGraph``), which is also what it falls back to when its kernels fail to build.
"""
from __future__ import annotations

import concurrent.futures
import logging
import pickle
import threading
from typing import Any, Callable, Sequence

import torch
import torch.fx
from ember.settle import Setter, Settling

from . import debug, layout, symbolic
from .codegen.common import CompiledKernels, describe
from .codegen.language import kernel_language
from .codegen.selection import backend_for, backend_named
from .codegen.wrapper import LayoutMismatch, WrapperCodegen, wrapper_globals
from .graph import GraphLowering, graph_device
from .pad_matmul import pad_matmuls
from .profiled import RangedTwin
from .per_shape import PerShapeGraph
from .scheduler import FusedGroup, Scheduler

log = logging.getLogger("ember.inductor")


class CompiledGraph:
    """Runs the generated wrapper; the first call also checks aten output layouts.

    Built with ``pending`` (a future of the kernels, see ``compile_aten_graph``), it waits for
    them at the first call or ``artifact()``. Kernels that failed to build leave it running its
    aten graph, with one warning; with ``strict``, every call raises the build's error instead."""

    def __init__(self, gm: torch.fx.GraphModule | bytes, call: Callable | None, call_checked: Callable | None,
                 keepalive: Any, parts: dict[str, Any], pending: concurrent.futures.Future | None = None,
                 filename: str = "", strict: bool = False, fallback: Callable | None = None) -> None:
        self._gm = gm  # or the pickled graph, unpickled when first needed
        self._fast = call
        self._call = call_checked if pending is None else self.wait  # not _fast: calls wait first
        self._keepalive = keepalive  # the loaded library must outlive the kernels' callables
        self._parts = parts  # the wrapper and what it runs with (see _wrapper), or only the
        # fallback ops of a graph that runs as its aten graph
        self._pending = pending
        self._filename = filename
        self._strict = strict
        self._fallback = fallback  # what runs the graph when its kernels fail to build
        self._lock = threading.Lock()
        self._holders = Settling()

    @property
    def gm(self) -> torch.fx.GraphModule:
        if isinstance(self._gm, bytes):
            self._gm = pickle.loads(self._gm)
        return self._gm

    @property
    def built_kernels(self) -> CompiledKernels | None:
        """The loaded kernels (None before they are built, or for a graph run as its aten graph)."""
        return self._keepalive if isinstance(self._keepalive, CompiledKernels) else None

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
        return self._parts.get("source", "")

    def wait(self) -> None:
        """Wait for kernels still building; if they failed, run the aten graph from now on (or
        raise, under strict)."""
        if self._pending is None:
            return
        with self._lock:
            if self._pending is None:
                return
            try:
                kernels = self._pending.result()
            except Exception as exc:
                if self._strict:
                    raise
                log.warning("ember_inductor could not compile a graph (%s: %s); running it %s",
                            type(exc).__name__, exc, "per shape" if self._fallback else "with aten")
                if self._fallback is not None:
                    per_shape = self._fallback()
                    self._fast = self._call = per_shape
                else:
                    self._fast = self._call = run_gm(self.gm)
            else:
                self._fast, self._call = _wrapper(self._parts, kernels, self._filename)
                self._keepalive = kernels
            self._pending = None

    def __call__(self, *args: Any) -> Any:
        if self._call is self._fast:
            return self._fast(*args)
        self.wait()
        try:
            out = self._call(*args)
        except LayoutMismatch as exc:
            log.warning("ember_inductor: %s; running this graph with aten instead", exc)
            self._fast = self._call = run_gm(self.gm)
            self._holders.done(self._fast)
            return self._fast(*args)
        except RuntimeError as exc:
            # the first call's failure may be ember's (an extern kernel refusing a layout, e.g. the
            # CUDA SDPA bias alignment) or the program's (an index out of range): the aten graph
            # decides. It runs again only when the graph writes no input (a partial write would be
            # seen twice); if aten raises too, that is the program's error, raised as eager's.
            if self._strict or _writes_inputs(self.gm):
                raise
            aten = run_gm(self.gm)
            out = aten(*args)
            log.warning("ember_inductor: the compiled graph failed on its first call (%s: %s); running "
                        "this graph with aten instead", type(exc).__name__, exc)
            self._fast = self._call = aten
            self._holders.done(aten)
            return out
        self._call = self._fast
        self._holders.done(self._fast)
        return out

    def settle(self, setter: Setter) -> None:
        """After the first call (layouts checked), callers call the wrapper itself
        (``ember.settle``)."""
        self._holders.add(setter)

    def artifact(self) -> dict[str, Any] | None:
        """This graph in picklable data for ``load_compiled_graph``; None for a graph that runs
        as its aten graph (nothing was generated, or it failed to build)."""
        self.wait()
        kernels = self._keepalive
        if not isinstance(kernels, CompiledKernels):
            return None
        gm = self._gm if isinstance(self._gm, bytes) else _pickled(self._gm)
        if gm is None:
            return None
        parts = {name: value for name, value in self._parts.items() if name != "source"}  # in the spec
        return {**parts, "gm": gm, "backend": kernels.backend, "kernels": kernels.spec}


def _pickled(gm: torch.fx.GraphModule) -> bytes | None:
    """``gm`` pickled, None if it cannot be (the graph is then not stored)."""
    try:
        return pickle.dumps(gm)
    except Exception:  # a symbolic make_fx graph keeps its ShapeEnv, and its placeholders the
        pass           # traced function's annotations (strings, under postponed evaluation)
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    for node in graph.nodes:
        node.type = None
    clean = torch.fx.GraphModule(gm, graph)
    clean.__dict__.pop("shape_env", None)
    clean.meta = {}
    try:
        return pickle.dumps(clean)
    except Exception as exc:
        log.debug("cannot pickle the graph (%s); it is not stored", exc)
        return None


def _writes_inputs(gm: torch.fx.GraphModule) -> bool:
    """Whether any op of the graph mutates one of its arguments (an input or a buffer)."""
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and (schema is None or schema.is_mutable):
            if schema is not None or not callable(node.target) or node.target.__module__ != "_operator":
                return True
    return False


def run_gm(gm: torch.fx.GraphModule) -> Callable:
    """``gm`` run as it is, its outputs a tuple (as the wrapper's)."""
    def run(*args: Any) -> Any:
        out = gm(*args)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)
    return run


def compile_aten_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                       defer: bool = False, strict: bool = True) -> CompiledGraph | PerShapeGraph:
    """Compile an aten graph whose nodes carry ``meta["val"]`` (FakeTensors).

    The kernels build on a background thread. Without ``defer`` this waits for them and raises
    if they fail. With ``defer`` it returns once their code is generated: the caller goes on
    (ember_aot lowers the backward graph meanwhile), and the graph waits for its kernels when
    first called or saved; a failed build then raises there (``strict``) or leaves the graph
    running as its aten graph, with a warning.

    A graph with symbolic sizes (``meta["val"]`` with SymInts) gives one compiled graph for
    every size; what cannot be compiled symbolically is compiled per shape instead."""
    shape_env = symbolic.shape_env_of(gm)
    if shape_env is None:
        return _compile(gm, example_inputs, defer, strict)

    def per_shape(reason: str) -> PerShapeGraph:
        return PerShapeGraph(gm, lambda static, args: compile_aten_graph(static, args, strict=strict), reason)
    try:
        with symbolic.using_hints(shape_env):
            return _compile(gm, example_inputs, defer, strict,
                            fallback=lambda: per_shape("its kernels failed to build"))
    except Exception as exc:  # anything not written for symbolic sizes yet: correct per shape
        log.debug("symbolic compilation failed", exc_info=True)
        return per_shape(f"{type(exc).__name__}: {exc}")


def _compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], defer: bool, strict: bool,
             fallback: Callable | None = None) -> CompiledGraph:
    device = graph_device(gm)
    if device.type == "cuda":
        from .codegen.triton_runtime import start_compile_workers
        start_compile_workers()
        layout.channels_last_convolutions(gm)
    if kernel_language(device.type) == "triton":  # CUDA's libraries run the products
        pad_matmuls(gm)
    dump = debug.DebugDump.create(gm)
    graph = GraphLowering(gm).run()
    scheduler = Scheduler(graph)
    if dump:
        dump.write_ir(graph, scheduler)
    groups = [g for g in scheduler.groups if isinstance(g, FusedGroup)]
    run = run_gm(gm)
    if not groups and not graph.runs_other_ops:  # aten's graph runs the same ops
        return CompiledGraph(gm, run, run, None, {"fallback_ops": graph.fallback_ops})
    prepared = backend_for(device.type).prepare(scheduler)
    codegen = WrapperCodegen(scheduler, prepared.kernels, device, prepared.tensor_args)
    source = codegen.generate()
    if dump:
        dump.write_code(prepared.source, source, kernel_language(device.type))
    if graph.fallback_ops:
        log.debug("ops run by aten: %s", sorted(set(graph.fallback_ops)))
    pending = _BUILDS.submit(_build_on, device, prepared.build)
    compiled = CompiledGraph(gm, None, None, None, {
        "wrapper": source, "device": device, "values": codegen.values, "ops": codegen.ops,
        "kernel_count": len(groups), "fallback_ops": graph.fallback_ops, "source": prepared.source,
        "kernel_names": _kernel_names(groups, prepared.kernels, kernel_language(device.type)),
    }, pending, f"<ember_inductor wrapper {debug.graph_hash(gm)}>", strict, fallback)
    if not defer:
        pending.result()  # raises here, for the caller's fallback policy
        compiled.wait()
    return compiled


#: Builds kernels off the compiling thread (a C++ build is a compiler process, a Triton one
#: mostly waits on the worker processes); two, so a forward and a backward build together.
_BUILDS = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="ember-kernel-build")


def _build_on(device: torch.device, build: Callable[[], CompiledKernels]) -> CompiledKernels:
    if device.type != "cuda":
        return build()
    with torch.cuda.device(device):
        return build()


def load_compiled_graph(artifact: dict[str, Any], kernels: CompiledKernels | None = None) -> CompiledGraph:
    """The graph ``CompiledGraph.artifact()`` described, its kernels loaded from the caches (or
    ``kernels``, loaded by the caller)."""
    kernels = kernels or backend_named(artifact["backend"]).load(artifact["kernels"])
    fast, checked = _wrapper(artifact, kernels, "<ember_inductor wrapper (cached)>")
    parts = {name: artifact[name] for name in ("wrapper", "device", "values", "ops", "kernel_count", "fallback_ops",
                                               "kernel_names")}
    return CompiledGraph(artifact["gm"], fast, checked, kernels, {**parts, "source": kernels.source})


def _kernel_names(groups: list[FusedGroup], kernels: dict[int, tuple[str, list[str]]], language: str) -> dict[str, str]:
    """Each kernel's global name in the wrapper -> what it computes (``cpp_poi_addmm_gelu``; a
    function run for several groups is named after the first)."""
    names: dict[str, str] = {}
    for g in groups:
        names.setdefault(kernels[id(g)][0], describe(g, language))
    return names


def _wrapper(parts: dict[str, Any], kernels: CompiledKernels, filename: str) -> tuple[Callable, Callable]:
    """The wrapper source ``parts["wrapper"]`` run with ``kernels``: (call, call_checked)."""
    env = wrapper_globals(parts["device"], parts["values"], parts["ops"])
    for name, _params, fn in kernels.kernels.values():
        env[name] = fn
    env["_ranged"] = RangedTwin(parts["wrapper"], env, parts["kernel_names"], filename)
    exec(compile(parts["wrapper"], filename, "exec"), env)
    return env["call"], env["call_checked"]


