"""Entry point of the ember_aot plugin: declares backend "aot_eager"."""
from __future__ import annotations

from ember.plugin import BackendSpec, hookimpl


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            name="aot_eager",
            compiler="ember_aot.backend:aot_eager",
            tags=("debug", "training"),
            requires=(),
            install="",
            description="AOT autograd: forward and backward traced with make_fx, both halves run by PyTorch eager",
            accepts_options=False,
            dynamic=True,
        )
    ]
