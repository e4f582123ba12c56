"""A graph with symbolic sizes that the inductor cannot compile symbolically: one compiled
graph per concrete shape.

The graph is traced again with the call's real inputs (``make_fx``, fake tensors: the size
arithmetic becomes constants), and that static graph is compiled and kept under the inputs'
sizes, strides and int values. At most ``ember.config.cache_size_limit`` shapes are compiled;
further shapes run the aten graph, after one warning. Which graph took this path, and why, is
logged once under ``EMBER_LOGS=inductor``.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Sequence

import torch
import torch.fx

log = logging.getLogger("ember.inductor")


def _signature(args: Sequence[Any]) -> tuple:
    return tuple((tuple(a.shape), a.stride(), a.dtype, a.device) if isinstance(a, torch.Tensor) else a
                 for a in args)


class PerShapeGraph:
    """Callable like ``CompiledGraph``: ``graph(*args) -> tuple of outputs``."""

    def __init__(self, gm: torch.fx.GraphModule, compile_static: Callable[[torch.fx.GraphModule, list], Callable],
                 reason: str) -> None:
        self.gm = gm
        self._compile_static = compile_static
        self._compiled: dict[tuple, Callable] = {}
        self._lock = threading.Lock()
        self._warned = False
        self.reason = reason
        log.info("ember_inductor: a graph with symbolic sizes is compiled per shape (%s)", reason)

    @property
    def kernel_count(self) -> int:
        return 0

    def __call__(self, *args: Any) -> Any:
        key = _signature(args)
        fn = self._compiled.get(key)
        if fn is None:
            with self._lock:
                fn = self._compiled.get(key) or self._compile(key, list(args))
        return fn(*args)

    def _compile(self, key: tuple, args: list) -> Callable:
        from ember import config
        if len(self._compiled) >= config.cache_size_limit:
            if not self._warned:
                log.warning("ember_inductor: a graph compiled per shape reached cache_size_limit=%d shapes; "
                            "other shapes run with aten", config.cache_size_limit)
                self._warned = True
            return self._run_aten
        from torch.fx.experimental.proxy_tensor import make_fx
        with torch.no_grad():
            static = make_fx(self.gm, tracing_mode="fake")(*args)
        fn = self._compile_static(static, args)
        self._compiled[key] = fn
        return fn

    def _run_aten(self, *args: Any) -> Any:
        out = self.gm(*args)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)
