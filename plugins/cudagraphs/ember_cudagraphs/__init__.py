"""ember_cudagraphs: CUDA graphs for ember — backend "cudagraphs" and a wrapper other plugins use.

    from ember_cudagraphs import wrap, wrap_compiler
    fast = wrap(compiled_fn, example_inputs)          # record once, replay afterwards
    compiler = wrap_compiler(aten_compiler)            # what inductor's mode="reduce-overhead" uses

Modules: ``checks`` (why a graph cannot be captured), ``inputs`` (static input buffers and the
address-stability check), ``outputs`` (which memory a replay hands out, and when it is still in
use), ``recorder`` (warm-up, capture and replay with torch.cuda), ``recording`` (one captured
graph), ``wrapper`` (per-signature state machine, fallbacks, policies), ``registry`` (weak
registry that frees graphs with their compiled entries), ``backend`` (backend ``cudagraphs``).

Attributes load lazily, so importing ``ember_cudagraphs.plugin`` (backend listing) stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CudaGraphed": "wrapper",
    "wrap": "wrapper",
    "wrap_compiler": "wrapper",
    "CudaRecorder": "recorder",
    "cudagraphs": "backend",
    "live_graphs": "registry",
    "release_memory": "registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ember_cudagraphs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
