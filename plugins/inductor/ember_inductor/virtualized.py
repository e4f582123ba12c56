"""The ``ops`` namespace of the define-by-run IR.

A buffer's body is a Python function of its index that calls ``ops.<name>(...)``. What those calls
do depends on the handler installed with :func:`set_handler`: analysis (which buffers are read
and at which index), counting, or code generation (C++ today, Triton later).

Vocabulary: load, store, store_reduction, atomic_add (an accumulating store), reduction, constant, index_expr, to_dtype, where,
masked, and math/comparison/logical functions (see :data:`POINTWISE_OPS`).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import sympy

#: Elementwise operations every handler understands (besides the structural ones).
UNARY_OPS = (
    "neg abs exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh "
    "tanh asinh acosh atanh erf erfc sigmoid relu floor ceil trunc round sign reciprocal "
    "logical_not bitwise_not isnan isinf square"
).split()
BINARY_OPS = (
    "add sub mul truediv floordiv truncdiv remainder fmod pow maximum minimum atan2 eq ne lt le gt ge "
    "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor "
    "bitwise_left_shift bitwise_right_shift copysign hypot"
).split()
POINTWISE_OPS = frozenset(UNARY_OPS + BINARY_OPS)
STRUCTURAL_OPS = frozenset(
    "load store store_reduction atomic_add reduction constant index_expr to_dtype where masked indirect_indexing".split()
)

_state = threading.local()


class _Ops:
    """``ops.add(a, b)`` forwards to the handler installed for the current thread."""

    def __getattr__(self, name: str) -> Any:
        handler = getattr(_state, "handler", None)
        if handler is None:
            raise RuntimeError("no ops handler installed")
        return getattr(handler, name)


ops = _Ops()


@contextlib.contextmanager
def set_handler(handler: Any) -> Iterator[Any]:
    prior = getattr(_state, "handler", None)
    _state.handler = handler
    try:
        yield handler
    finally:
        _state.handler = prior


class RecordingHandler:
    """Analysis handler: records loads and stores, counts operations; values are dummies."""

    def __init__(self) -> None:
        self.loads: list[tuple[str, Any]] = []
        self.stores: list[tuple[str, Any]] = []
        self.num_ops = 0
        self.reduction_types: list[str] = []
        self.indirect = 0

    def load(self, name: str, index: Any) -> str:
        self.loads.append((name, index))
        return "v"

    def store(self, name: str, index: Any, value: Any) -> None:
        self.stores.append((name, index))

    def store_reduction(self, name: str, index: Any, value: Any) -> None:
        self.stores.append((name, index))

    def atomic_add(self, name: str, index: Any, value: Any) -> None:
        self.stores.append((name, index))

    def reduction(self, dtype: Any, src_dtype: Any, reduction_type: str, value: Any) -> str:
        self.reduction_types.append(reduction_type)
        return "r"

    def indirect_indexing(self, value: Any, size: Any) -> Any:
        self.num_ops += 1
        self.indirect += 1
        return sympy.Symbol(f"ind{self.indirect}", integer=True)

    def masked(self, mask: Any, body: Any, other: Any) -> str:
        self.num_ops += 1
        body()
        return "v"

    def __getattr__(self, name: str) -> Any:
        if name in POINTWISE_OPS or name in STRUCTURAL_OPS:
            def op(*args: Any, **kwargs: Any) -> str:
                self.num_ops += 1
                return "v"
            return op
        raise AttributeError(name)
