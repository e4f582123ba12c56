"""ember_aot: AOT autograd for ember — a library other plugins build on, and backend "aot_eager".

    from ember_aot import aot_autograd, default_decompositions
    backend = aot_autograd(fw_compiler=my_aten_compiler)       # an ember backend

Trace the captured graph's forward and backward with make_fx under fake tensors, functionalize
it (input mutations are written back at run time, outputs aliasing inputs come back as views),
split the joint graph with a min-cut partitioner, and run the compiled halves inside a
``torch.autograd.Function``. Modules: ``analysis`` (fake run of the captured graph), ``trace``
(make_fx + functionalize), ``partition`` (min-cut and save-all), ``runtime`` (autograd.Function
and output rebuilding), ``api`` (``aot_autograd``), ``backend`` (``aot_eager``), ``memory``
(saved-activation measurement).

Attributes load lazily, so importing ``ember_aot.plugin`` (backend listing) stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AOTCompiledGraph": "api",
    "MAX_VARIANTS": "api",
    "aot_autograd": "api",
    "default_decompositions": "decompositions",
    "AOTUnsupported": "errors",
    "saved_activation_bytes": "memory",
    "min_cut_partition": "partition",
    "save_all_partition": "partition",
    "saved_bytes": "partition",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ember_aot' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
