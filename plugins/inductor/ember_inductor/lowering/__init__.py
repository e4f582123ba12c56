"""Lowering tables, one module per kind: pointwise, reductions, views, indexing."""
from __future__ import annotations

from . import indexing_ops, pointwise, reductions, views  # noqa: F401  (fill the table)
from .registry import LOWERINGS, NotLowerable

__all__ = ["LOWERINGS", "NotLowerable"]
