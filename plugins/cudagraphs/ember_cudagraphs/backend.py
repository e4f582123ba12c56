"""Backend ``cudagraphs``: ember_aot's forward/backward aten graphs, recorded into CUDA graphs.

The graphs run with PyTorch eager for warm-up, then are recorded and replayed (``wrapper``).
Training goes through ember_aot as well: the forward and the backward are each wrapped, so a
training step replays two graphs. Graphs with symbolic sizes are traced once by ember_aot and
recorded per concrete shape by the wrapper (bounded, one shared pool). Without CUDA, or with inputs off CUDA, the backend runs the
captured graph eagerly with one warning.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import torch
import torch.fx

from .checks import cuda_reason, device_reason
from .host_scalars import is_host_scalar
from .wrapper import wrap_compiler

log = logging.getLogger("ember.cudagraphs")


def _aten_runner(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Runs an aten graph with PyTorch eager, returning a tuple."""
    def run(*args: Any) -> tuple:
        out = gm(*args)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)
    return run


def aot_backend(recorder: Any = None) -> Callable:
    """ember_aot's backend with every forward, backward and inference graph wrapped (``wrap``);
    ``recorder`` replaces the torch.cuda recorder (tests)."""
    from ember_aot import aot_autograd

    compile_graph = wrap_compiler(_aten_runner, recorder=recorder)
    return aot_autograd(fw_compiler=compile_graph, bw_compiler=compile_graph,
                        inference_compiler=compile_graph, dynamic=True)


def cudagraphs(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any) -> Callable:
    """The ``cudagraphs`` backend (see the module docstring)."""
    # 0-dim CPU inputs are left to each aten graph (``host_scalars``)
    reason = cuda_reason() or device_reason([None if is_host_scalar(a) else a for a in example_inputs])
    if reason:
        log.warning("ember_cudagraphs: running the graph without CUDA graphs: %s", reason)
        return gm.forward
    return aot_backend()(gm, example_inputs)
