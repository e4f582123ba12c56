"""``flex_attention`` on the inductor, first step: the operator decomposed into its dense computation.

The captured graph holds ``torch.ops.higher_order.flex_attention`` with its score_mod and
mask_mod as subgraphs. Before the AOT trace, :func:`decompose_flex_attention` replaces each such
node by a call of :func:`dense_flex_attention`, torch's dense (math) implementation of the
operator: scores ``q @ k^T * scale`` over the whole ``[B, H, L, S]`` grid, the score_mod and the
mask_mod applied to every element through ``torch.vmap`` over the batch, head, query and key
indices, a safe softmax, ``@ v``. make_fx traces it into aten ops (vmap's batching rules turn
the scalar bodies into broadcast pointwise ops), so the score_mod and the mask fuse into the
softmax's kernels like any pointwise code, and autograd differentiates the dense ops for the
backward. The block mask's sparsity is not used (every block is computed, then masked): this is
torch's eager semantics at the cost of the full score matrix, not the block-sparse kernel
torch.compile generates.
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import torch
import torch.fx
from torch._higher_order_ops.flex_attention import flex_attention as flex_attention_op
from torch._higher_order_ops.flex_attention import math_attention


def dense_flex_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, score_mod: Callable,
                         block_mask: tuple, scale: float, kernel_options: dict[str, Any],
                         score_mod_other_buffers: tuple = (), mask_mod_other_buffers: tuple = ()) -> tuple:
    """The operator's ``(out, lse, max_scores)`` computed densely (``lse`` and ``max_scores`` in
    base 2, as the operator returns them); ``out`` laid out in the query's dimension order."""
    out, lse, max_scores = math_attention(query, key, value, score_mod, block_mask, scale, kernel_options,
                                          score_mod_other_buffers, mask_mod_other_buffers)
    order = sorted(range(query.dim() - 1), key=lambda d: -query.stride(d)) + [query.dim() - 1]
    if order != list(range(query.dim())):
        out = torch.empty_permuted(out.shape, order, dtype=out.dtype, device=out.device).copy_(out)
    return out, lse, max_scores


def decompose_flex_attention(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``gm``, or where it calls flex_attention a copy that calls :func:`dense_flex_attention` instead."""
    if not any(n.op == "call_function" and n.target is flex_attention_op for n in gm.graph.nodes):
        return gm
    graph = copy.deepcopy(gm.graph)
    for node in graph.nodes:
        if node.op == "call_function" and node.target is flex_attention_op:
            node.target = dense_flex_attention
    return torch.fx.GraphModule(gm, graph)


__all__ = ["decompose_flex_attention", "dense_flex_attention"]
