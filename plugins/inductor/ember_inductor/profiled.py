"""C++ kernels named in torch.profiler traces.

A C++ kernel is a ctypes call, in which the profiler sees no op: a trace of a compiled CPU call
showed its aten ops with gaps between them. While the profiler records, a C++ graph's wrapper
calls a twin of itself (the same source, built on the first such call) whose kernels each run
inside a range named after what they compute (``cpp_poi_addmm_native_layer_norm``, see
``codegen.common.describe``). With the profiler off, the wrapper's check is one attribute read.
"""
from __future__ import annotations

import types
from typing import Any, Callable

import torch

#: What a twin's own check reads: it never calls a twin again.
_OFF = types.SimpleNamespace(_is_profiler_enabled=False)


def _ranged(fn: Callable, name: str) -> Callable:
    def call(*args: Any) -> Any:
        with torch.profiler.record_function(name):
            return fn(*args)
    return call


class RangedTwin:
    """The wrapper ``source`` run in ``env`` with each kernel of ``names`` (global name -> range
    name) inside its range; compiled on its first call."""

    def __init__(self, source: str, env: dict[str, Any], names: dict[str, str], filename: str) -> None:
        self._source, self._env, self._names, self._filename = source, env, names, filename
        self._call: Callable | None = None

    def __call__(self, *args: Any) -> Any:
        if self._call is None:
            env = dict(self._env, _profiler=_OFF)
            env.update((g, _ranged(env[g], name)) for g, name in self._names.items() if g in env)
            exec(compile(self._source, f"{self._filename} (profiled)", "exec"), env)  # noqa: S102 (generated)
            self._call = env["call"]
        return self._call(*args)
