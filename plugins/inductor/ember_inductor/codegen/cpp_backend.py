"""C++/OpenMP kernel backend: one source per graph, built with the system compiler, loaded by ctypes.

A kernel that checks indirect indices returns nonzero when one was out of range; its ctypes
``errcheck`` then raises eager's exception (``bounds.index_error``) from the kernel's call.
"""
from __future__ import annotations

import ctypes
import os
import re
from typing import Any, Callable

from .. import cache
from ..bounds import index_error
from ..scheduler import FusedGroup, Scheduler
from .common import CompiledKernels, PreparedKernels, is_size_param, size_param
from .cpp import CppKernel
from .cpp_prelude import prelude


class CppBackend:
    name = "cpp"

    def generate(self, scheduler: Scheduler) -> tuple[str, dict[int, tuple[str, list[str]]]]:
        parts = []
        meta: dict[int, tuple[str, list[str]]] = {}
        emitted: dict[str, str] = {}  # a kernel's code with its name left out -> the kernel's name
        for g in scheduler.groups:
            if not isinstance(g, FusedGroup):
                continue
            name = f"kernel{len(parts)}"
            k = CppKernel(name, g, scheduler.stored_buffers(g), scheduler.graph.names,
                          {s.name for s in scheduler.graph.symbol_sources})
            code = k.generate()
            # the same loop over other buffers (each parameter's update in an optimizer step of
            # same-shaped parameters) is one function, called with each one's pointers
            shape = re.sub(rf"\b{name}(?=\b|_pass\b)", "KERNEL", code)
            if shape not in emitted:
                emitted[shape] = name
                parts.append(code)
            meta[id(g)] = (emitted[shape], list(k.params) + [size_param(n) for n in k.size_params])
        kernels = "\n\n".join(parts)
        return prelude(kernels) + "\n\n" + kernels + "\n", meta

    def prepare(self, scheduler: Scheduler) -> PreparedKernels:
        source, meta = self.generate(scheduler)
        return PreparedKernels(source, meta, False, lambda: self._load(source, meta))

    def load(self, spec: tuple[str, list[tuple[str, list[str]]]], library: str = "") -> CompiledKernels:
        """``library``: the built shared object's path, instead of the cache's (a package's)."""
        source, kernels = spec
        return self._load(source, {name: (name, params) for name, params in kernels}, library)

    @staticmethod
    def _load(source: str, meta: dict[Any, tuple[str, list[str]]], library: str = "") -> CompiledKernels:
        lib = cache.open_library(library) if library else cache.load_library(source)
        kernels = {}
        for gid, (name, params) in meta.items():
            fn = getattr(lib, name)
            fn.argtypes = [ctypes.c_int64 if is_size_param(p) else ctypes.c_void_p for p in params]
            fn.restype = None
            if f'extern "C" int64_t {name}(' in source:  # it checks indirect indices
                fn.restype = ctypes.c_int64
                fn.errcheck = _index_errcheck(lib.ember_take_index_error)
            kernels[gid] = (name, params, fn)
        name = f"cpp/{os.path.basename(lib._name)}"
        return CompiledKernels(source, kernels, spec=(source, list(meta.values())), backend=CppBackend.name,
                               files=lambda: {name: lib._name, f"{name}.sha256": f"{lib._name}.sha256"})


def _index_errcheck(take: Any) -> Callable[..., Any]:
    """A ctypes ``errcheck`` raising eager's exception when the kernel's bounds check failed."""
    take.argtypes = [ctypes.c_void_p]
    take.restype = None

    def errcheck(result: int, fn: Any, args: Any) -> None:
        if result:
            out = (ctypes.c_int64 * 3)()
            take(ctypes.addressof(out))
            raise index_error(*out)
    return errcheck
