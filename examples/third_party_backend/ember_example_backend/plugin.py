"""Entry point of the example plugin: one backend, ``example_counter``."""
from __future__ import annotations

from ember.plugin import BackendSpec, hookimpl


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            name="example_counter",
            compiler="ember_example_backend:counting_backend",
            tags=("inference",),
            description="example third-party backend: counts graphs, runs them eagerly",
        )
    ]
