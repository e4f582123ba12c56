"""ember_eager: the ``eager`` backend, which runs the captured graph with PyTorch eager.

It is the debugging baseline: capture and guards are exercised, the graph itself is untouched.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch


def eager(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """Run the graph as it is."""
    return gm.forward
