"""Entry point of the ember_cudagraphs plugin: declares backend "cudagraphs"."""
from __future__ import annotations

from ember.plugin import BackendSpec, hookimpl


def _cuda_check() -> str:
    import torch

    return "" if torch.cuda.is_available() else "needs a CUDA device (torch.cuda.is_available() is False)"


@hookimpl
def ember_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            name="cudagraphs",
            compiler="ember_cudagraphs.backend:cudagraphs",
            tags=("training", "inference"),
            requires=(),
            install="",
            description="records the graph into CUDA graphs and replays it (CUDA only)",
            check=_cuda_check,
            dynamic=True,
        )
    ]


@hookimpl
def ember_reset() -> None:
    """Free the CUDA graphs and memory pools of dropped compilations."""
    import sys

    if "ember_cudagraphs.registry" in sys.modules:  # nothing to free if it was never used
        sys.modules["ember_cudagraphs.registry"].release_memory()
