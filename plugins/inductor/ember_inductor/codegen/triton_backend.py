"""Triton kernel backend: one source file per fused group, compiled in parallel, autotuned on first run.

Used for CUDA tensors, and for CPU tensors when ``EMBER_INDUCTOR_KERNELS=triton`` (with
``TRITON_INTERPRET=1`` the kernels then run in Triton's interpreter: how CI tests the generated
code without a GPU). :func:`generate_triton` returns the kernel sources of a function without
compiling or running anything.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from .. import ir
from ..scheduler import FusedGroup, Scheduler
from .common import CompiledKernels, PreparedKernels, describe, size_param
from .triton import TritonKernel
from .triton_configs import LaunchConfig
from .triton_prelude import PRELUDE
from .triton_runtime import TritonLauncher, compile_all, write_kernel


@dataclasses.dataclass
class LauncherSpec:
    """Everything needed to load and launch one generated kernel again (picklable)."""

    name: str                 # the wrapper's name for it
    params: list[str]         # buffers passed, in order, then ``size:`` symbols
    key: str                  # source hash: the module is ``kernel_path(key)``
    fn_name: str              # the jit function in that module
    signature: dict[str, str]
    configs: list[LaunchConfig]
    grids: list[tuple]        # per configuration: ints, or Python source over the size symbols
    aligned: list[bool]       # parameters known to be 16-byte aligned
    row_length: str = ""      # a dual kernel's row length over the size symbols (TritonKernel.row_length)
    accumulated: list[int] = dataclasses.field(default_factory=list)  # params added into (scatters)
    binary_hashes: dict[int, str] = dataclasses.field(default_factory=dict)  # Triton cache entries of
    hash_context: str = ""    # compiled configurations, and what they were compiled for


class TritonBackend:
    name = "triton"

    def generate(self, scheduler: Scheduler) -> list[tuple[FusedGroup, TritonKernel, str]]:
        """(group, kernel, module source) for every fused group."""
        out = []
        for g in scheduler.groups:
            if not isinstance(g, FusedGroup):
                continue
            k = TritonKernel(describe(g, "triton"), g, scheduler.stored_buffers(g), scheduler.graph.names,
                             {sym.name for sym in scheduler.graph.symbol_sources})
            out.append((g, k, PRELUDE + "\n\n" + k.generate()))
        return out

    def prepare(self, scheduler: Scheduler) -> PreparedKernels:
        generated = self.generate(scheduler)
        specs: dict[int, LauncherSpec] = {}
        for n, (g, k, source) in enumerate(generated):
            key = write_kernel(source)
            configs = k.configs()
            aligned = [isinstance(scheduler.graph.names[b], ir.ComputedBuffer) for b in k.params]
            aligned += [True] * len(k.size_params)  # ints: nothing to check
            params = list(k.params) + [size_param(name) for name in k.size_params]
            accumulated = [i for i, b in enumerate(k.params)  # written where read: a scatter's, an input's
                           if isinstance(scheduler.graph.names[b], ir.ScatterBuffer) or b in g.in_place]
            specs[id(g)] = LauncherSpec(f"triton_k{n}", params, key, k.name, k.signature(), configs,
                                        [k.grid(c) for c in configs], aligned, k.row_length(), accumulated)
        source = "\n\n".join(f"# kernel triton_k{n}\n{src}" for n, (_, _, src) in enumerate(generated))
        meta = {gid: (s.name, s.params) for gid, s in specs.items()}
        return PreparedKernels(source, meta, True, lambda: self._load(source, specs))

    def load(self, spec: tuple[str, list[LauncherSpec]]) -> CompiledKernels:
        source, specs = spec
        return self._load(source, {s.name: s for s in specs})

    @staticmethod
    def _load(source: str, specs: dict[Any, LauncherSpec]) -> CompiledKernels:
        """Launchers for ``specs`` (kernel sources in the cache), all compiled."""
        kernels: dict[Any, tuple[str, list[str], Callable]] = {}
        for gid, s in specs.items():
            launcher = TritonLauncher(s.key, s.fn_name, s.signature, s.configs, s.grids, s.aligned,
                                      s.row_length, s.accumulated)
            launcher.binary_hashes, launcher.hash_context = s.binary_hashes, s.hash_context
            kernels[gid] = (s.name, s.params, launcher)
        compile_all([launcher for _, _, launcher in kernels.values()])
        done = [dataclasses.replace(s, binary_hashes=kernels[gid][2].binary_hashes,
                                    hash_context=kernels[gid][2].hash_context) for gid, s in specs.items()]
        launchers = [launcher for _, _, launcher in kernels.values()]
        return CompiledKernels(source, kernels, tensor_args=True, spec=(source, done), backend=TritonBackend.name,
                               files=lambda: {k: v for ln in launchers for k, v in ln.files().items()})


def generate_triton(fn: Callable, example_inputs: Sequence[Any]) -> dict[str, tuple[str, TritonKernel]]:
    """Triton sources of the kernels ``fn`` compiles to (no GPU needed; nothing is compiled).

    Returns ``{wrapper name: (module source, kernel)}``; the kernel object gives the jit
    function's name, its signature and its launch configurations.
    """
    from ..trace import trace_inference
    from ..graph import GraphLowering
    aten_gm, _ = trace_inference(fn, list(example_inputs))
    scheduler = Scheduler(GraphLowering(aten_gm).run())
    return {f"triton_k{n}": (src, k) for n, (_, k, src) in enumerate(TritonBackend().generate(scheduler))}
