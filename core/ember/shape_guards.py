"""Guards on symbolic sizes: the relations the ShapeEnv recorded, as checks of the entry's guard.

A capture with dynamic dimensions leaves them out of the tensor check (a size of -1 there, see
``GuardSet.tensor``). What the compiled code assumed about them (a branch ``x.size(0) > 4``,
duck sizing ``s0 == s1``, ``s0 % 8 == 0`` from a ``view``, sizes >= 2, strides of contiguous
inputs, a symbol a backend specialised) is in the capture's ShapeEnv. :func:`add_shape_guards`
asks it, through ``ShapeEnv.produce_guards``, for Python expressions over the symbolic inputs
and adds one check per relation, so that a failing relation is named in
``EMBER_LOGS=recompiles`` and ``explain``. It runs after the backend compiled, so relations the
backend added while tracing are included.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import torch
from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

from .capture.symbolic import InputToken
from .guards import Check, GuardSet

if TYPE_CHECKING:
    from .capture.graph import GraphBuilder

_TOKEN = re.compile(r"___in(\d+)___")


def _symbol_names(inputs: list[tuple[Any, Any]]) -> dict[str, str]:
    """Printed input expression (``___in0___.size()[1]``) -> the symbol it binds (``s41``), for
    the first input of each symbol (the others are related to it by duck sizing)."""
    names: dict[str, str] = {}
    for index, (_, value) in enumerate(inputs):
        token = f"___in{index}___"
        sizes = [(token, value)] if isinstance(value, torch.SymInt) else \
            [(f"{token}.size()[{dim}]", size) for dim, size in enumerate(value.shape)]
        for printed, size in sizes:
            symbol = str(size.node.expr) if isinstance(size, torch.SymInt) else None
            if symbol is not None and symbol not in names.values():  # where the symbol is bound
                names[printed] = symbol
    return names


_STATIC = re.compile(r"___in(\d+)___\.(size|stride)\(\)\[(\d+)\] == -?\d+|___in(\d+)___\.storage_offset\(\) == \d+")


def _checked_by_tensor_match(relation: str, inputs: list[tuple[Any, Any]]) -> bool:
    """``size()[i] == 3`` of a dimension that was never symbolic (or a static storage offset,
    which guards have never checked): left to the tensor check."""
    match = _STATIC.fullmatch(relation)
    if match is None:
        return False
    if match.group(4) is not None:
        value = inputs[int(match.group(4))][1]
        return isinstance(value, torch.Tensor) and type(value.storage_offset()) is int
    value = inputs[int(match.group(1))][1]
    if not isinstance(value, torch.Tensor):
        return False
    sizes = value.shape if match.group(2) == "size" else value.stride()
    return type(sizes[int(match.group(3))]) is int


def add_shape_guards(guards: GuardSet, graph: "GraphBuilder") -> None:
    """Append the ShapeEnv's relations over ``graph``'s symbolic inputs to ``guards``."""
    inputs = graph.symbolic_inputs
    if not inputs:
        return
    tokens = [InputToken(i) for i in range(len(inputs))]
    # ignore_static=False: a symbol the capture specialised (``range(x.size(0))``) must be
    # guarded here, since the tensor check leaves its dimension out; sizes that were static
    # from the start are the tensor check's, and are skipped
    relations = [r for r in graph.shape_env.produce_guards([v for _, v in inputs], tokens, ignore_static=False)
                 if not _checked_by_tensor_match(r, inputs)]
    symbols = _symbol_names(inputs)
    for relation in relations:
        for name in SYMPY_INTERP:
            if re.search(rf"\b{re.escape(name)}\b", relation):
                guards.consts.values[name] = SYMPY_INTERP[name]
        used = sorted({int(i) for i in _TOKEN.findall(relation)})
        slot = {index: position for position, index in enumerate(used)}
        template = _TOKEN.sub(lambda m: "{" + str(slot[int(m.group(1))]) + "}",
                              relation.replace("{", "{{").replace("}", "}}"))
        readable = _TOKEN.sub(lambda m: inputs[int(m.group(1))][0].describe(), relation)
        symbolic = relation
        for printed, symbol in sorted(symbols.items(), key=lambda kv: -len(kv[0])):
            symbolic = symbolic.replace(printed, symbol)
        symbolic = _TOKEN.sub(lambda m: inputs[int(m.group(1))][0].describe(), symbolic)
        guards.checks.append(Check(template, tuple(inputs[i][0] for i in used),
                                   f"shape relation {readable}  [{symbolic}]"))


__all__ = ["add_shape_guards"]
