"""Warm-up, capture and replay with ``torch.cuda``: the only module that touches CUDA graphs.

The wrapper talks to a recorder through five calls (``device_reason``, ``warmup``, ``new_pool``,
``capture``, ``replay``), so its logic runs on CPU in tests with a fake recorder. A capture gets
its own memory pool unless the wrapper passes one: a graph's recordings for different input
shapes share one pool, and the wrapper replays them only where that cannot clobber outputs
still alive (see ``wrapper``). Warm-up and
capture run on one side stream per device shared by all recorders: cuBLAS keeps a workspace
per stream for the life of the process, so a stream per recorder would keep one per graph.

That workspace's address is baked into every recorded matrix product, so it must be memory that
no tensor will get. Before each capture the recorder drops cuBLAS's cached workspaces and has the
side stream's one allocated again inside a small capture of its own, in a pool kept for the
process (``_workspace_in_pool``). Had it stayed where the warm-up allocated it, in the ordinary
allocator, whoever clears the workspaces later (torch.compile's CUDA graph trees do, around each
of their recordings) would hand its memory to other tensors and a replay would write into them,
or after ``torch.cuda.empty_cache`` into memory given back to the driver: an illegal access.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import torch

from . import registry
from .checks import device_reason

_CAPTURE_LOCK = threading.Lock()  # one capture at a time in the process (a CUDA requirement)
_SIDE_STREAMS: dict[torch.device, torch.cuda.Stream] = {}
_STREAMS_LOCK = threading.Lock()
# per device: the pool the side stream's cuBLAS workspace lives in, and the latest capture that
# allocated one there (it keeps the pool, and so every earlier workspace, alive)
_WORKSPACE_POOLS: dict[torch.device, tuple[Any, torch.cuda.CUDAGraph]] = {}


def _device(args: Sequence[Any]) -> torch.device:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("cuda", torch.cuda.current_device())


class CudaRecorder:
    """Records ``fn`` into a ``torch.cuda.CUDAGraph`` (side-stream warm-up, private pool)."""

    def _stream(self, device: torch.device) -> torch.cuda.Stream:
        with _STREAMS_LOCK:
            stream = _SIDE_STREAMS.get(device)
            if stream is None:
                stream = _SIDE_STREAMS[device] = torch.cuda.Stream(device)
        return stream

    def device_reason(self, args: Sequence[Any]) -> str:
        return device_reason(args)

    def warmup(self, fn: Callable, args: Sequence[Any]) -> Any:
        """Run ``fn`` eagerly on a side stream (lazy library init happens off the main stream)."""
        device = _device(args)
        with torch.cuda.device(device):
            torch.cuda.synchronize()
            stream = self._stream(device)
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                out = fn(*args)
            torch.cuda.current_stream().wait_stream(stream)
            torch.cuda.synchronize()
        return out

    def new_pool(self) -> Any:
        """A memory pool handle several captures can share."""
        return torch.cuda.graph_pool_handle()

    def capture(self, fn: Callable, args: Sequence[Any],
                pool: Any = None) -> tuple[torch.cuda.CUDAGraph, Any]:
        """Record one call of ``fn`` on ``args`` into ``pool`` (None: a pool of its own); returns
        the graph and its (static) outputs.

        ``torch.cuda.graph`` is not used: when its capture fails it leaves the side stream
        current. Here the stream context always unwinds and a failed capture is always ended.
        """
        device = _device(args)
        graph = torch.cuda.CUDAGraph()
        with _CAPTURE_LOCK, torch.cuda.device(device), registry.capturing():
            torch.cuda.synchronize()
            stream = self._stream(device)
            stream.wait_stream(torch.cuda.current_stream())
            try:
                _workspace_in_pool(device, stream)
                with torch.cuda.stream(stream):
                    graph.capture_begin(pool if pool is not None else torch.cuda.graph_pool_handle(),
                                        capture_error_mode="thread_local")
                    try:
                        out = fn(*args)
                    except BaseException:
                        _end_failed(graph)
                        raise
                    graph.capture_end()
            except Exception:
                _clear_error(device)
                raise
            torch.cuda.current_stream().wait_stream(stream)
        return graph, out

    def replay(self, handle: torch.cuda.CUDAGraph, plan: Any, args: Sequence[Any]) -> None:
        handle.replay()


def _workspace_in_pool(device: torch.device, stream: torch.cuda.Stream) -> None:
    """Drop cuBLAS's cached workspaces and allocate the side stream's (cuBLAS and cuBLASLt) again
    inside a capture into this device's workspace pool, kept for the process (module docstring).
    The same products run first outside any capture: creating a cuBLAS handle inside one would
    invalidate it."""
    a = torch.ones(16, 16, device=device)
    bias = torch.ones(16, device=device)
    with torch.cuda.stream(stream):
        _matrix_products(a, bias)
    torch._C._cuda_clearCublasWorkspaces()
    held = _WORKSPACE_POOLS.get(device)
    pool = held[0] if held is not None else torch.cuda.graph_pool_handle()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        graph.capture_begin(pool, capture_error_mode="thread_local")
        try:
            _matrix_products(a, bias)
        except BaseException:
            _end_failed(graph)
            raise
        graph.capture_end()
    _WORKSPACE_POOLS[device] = (pool, graph)  # a pool is kept only once a capture holds it


def _matrix_products(a: torch.Tensor, bias: torch.Tensor) -> None:
    torch.mm(a, a)
    torch.nn.functional.linear(a, a, bias)  # the cuBLASLt path (a product with a bias)


def _end_failed(graph: torch.cuda.CUDAGraph) -> None:
    """End a capture whose body raised (that exception is the one reported).

    When the capture was invalidated, ``capture_end`` raises before the CUDA generator leaves
    capture mode, and every later random op would fail ("Offset increment outside graph
    capture"). An empty capture on the same stream runs the generator's epilogue and resets it.
    """
    try:
        graph.capture_end()
    except Exception:
        try:
            empty = torch.cuda.CUDAGraph()
            empty.capture_begin(capture_error_mode="thread_local")
            empty.capture_end()
        except Exception:
            pass


def _clear_error(device: torch.device) -> None:
    """After a failed capture: make sure the device is usable again (the error is reported)."""
    try:
        torch.cuda.synchronize(device)
    except Exception:  # a sticky error would surface in the eager re-run, with its own message
        pass
