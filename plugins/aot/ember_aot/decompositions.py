"""Decomposition tables used when tracing graphs to aten level.

``default_decompositions()`` is the table ``aot_autograd`` uses when the caller passes none: it
rewrites the backward formulas of common activations into pointwise aten ops (so the min-cut
partitioner can see and recompute them) and a few composite forward ops into simpler ones.

Some decompositions are needed for *correctness*, not speed: ``aten.native_batch_norm`` mutates
its running statistics without declaring it in its schema, so functionalization would silently
drop the update. ``with_required`` adds those to any table a caller supplies.

Others are only right for inference: a decomposition replaces the op in the forward, but the
op's backward formula still reads the op's own saved outputs. Torch's decomposition of CPU
flash attention returns the attention weights where the op returns the logsumexp its backward
kernel reads, so a joint graph built with it computes wrong gradients. ``for_joint`` removes
those from a table before a forward+backward trace.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch._decomp import get_decompositions

aten = torch.ops.aten

DecompositionTable = dict[torch._ops.OperatorBase, Callable]

# Ops whose decomposition is required for functionalization to see their mutations.
_REQUIRED = [
    aten.native_batch_norm,
]

# Decompositions whose outputs differ from the op's where its backward reads them.
_INFERENCE_ONLY = [
    aten._scaled_dot_product_flash_attention_for_cpu.default,
]

_DEFAULT = [
    aten.gelu_backward,
    aten.leaky_relu_backward,
    aten.sigmoid_backward,
    aten.tanh_backward,
    aten.silu_backward,
    aten.elu_backward,
    aten.hardtanh_backward,
    aten.hardsigmoid_backward,
    aten.hardswish_backward,
    aten.softplus_backward,
    aten.masked_fill.Scalar,
    aten.masked_fill.Tensor,
    aten.elu,
    aten.leaky_relu,
    aten.hardtanh,
    aten.hardswish,
    aten.hardsigmoid,
    aten.silu,
    aten.conj_physical,
    aten.is_same_size,
]


def required_decompositions() -> DecompositionTable:
    """Decompositions every aten trace needs (ops that hide mutations from functionalization)."""
    return get_decompositions(_REQUIRED)


def default_decompositions() -> DecompositionTable:
    """The decomposition table ``aot_autograd`` uses by default (a fresh dict; callers may edit it)."""
    table = get_decompositions(_DEFAULT)
    table.update(required_decompositions())
    return table


def with_required(table: DecompositionTable | None) -> DecompositionTable:
    """``table`` (or the default table when None) plus the decompositions needed for correctness."""
    if table is None:
        return default_decompositions()
    merged = dict(table)
    for op, fn in required_decompositions().items():
        merged.setdefault(op, fn)
    return merged


def for_joint(table: DecompositionTable) -> DecompositionTable:
    """``table`` without the decompositions that are only right for inference (see above)."""
    return {op: fn for op, fn in table.items() if op not in _INFERENCE_ONLY}
