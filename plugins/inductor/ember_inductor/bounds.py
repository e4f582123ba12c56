"""Bounds of indirect indices: what a lowering tells the kernel about each data-dependent index.

``ops.indirect_indexing(value, bound)`` takes an :class:`IndexBound`: the size of the indexed
dimension (a sympy size expression of the IR, printed like every other size), whether the op
wraps negative indices as eager does (advanced indexing ``x[idx]``) or rejects them (gather,
index_select, embedding), the exception eager raises for an index out of range, and whether the
check is needed at all: :func:`known_range` proves the range of an index computed from the loop
variables (an ``arange``), for which no check is emitted.

C++ kernels have no libtorch: a failed check records the first offending value, its bound and
an error code (:func:`error_code`) in the library and goes on with an index in range; the kernel
returns nonzero and its caller raises :func:`index_error` before any output is used.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import sympy
import torch

from .index_functions import is_nonneg, upper_bound
from .indexing import make_vars
from .virtualized import set_handler

#: The exceptions eager raises for an index out of range, by error code.
ERRORS: tuple[type[Exception], ...] = (RuntimeError, IndexError)


@dataclasses.dataclass(frozen=True)
class IndexBound:
    size: Any  # sympy size expression of the indexed dimension
    dim: int  # the dimension, for the message
    error: type[Exception] = IndexError
    wrap_negative: bool = False  # -1 is the last element (advanced indexing)
    check: bool = True  # False where the index is provably in range


def error_code(bound: IndexBound) -> int:
    """The integer a kernel records for a failure of ``bound``: dimension and exception."""
    return bound.dim * len(ERRORS) + ERRORS.index(bound.error)


def index_error(value: int, size: int, code: int) -> Exception:
    """The exception eager raises for ``value`` out of range (``code`` from :func:`error_code`)."""
    dim, kind = divmod(code, len(ERRORS))
    return ERRORS[kind](f"index {value} is out of bounds for dimension {dim} with size {size}")


def make_bound(size: Any, dim: int, index_loader: Callable, index_size: Sequence,
               error: type[Exception] = IndexError, wrap_negative: bool = False) -> IndexBound:
    """The bound of indices read by ``index_loader`` over ``index_size`` into a dimension of
    ``size``; unchecked (and not wrapped) where :func:`known_range` proves them in range."""
    rng = known_range(index_loader, index_size)
    size = sympy.sympify(size)
    if rng is not None and rng[0] >= 0 and (sympy.sympify(rng[1]) < size) is sympy.true:
        return IndexBound(size, dim, error, False, False)
    return IndexBound(size, dim, error, wrap_negative, True)


def known_range(loader: Callable, size: Sequence) -> tuple[int, int] | None:
    """``(lo, hi)`` holding every value ``loader`` computes over ``size`` when its body is
    arithmetic on the loop variables and constants (an ``arange``); None when unknown."""
    idx = make_vars("i", len(size))
    handler = _RangeHandler(dict(zip(idx, size)))
    with set_handler(handler):
        try:
            return loader(idx)
        except _Unknown:
            return None


class _Unknown(Exception):
    pass


class _RangeHandler:
    """Ops handler whose values are integer intervals ``(lo, hi)``; any other op is unknown."""

    def __init__(self, ranges: dict) -> None:
        self.ranges = ranges

    def index_expr(self, expr: Any, dtype: torch.dtype) -> tuple[int, int]:
        expr = sympy.sympify(expr)
        hi = upper_bound(expr, self.ranges) if is_nonneg(expr) else None
        if hi is None or dtype.is_floating_point:
            raise _Unknown
        return (0, hi)

    def constant(self, value: Any, dtype: torch.dtype) -> tuple[int, int]:
        if dtype.is_floating_point or isinstance(value, float):
            raise _Unknown
        return (int(value), int(value))

    def to_dtype(self, x: tuple[int, int], dtype: torch.dtype, *args: Any) -> tuple[int, int]:
        if dtype.is_floating_point or dtype == torch.bool or torch.iinfo(dtype).bits < 32:
            raise _Unknown
        return x

    def add(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])

    def __getattr__(self, name: str) -> Any:
        def unknown(*args: Any, **kwargs: Any) -> Any:
            raise _Unknown
        return unknown
