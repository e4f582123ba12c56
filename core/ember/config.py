"""Settings users may change at run time, e.g. ``ember.config.cache_size_limit = 16``."""
from __future__ import annotations

import os

#: Compiled entries kept per function; beyond it the function runs eagerly (one warning).
cache_size_limit: int = int(os.environ.get("EMBER_CACHE_SIZE_LIMIT", "8"))

#: When a backend raises while compiling: True runs the graph eagerly with one warning,
#: False raises BackendCompilerFailed (useful while debugging a backend).
suppress_errors: bool = os.environ.get("EMBER_SUPPRESS_ERRORS", "1") != "0"

#: Print a warning (not just a log record) when capture falls back to eager.
warn_on_fallback: bool = True

#: Check the tensors of guards in C++ (ember.native_guards) once that helper is built; False
#: keeps every check in Python.
native_guards: bool = os.environ.get("EMBER_NATIVE_GUARDS", "1") != "0"

#: Split the graphs captured inside DDP's forward at its gradient buckets, so that each bucket's
#: all-reduce starts while the rest of the backward runs (as torch.compile's optimize_ddp).
optimize_ddp: bool = os.environ.get("EMBER_OPTIMIZE_DDP", "1") != "0"
