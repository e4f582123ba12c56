"""The decomposition table the inductor backend asks ember_aot (or make_fx) to apply.

Core aten decompositions, plus composite ops that become simple loops (layer norm, batch norm,
their backwards, softmax backward, ...), minus ops that have a direct lowering (softmax, gelu)
or run better as one aten kernel; foreach ops as one op per tensor (``foreach.py``).
"""
from __future__ import annotations

import functools
from typing import Any

import torch
from torch._decomp import core_aten_decompositions, get_decompositions

from .foreach import foreach_decompositions

aten = torch.ops.aten

EXTRA = [
    aten.native_layer_norm, aten.native_layer_norm_backward, aten._softmax_backward_data,
    aten._log_softmax_backward_data, aten.gelu_backward, aten.native_batch_norm,
    aten.native_batch_norm_backward, aten._native_batch_norm_legit_functional,
    aten._native_batch_norm_legit_no_training, aten._native_batch_norm_legit,
    aten.nll_loss_forward, aten.nll_loss_backward, aten.silu, aten.silu_backward,
    aten.tanh_backward, aten.sigmoid_backward, aten.threshold_backward, aten.native_group_norm,
    aten.mse_loss, aten.hardtanh, aten.leaky_relu, aten.native_dropout, aten.std_mean, aten.t, aten.rsub, aten.addcmul, aten.addcdiv, aten.lerp, aten.logsumexp,
    aten.elu, aten.elu_backward, aten.linalg_vector_norm,
]
KEEP = [aten._softmax.default, aten._log_softmax.default, aten.gelu.default, aten.addmm.default,
        aten.embedding.default, aten.embedding_dense_backward.default]


def _var_mean(x: torch.Tensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> tuple:
    """var_mean as two aten reductions (torch's own decomposition goes through prims)."""
    return (aten.var.correction(x, dim, correction=correction, keepdim=keepdim),
            aten.mean.dim(x, dim, keepdim) if dim is not None else aten.mean.dim(x, list(range(x.dim())), keepdim))


def _contiguous_output(decomposition: Any) -> Any:
    """``decomposition`` of CPU flash attention with its output contiguous, as the kernel and its
    meta return it: torch's lays it out ``[L, N, H, E]``, where a view of the program on the result
    fails (GPT-2's ``x.view(-1, d)`` after ``transpose(1, 2).reshape``) that eager runs."""
    def flash_attention_for_cpu(*args: Any, **kwargs: Any) -> tuple:
        out, *rest = decomposition(*args, **kwargs)
        return (out.contiguous(), *rest)
    return flash_attention_for_cpu


@functools.lru_cache(None)
def _table(foreach_per_tensor: bool) -> dict[Any, Any]:
    table = dict(core_aten_decompositions())
    flash = aten._scaled_dot_product_flash_attention_for_cpu.default
    if flash in table:
        table[flash] = _contiguous_output(table[flash])
    table.update(get_decompositions(EXTRA))
    for op in KEEP:
        table.pop(op, None)
    table[aten.var_mean.correction] = _var_mean
    table[aten.lift_fresh_copy.default] = aten.clone.default  # a constant tensor made in the graph
    if foreach_per_tensor:
        table.update(foreach_decompositions())
    return table


def decompositions(foreach_per_tensor: bool = True) -> dict[Any, Any]:
    """A fresh copy of the table (callers may extend it). ``foreach_per_tensor``: foreach ops
    as one op per tensor, for the CPU's loops. On CUDA they stay aten's multi-tensor kernels: a
    kernel per parameter is a launch per parameter (AdamW over 100 parameters on the H200: 13.6 ms
    a step against eager foreach's 3.9), until the inductor fuses them horizontally."""
    return dict(_table(foreach_per_tensor))
