"""Lets ember_aot keep inductor's compiled plans on disk (``ember_aot.plan_cache``).

A warm process then loads each graph's wrapper and kernels from ``$EMBER_CACHE_DIR`` instead of
tracing, lowering, scheduling and generating code again. The salt holds this plugin's source,
the backend options and the environment settings that change the generated code.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from ember.disk_cache import cache_dir

from .compile_fx import CompiledGraph, load_compiled_graph


class InductorCodec:
    def __init__(self, options: dict | None) -> None:
        from ember_aot.plan_cache import source_hash
        settings = [os.environ.get(name, "") for name in ("EMBER_INDUCTOR_KERNELS", "TRITON_INTERPRET")]
        self.salt = "\0".join([source_hash(os.path.dirname(os.path.abspath(__file__))),
                               repr(sorted((options or {}).items())), *settings])

    def directory(self) -> str:
        return cache_dir("plans")

    def dump(self, compiled: Callable) -> Any:
        return compiled.artifact() if isinstance(compiled, CompiledGraph) else None

    def load(self, artifact: Any) -> Callable:
        return load_compiled_graph(artifact)
