"""Backend ``aot_eager``: ember_aot's tracing, functionalization and partitioning, with both
halves run by PyTorch eager (the aten graphs' own ``forward``). A debugging baseline for
training: if a model misbehaves under ``inductor`` but not here, the bug is in codegen. Running
graphs as they are, it takes graphs with symbolic sizes: a dynamic graph compiles once.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from .api import aot_autograd


def eager_compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """Run an aten graph as it is."""
    return gm.forward


aot_eager = aot_autograd(eager_compiler, dynamic=True)
