"""Entry point of the ember_inductor plugin: declares backend "inductor"."""
from __future__ import annotations

from ember.plugin import BackendSpec, hookimpl


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            name="inductor",
            compiler="ember_inductor.backend:inductor",
            tags=("training", "inference"),
            requires=(),
            install="",
            description="fusion IR with C++/OpenMP (CPU) and Triton (GPU) code generation",
            accepts_options=True,
            options=("strict", "eager_fallback"),  # read by backend.py and measured.py
            dynamic=True,
            packager="ember_inductor.package:PACKAGER",  # ember.aot_compile / aot_load
        )
    ]
