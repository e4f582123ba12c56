"""torch's process-wide caches that compiling fills, emptied by ``ember.reset()``.

Dropping ember's own entries is not enough to give a compile's memory back: two caches of torch
keep growing with every graph compiled and are never emptied by torch itself.
- ``FakeTensorMode``'s dispatch cache (one class-level dict for every fake mode), keyed by the
  metadata and constants of each op traced: a new constant (``lambda x: x + i``) is a new entry.
- The source text torch.fx keeps for every ``GraphModule`` it generates, so that tracebacks can
  show it: an entry in its loader's ``eval_cache`` and one in ``linecache``, per graph.
Together they kept about 4.7 KB per compiled lambda under ``aot_eager``. :func:`release` empties
the first and drops the fx sources generated since ember started compiling (graphs made then,
by capture and by the backends); a graph still held afterwards runs as before, only its
traceback lines show no source.
"""
from __future__ import annotations

import linecache

import torch.fx.graph_module
from torch._subclasses.fake_tensor import FakeTensorMode

_FX_PREFIX = "<eval_with_key>."
_first_fx_id: int | None = None  # torch.fx's next source id when ember began compiling


def compiling() -> None:
    """Note that ember compiles from here on (cheap; called at each compile)."""
    global _first_fx_id
    loader = getattr(torch.fx.graph_module, "_loader", None)
    if _first_fx_id is None and loader is not None:
        _first_fx_id = loader.next_id


def release() -> None:
    """Empty the fake-tensor dispatch cache and forget the fx sources made since ember began."""
    global _first_fx_id
    FakeTensorMode.cache_clear()
    loader = getattr(torch.fx.graph_module, "_loader", None)
    if loader is None or _first_fx_id is None:
        return
    for key in [k for k in loader.eval_cache if _fx_id(k) >= _first_fx_id]:
        del loader.eval_cache[key]
        linecache.cache.pop(key, None)
    _first_fx_id = None


def _fx_id(key: str) -> int:
    """The number in torch.fx's source name ``<eval_with_key>.N[ from file:line in name]``."""
    if not key.startswith(_FX_PREFIX):
        return -1
    number = key[len(_FX_PREFIX):].split(" ", 1)[0]
    return int(number) if number.isdigit() else -1
