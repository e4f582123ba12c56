"""Settings users may change at run time, e.g. ``ember.config.cache_size_limit = 16``."""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

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

#: ``.item()`` and ``.tolist()`` stay in the graph as unbacked symbolic scalars instead of breaking it
#: (torch.compile's ``capture_scalar_outputs``); a branch on such a value still breaks.
capture_scalar_outputs: bool = os.environ.get("EMBER_CAPTURE_SCALAR_OUTPUTS", "0") == "1"

#: Ops whose output size depends on the data (``nonzero``, ``unique``, ``masked_select``, ``x[mask]``)
#: stay in the graph with unbacked sizes instead of breaking it (torch.compile's
#: ``capture_dynamic_output_shape_ops``).
capture_dynamic_output_shape_ops: bool = os.environ.get("EMBER_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS", "0") == "1"


@contextlib.contextmanager
def patch(**changes: Any) -> Iterator[None]:
    """Set settings of this module for the ``with`` block: ``with ember.config.patch(cache_size_limit=2):``."""
    module = sys.modules[__name__]
    unknown = [name for name in changes if not hasattr(module, name) or name == "patch"]
    if unknown:
        raise AttributeError(f"ember.config has no setting {', '.join(unknown)}")
    saved = {name: getattr(module, name) for name in changes}
    for name, value in changes.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
