"""Entry point of the ember_tvm plugin: declares backend "tvm"."""
from __future__ import annotations

from ember.plugin import BackendSpec, hookimpl


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            name="tvm",
            compiler="ember_tvm.backend:tvm",
            tags=("inference",),
            requires=("tvm",),
            install="ember[tvm]",
            description="imports the graph into Apache TVM Relax and runs it in the Relax VM",
            accepts_options=True,
            options="ember_tvm.options:NAMES",
            dynamic=False,  # compiled per concrete shape (the core's per-shape cache)
        )
    ]
