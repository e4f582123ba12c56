"""ember: a just-in-time compiler for unmodified PyTorch programs.

    import ember
    fast = ember.compile(model)                  # backend="inductor" by default
    fast = ember.compile(fn, backend="eager")    # any registered backend, or a callable
    ember.list_backends()

Importing ember is cheap: plugins are discovered on first use.
"""
from __future__ import annotations

from . import config, logs, report
from .aot_package import AOTPackage, aot_compile, aot_load
from .api import OptimizedModule, compile, disable, graph_break, optimize, reset
from .backends import list_backends, register_backend
from .cache_artifacts import load_cache_artifacts, save_cache_artifacts
from .errors import BackendCompilerFailed, BackendUnavailable, EmberError, PackageMismatch, Unsupported
from .explain import explain
from .shapes import mark_dynamic, mark_static
from .stance import set_stance
from .export import export

__version__ = "0.1.0"

logs.configure()
report.configure()

__all__ = [
    "AOTPackage",
    "BackendCompilerFailed",
    "BackendUnavailable",
    "EmberError",
    "OptimizedModule",
    "PackageMismatch",
    "Unsupported",
    "aot_compile",
    "aot_load",
    "compile",
    "config",
    "disable",
    "explain",
    "export",
    "graph_break",
    "list_backends",
    "load_cache_artifacts",
    "mark_dynamic",
    "mark_static",
    "optimize",
    "register_backend",
    "reset",
    "save_cache_artifacts",
    "set_stance",
]
