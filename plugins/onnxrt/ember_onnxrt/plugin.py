"""Entry point of the ember_onnxrt plugin: declares backend "onnxrt"."""
from __future__ import annotations

from ember.plugin import BackendSpec, hookimpl


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            name="onnxrt",
            compiler="ember_onnxrt.backend:onnxrt",
            tags=("inference",),
            requires=("onnxruntime", "onnx", "onnxscript"),
            install="ember[onnxrt]",
            description="runs the graph in onnxruntime (CPU or CUDA execution providers)",
            accepts_options=True,
            options="ember_onnxrt.options:NAMES",
            dynamic=False,  # compiled per concrete shape (the core's per-shape cache)
        )
    ]
