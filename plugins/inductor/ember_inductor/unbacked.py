"""Unbacked size symbols: sizes and scalars that only the data decides (``nonzero``, ``item()``).

An aten node that makes such a symbol carries ``meta["unbacked_bindings"]`` (make_fx records it):
symbol -> where it sits in the node's result (``.size()[0]`` of a ``nonzero``, the value itself
of a ``_local_scalar_dense``). The node runs as an extern kernel that binds those symbols in the
wrapper right after it runs (``u0 = r3.size()[0]``); from there the symbols are read like input
sizes: kernel arguments, allocation sizes. Such an extern is a barrier of the scheduler (as a
mutating one), so no kernel that reads the symbols moves before it. Heuristics that need a
number for an unbacked symbol read ``symbolic.UNBACKED_HINT``.
"""
from __future__ import annotations

from typing import Any

import sympy
from torch.fx.experimental.symbolic_shapes import CallMethodKey, ConvertIntKey, DivideByKey
from torch.utils import _pytree as pytree
from torch.utils._sympy.symbol import SymT, symbol_is_type

from .symbolic import SymbolicUnsupported

def bindings(node: Any) -> dict[sympy.Symbol, tuple]:
    """The unbacked symbols ``node`` defines, with their key paths into its result; a float one
    (a SymFloat read from data) cannot be a kernel's size argument: SymbolicUnsupported."""
    binds = node.meta.get("unbacked_bindings") or {}
    for symbol in binds:
        if not symbol_is_type(symbol, SymT.UNBACKED_INT):
            raise SymbolicUnsupported(f"{node.name} reads a float from tensor data ({symbol})")
    return dict(binds)


def path_source(value: str, path: tuple) -> str:
    """Python source reading the place ``path`` (a make_fx key path, or output positions) of the
    variable ``value``."""
    out = value
    for key in path:
        if isinstance(key, int):
            out = f"{out}[{key}]"
        elif isinstance(key, pytree.SequenceKey):
            out = f"{out}[{key.idx}]"
        elif isinstance(key, CallMethodKey):
            out = f"{out}.{key.name}()"
        elif isinstance(key, ConvertIntKey):
            out = f"int({out})"
        elif isinstance(key, DivideByKey):
            out = f"({out} // {key.divisor})"
        else:
            raise SymbolicUnsupported(f"an unbacked symbol at {key!r}")
    return out


__all__ = ["bindings", "path_source"]
