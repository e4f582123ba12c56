"""Exceptions ember raises to users."""
from __future__ import annotations


class EmberError(RuntimeError):
    """Base class of ember's errors."""


class BackendUnavailable(EmberError):
    """The requested backend is unknown or its dependencies are missing."""


class BackendCompilerFailed(EmberError):
    """A backend raised while compiling a graph (raised only when fallback is disabled)."""


class Unsupported(EmberError):
    """Capture met something it cannot put in a graph (raised with fullgraph=True)."""
