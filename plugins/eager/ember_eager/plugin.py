"""Entry point of the ember_eager plugin: declares backend ``eager``."""
from __future__ import annotations

from ember.plugin import BackendSpec, hookimpl


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            name="eager",
            compiler="ember_eager:eager",
            tags=("debug",),
            description="runs the captured FX graph with PyTorch eager (no compilation)",
            dynamic=True,  # running the graph is right for every size its guards admit
        )
    ]
