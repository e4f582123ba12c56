"""A graph captured inside DDP's forward, split at DDP's gradient buckets.

DDP all-reduces the gradients of a bucket as soon as every gradient in it is ready. A graph
compiled as one piece (one ``autograd.Function`` for the AOT backends) makes every parameter's
gradient at the very end of its backward, so all of DDP's all-reduces would wait for the whole
backward. As torch.compile's DDP optimizer does, :func:`compile_by_buckets` cuts the graph into
pieces that each use about one bucket's worth of parameters (``bucket_cap_mb``, DDP's smaller
first bucket, parameters counted from the graph's end, as DDP fills buckets in the order the
backward makes gradients) and compiles each piece with the backend on its own: the backward of
the last piece ends, its parameters' gradients are accumulated and DDP's hooks start their
all-reduce, while the backward of the earlier pieces runs.

The split changes no value: the outer graph calls the compiled pieces in the captured order.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx
from torch.fx.passes.split_module import split_module

from . import logs
from .shapes import is_dynamic

log = logs.get("distributed")

Compile = Callable[[torch.fx.GraphModule, list[torch.Tensor]], Callable]


def bucket_caps(ddp: torch.nn.Module) -> tuple[int, int]:
    """(first bucket's cap, other buckets' cap) in bytes of the DDP module ``ddp``."""
    cap = int(ddp.bucket_bytes_cap)
    config = getattr(ddp, "_bucket_config", None)
    first = int(getattr(config, "first_bucket_bytes_cap", cap))
    return min(first, cap), cap


def ddp_parameters(ddp: torch.nn.Module) -> dict[int, int]:
    """``id`` -> size in bytes of each parameter whose gradient DDP all-reduces."""
    ignored = set(getattr(ddp, "parameters_to_ignore", ()))
    return {id(p): p.numel() * p.element_size() for name, p in ddp.module.named_parameters()
            if p.requires_grad and name not in ignored and not getattr(p, "_ddp_ignored", False)}


def assign_buckets(gm: torch.fx.GraphModule, example_inputs: list[Any], sizes: dict[int, int],
                   first_cap: int, cap: int) -> dict[torch.fx.Node, int]:
    """Piece index (in forward order) of every computing node of ``gm``: walking the graph from
    its end, a new piece starts once the parameters read so far fill a bucket."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    param_bytes = {node: sizes[id(t)] for node, t in zip(placeholders, example_inputs)
                   if isinstance(t, torch.Tensor) and id(t) in sizes}
    bucket, filled, seen = 0, 0, set()
    reversed_index: dict[torch.fx.Node, int] = {}
    for node in reversed(gm.graph.nodes):
        if node.op in ("placeholder", "output"):
            continue
        if filled >= (first_cap if bucket == 0 else cap):
            bucket, filled = bucket + 1, 0
        for arg in node.all_input_nodes:
            if arg in param_bytes and arg not in seen:
                seen.add(arg)
                filled += param_bytes[arg]
        reversed_index[node] = bucket
    return {node: bucket - index for node, index in reversed_index.items()}


class _Piece(torch.nn.Module):
    """A compiled piece, callable where the split graph calls its submodule."""

    def __init__(self, compiled: Callable) -> None:
        super().__init__()
        self.compiled = compiled

    def forward(self, *args: Any) -> Any:
        return self.compiled(*args)


def _example(val: Any, real: dict[int, Any]) -> Any:
    """A real example for a piece's input: the graph's own input, else a tensor shaped as the
    fake value ``val`` (only its metadata matters to a backend)."""
    if id(val) in real:
        return real[id(val)]
    if not isinstance(val, torch.Tensor):
        return val
    out = torch.empty_strided(val.shape, val.stride(), dtype=val.dtype, device=val.device).zero_()
    return out.requires_grad_(val.requires_grad) if out.is_floating_point() or out.is_complex() else out


def compile_by_buckets(gm: torch.fx.GraphModule, example_inputs: list[Any], compile_fn: Compile,
                       ddp: torch.nn.Module) -> Callable:
    """``gm`` compiled as pieces of about one DDP bucket of parameters each (see the module's
    docstring); one piece, or a graph with symbolic sizes, is compiled whole."""
    sizes = ddp_parameters(ddp)
    first_cap, cap = bucket_caps(ddp)
    pieces = assign_buckets(gm, example_inputs, sizes, first_cap, cap) if sizes else {}
    if len(set(pieces.values())) <= 1 or is_dynamic(gm):
        return compile_fn(gm, example_inputs)
    try:
        split = split_module(gm, None, lambda node: pieces[node], keep_original_order=True)
    except Exception:  # a graph fx cannot split: compiled whole, correct but without the overlap
        log.info("graph not split at DDP's buckets", exc_info=True)
        return compile_fn(gm, example_inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    real = {id(n.meta.get("val")): t for n, t in zip(placeholders, example_inputs) if n.meta.get("val") is not None}
    names = [n.target for n in split.graph.nodes if n.op == "call_module"]
    vals = {name: [p.meta.get("val") for p in getattr(split, name).graph.nodes if p.op == "placeholder"]
            for name in names}
    if any(v is None for piece_vals in vals.values() for v in piece_vals):
        return compile_fn(gm, example_inputs)  # a value crossing pieces with no example
    for name in names:
        piece = getattr(split, name)
        setattr(split, name, _Piece(compile_fn(piece, [_example(v, real) for v in vals[name]])))
    log.info("graph split in %d pieces at DDP's buckets (first %d bytes, then %d)", len(names), first_cap, cap)
    split.recompile()
    return split.forward


__all__ = ["assign_buckets", "bucket_caps", "compile_by_buckets", "ddp_parameters"]
