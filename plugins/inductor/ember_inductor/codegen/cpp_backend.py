"""C++/OpenMP kernel backend: one source per graph, built with the system compiler, loaded by ctypes."""
from __future__ import annotations

import ctypes
from typing import Any

from .. import cache
from ..scheduler import FusedGroup, Scheduler
from .common import CompiledKernels, PreparedKernels
from .cpp import CppKernel
from .cpp_prelude import prelude


class CppBackend:
    name = "cpp"

    def generate(self, scheduler: Scheduler) -> tuple[str, dict[int, tuple[str, list[str]]]]:
        parts = []
        meta: dict[int, tuple[str, list[str]]] = {}
        for g in scheduler.groups:
            if not isinstance(g, FusedGroup):
                continue
            name = f"kernel{len(meta)}"
            k = CppKernel(name, g, scheduler.stored_buffers(g), scheduler.graph.names)
            parts.append(k.generate())
            meta[id(g)] = (name, list(k.params))
        kernels = "\n\n".join(parts)
        return prelude(kernels) + "\n\n" + kernels + "\n", meta

    def prepare(self, scheduler: Scheduler) -> PreparedKernels:
        source, meta = self.generate(scheduler)
        return PreparedKernels(source, meta, False, lambda: self._load(source, meta))

    def load(self, spec: tuple[str, list[tuple[str, list[str]]]]) -> CompiledKernels:
        source, kernels = spec
        return self._load(source, {name: (name, params) for name, params in kernels})

    @staticmethod
    def _load(source: str, meta: dict[Any, tuple[str, list[str]]]) -> CompiledKernels:
        lib = cache.load_library(source)
        kernels = {}
        for gid, (name, params) in meta.items():
            fn = getattr(lib, name)
            fn.argtypes = [ctypes.c_void_p] * len(params)
            fn.restype = None
            kernels[gid] = (name, params, fn)
        return CompiledKernels(source, kernels, spec=(source, list(meta.values())), backend=CppBackend.name)
