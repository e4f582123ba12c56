"""Lowering tables, one module per kind: pointwise, reductions, views, indexing, pooling."""
from __future__ import annotations

from . import indexing_ops, pointwise, pooling, reductions, views  # noqa: F401  (fill the table)
from .registry import LOWERINGS, REALIZED_INPUTS, NotLowerable

__all__ = ["LOWERINGS", "REALIZED_INPUTS", "NotLowerable"]
