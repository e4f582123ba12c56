"""Bytes of activations saved between forward and backward: eager autograd against ember_aot's
min-cut partition and its save-everything partition, for the ResNet-18 and GPT training steps.

Each figure is measured the same way (autograd's saved-tensor hooks around one forward) over the
compiled function, so the three are comparable. Run: ``python -m benchmarks.activation_memory``.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

import ember
from ember_aot import aot_autograd, min_cut_partition, save_all_partition, saved_activation_bytes

from .models import GPT, ResNet18


def _eager_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return gm.forward


def measure(name: str, model: torch.nn.Module, *inputs: torch.Tensor) -> tuple[str, int, int, int]:
    def loss(*args: torch.Tensor) -> torch.Tensor:
        return model(*args).float().sum()

    eager = saved_activation_bytes(loss, *inputs, extra=list(model.parameters()) + list(model.buffers()))
    figures = []
    for partition in (min_cut_partition, save_all_partition):
        ember.reset()
        backend = aot_autograd(fw_compiler=_eager_backend, partition_fn=partition)
        compiled = ember.compile(loss, backend=backend)
        compiled(*inputs)  # compile outside the measurement
        figures.append(saved_activation_bytes(compiled, *inputs, extra=list(model.parameters()) + list(model.buffers())))
    return name, eager, figures[0], figures[1]


def main() -> None:
    torch.manual_seed(0)
    rows = [
        measure("ResNet-18 (width 64) train, 4x3x64x64", ResNet18(width=64).train(), torch.randn(4, 3, 64, 64)),
        measure("GPT 2L d192 train, 1x128", GPT(vocab=512, d=192, heads=6, layers=2).train(),
                torch.randint(0, 512, (1, 128))),
    ]
    print(f"torch {torch.__version__}")
    print("| workload | eager autograd | ember min-cut | ember save-all | min-cut / eager |")
    print("|---|---|---|---|---|")
    for name, eager, mincut, saveall in rows:
        print(f"| {name} | {eager / 1e6:.2f} MB | {mincut / 1e6:.2f} MB | {saveall / 1e6:.2f} MB | {mincut / eager:.2f} |")


if __name__ == "__main__":
    main()
