"""Triton kernel backend: one source file per fused group, compiled in parallel, autotuned on first run.

Used for CUDA tensors, and for CPU tensors when ``EMBER_INDUCTOR_KERNELS=triton`` (with
``TRITON_INTERPRET=1`` the kernels then run in Triton's interpreter: how CI tests the generated
code without a GPU). :func:`generate_triton` returns the kernel sources of a function without
compiling or running anything.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import ir
from ..scheduler import FusedGroup, Scheduler
from .common import CompiledKernels
from .triton import TritonKernel
from .triton_prelude import PRELUDE
from .triton_runtime import TritonLauncher, compile_all, load_kernel


class TritonBackend:
    name = "triton"

    def generate(self, scheduler: Scheduler) -> list[tuple[FusedGroup, TritonKernel, str]]:
        """(group, kernel, module source) for every fused group."""
        out = []
        for g in scheduler.groups:
            if not isinstance(g, FusedGroup):
                continue
            k = TritonKernel("triton_red" if any(n.is_reduction for n in g.nodes) else "triton_poi",
                             g, scheduler.stored_buffers(g), scheduler.graph.names)
            out.append((g, k, PRELUDE + "\n\n" + k.generate()))
        return out

    def compile(self, scheduler: Scheduler) -> CompiledKernels:
        generated = self.generate(scheduler)
        launchers: list[TritonLauncher] = []
        kernels: dict[int, tuple[str, list[str], Callable]] = {}
        for n, (g, k, source) in enumerate(generated):
            fn, key = load_kernel(source, k.name)
            configs = k.configs()
            aligned = [isinstance(scheduler.graph.names[b], ir.ComputedBuffer) for b in k.params]
            launcher = TritonLauncher(fn, key, k.signature(), configs, [k.grid(c) for c in configs], aligned)
            launchers.append(launcher)
            kernels[id(g)] = (f"triton_k{n}", list(k.params), launcher)
        compile_all(launchers)
        source = "\n\n".join(f"# kernel triton_k{n}\n{src}" for n, (_, _, src) in enumerate(generated))
        return CompiledKernels(source, kernels, tensor_args=True)


def generate_triton(fn: Callable, example_inputs: Sequence[Any]) -> dict[str, tuple[str, TritonKernel]]:
    """Triton sources of the kernels ``fn`` compiles to (no GPU needed; nothing is compiled).

    Returns ``{wrapper name: (module source, kernel)}``; the kernel object gives the jit
    function's name, its signature and its launch configurations.
    """
    from ..backend import trace_inference
    from ..graph import GraphLowering
    aten_gm, _ = trace_inference(fn, list(example_inputs))
    scheduler = Scheduler(GraphLowering(aten_gm).run())
    return {f"triton_k{n}": (src, k) for n, (_, k, src) in enumerate(TritonBackend().generate(scheduler))}
