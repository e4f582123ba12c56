"""The interface between the scheduler and a kernel language (C++/OpenMP for CPUs, Triton for GPUs).

A :class:`KernelBackend` turns every fused group of a scheduled graph into a kernel
(``prepare``), then builds and loads them (``PreparedKernels.build``, which may run on another
thread while the caller goes on). The wrapper only needs, per group, the kernel's name, the
buffers its parameters point to (in order; ``size:s0`` entries pass the value of a size symbol) and, once built, a callable taking their addresses.
``spec`` describes the loaded kernels in plain data, so that another process can load them again
without generating anything (``load``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol

from ..scheduler import FusedGroup, Scheduler

#: At most this many op names in a kernel's name.
NAME_OPS = 4


def describe(group: FusedGroup, language: str) -> str:
    """``<language>_red`` or ``<language>_poi``, then the aten ops whose buffers the kernel computes, in
    order (``triton_red_native_batch_norm_relu``): the name profilers and tracebacks show."""
    ops = list(dict.fromkeys(n.buf.origin for n in group.nodes if n.buf.origin))
    kind = "red" if any(n.is_reduction for n in group.nodes) else "poi"
    return "_".join([language, kind, *ops[:NAME_OPS]])


@dataclasses.dataclass
class CompiledKernels:
    source: str  # the whole generated module, for debugging and caching
    kernels: dict[Any, tuple[str, list[str], Callable]]  # id(group) -> (name, param buffers, fn)
    tensor_args: bool = False  # kernels take tensors (Triton) instead of data pointers (C++)
    spec: Any = None  # picklable: what the backend's ``load`` needs to load these kernels again
    backend: str = ""  # the name of the backend that made them
    #: the files they run from, by their path in a package (``ember_inductor.package``); asked
    #: after a first call, since Triton's autotuning writes its choice then
    files: Callable[[], dict[str, str]] = dict


@dataclasses.dataclass
class PreparedKernels:
    source: str  # the whole generated module
    kernels: dict[Any, tuple[str, list[str]]]  # id(group) -> (name, param buffers)
    tensor_args: bool
    build: Callable[[], CompiledKernels]  # compiles (or fetches from the cache) and loads them


class KernelBackend(Protocol):
    name: str

    def prepare(self, scheduler: Scheduler) -> PreparedKernels:
        """Generate every kernel of ``scheduler``; building them is left to the result."""
        ...

    def load(self, spec: Any) -> CompiledKernels:
        """The kernels ``compile`` described by ``spec`` (keyed by name), loaded from the caches."""
        ...


def size_param(symbol: str) -> str:
    """The entry of a kernel's parameter list for a size symbol (its value is passed)."""
    return f"size:{symbol}"


def is_size_param(param: str) -> bool:
    return param.startswith("size:")


__all__ = ["CompiledKernels", "KernelBackend", "PreparedKernels", "is_size_param", "size_param"]
