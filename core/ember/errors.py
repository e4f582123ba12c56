"""Exceptions ember raises to users."""
from __future__ import annotations


class EmberError(RuntimeError):
    """Base class of ember's errors."""


class BackendUnavailable(EmberError):
    """The requested backend is unknown or its dependencies are missing."""


class BackendCompilerFailed(EmberError):
    """A backend raised while compiling a graph (raised only when fallback is disabled)."""


class PackageMismatch(EmberError):
    """An ahead-of-time package (``ember.aot_load``) was built for other versions or another
    machine, or a call's inputs do not match the ones it was compiled for."""


class Unsupported(EmberError):
    """Capture met something it cannot put in a graph (raised with fullgraph=True)."""


class GeneratedCodeFailed(Unsupported):
    """Code ember generated (graph, guard, runner, resume function) did not build: an ember bug,
    never the user's crash; the function runs eagerly with a warning that names the reason."""

    def __init__(self, what: str, exc: BaseException, guards: object) -> None:
        super().__init__(f"ember's generated {what} failed to build ({type(exc).__name__}: {exc})")
        self.guards = guards
