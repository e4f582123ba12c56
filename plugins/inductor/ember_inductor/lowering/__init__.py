"""Lowering tables, one module per kind: pointwise, reductions, views, indexing, scatter, pooling."""
from __future__ import annotations

from . import indexing_ops, pointwise, pooling, reductions, scatter, views  # noqa: F401  (fill the table)
from .registry import LOWERINGS, REALIZED_INPUTS, NotLowerable

__all__ = ["LOWERINGS", "REALIZED_INPUTS", "NotLowerable"]
