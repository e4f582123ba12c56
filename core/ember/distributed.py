"""torch.distributed's module wrappers around compiled code: DDP and FSDP2.

``DistributedDataParallel.forward`` and FSDP2's forward hooks do their work in Python and in C++
(the reducer's bucket hooks, the all-gathers and reduce-scatters): ember leaves that work to
torch.distributed, as torch.compile does. Calling such a module from captured code is a graph
break (:func:`native_reason` says why), and the broken call runs the wrapper natively with the
code it wraps compiled (:func:`call_with_forward`): DDP's inner module, or an FSDP2 module's own
``forward`` between its hooks. While DDP's forward runs, the graphs compiled for its module are
split at its gradient buckets (``ember.ddp_split``), so each bucket's all-reduce starts while the
rest of the backward still runs.

Nothing here imports ``torch.distributed.fsdp``: a module can only be an FSDP2 module once that
package has been imported.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import torch

_FSDP_MODULE = "torch.distributed.fsdp._fully_shard._fully_shard"


def _ddp_class() -> type | None:
    if not torch.distributed.is_available():
        return None
    return torch.nn.parallel.DistributedDataParallel


def is_ddp(module: Any) -> bool:
    """True for a ``DistributedDataParallel`` module."""
    cls = _ddp_class()
    return cls is not None and isinstance(module, cls)


def is_fsdp(module: Any) -> bool:
    """True for a module sharded with FSDP2's ``fully_shard``."""
    fsdp = sys.modules.get(_FSDP_MODULE)
    return fsdp is not None and isinstance(module, fsdp.FSDPModule)


def native_reason(module: Any) -> str | None:
    """Why calling ``module`` from captured code breaks the graph, or None when it does not."""
    if is_ddp(module):
        return ("DistributedDataParallel's forward runs in Python (its reducer prepares the "
                "gradient buckets); the module it wraps is compiled")
    if is_fsdp(module):
        return (f"FSDP2's hooks around {type(module).__name__} run in Python (all-gathers, "
                "reduce-scatters); its forward is compiled")
    return None


def wrapped_module(module: torch.nn.Module) -> torch.nn.Module:
    """The module whose ``forward`` is compiled when ``module`` (see :func:`native_reason`) runs."""
    return module.module if is_ddp(module) else module


def call_with_forward(module: torch.nn.Module, forward: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``module(*args, **kwargs)`` run natively, with ``wrapped_module(module).forward`` being
    ``forward`` for the length of the call (``nn.Module.__call__`` reads ``self.forward``)."""
    inner = wrapped_module(module)
    own = inner.__dict__
    missing = object()
    previous = own.get("forward", missing)
    own["forward"] = forward
    try:
        return module(*args, **kwargs)
    finally:
        if previous is missing:
            own.pop("forward", None)
        else:
            own["forward"] = previous


def active_ddp() -> torch.nn.Module | None:
    """The DDP module whose forward is running (set by DDP around its module's call), if any."""
    cls = _ddp_class()
    return cls._get_active_ddp_module() if cls is not None else None


__all__ = ["active_ddp", "call_with_forward", "is_ddp", "is_fsdp", "native_reason", "wrapped_module"]
