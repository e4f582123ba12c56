"""Guards on symbolic sizes: the relations the ShapeEnv recorded, as checks of the entry's guard.

A capture with dynamic dimensions leaves them out of the tensor check (a size of -1 there, see
``GuardSet.tensor``). What the compiled code assumed about them (a branch ``x.size(0) > 4``,
duck sizing ``s0 == s1``, ``s0 % 8 == 0`` from a ``view``, sizes >= 2, strides of contiguous
inputs, a symbol a backend specialised) is in the capture's ShapeEnv. :func:`add_shape_guards`
asks it, through ``ShapeEnv.produce_guards``, for Python expressions over the symbolic inputs
and adds one check per relation, so that a failing relation is named in
``EMBER_LOGS=recompiles`` and ``explain``. It runs after the backend compiled, so relations the
backend added while tracing are included. A relation that is linear in tensor sizes, strides and
storage offsets is also parsed (:mod:`ember.shape_relations`) into the form the C++ tensor
check evaluates without reading a size into Python; the others are Python checks.
"""
from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

import sympy
import torch
from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

from .capture.sources import Constants, Source
from .capture.symbolic import InputToken
from .guards import Check, GuardSet
from .shape_relations import parse

if TYPE_CHECKING:
    from .capture.graph import GraphBuilder

_TOKEN = re.compile(r"___in(\d+)___")
_READ = re.compile(r"___in(\d+)___(?:\.(size|stride)\(\)\[(\d+)\]|\.(storage_offset)\(\))?")


@dataclasses.dataclass(frozen=True)
class TensorPropertySource(Source):
    """``base.size()[i]``, ``base.stride()[i]`` or ``base.storage_offset()``: a guard local."""

    base: Source
    prop: str
    index: int = 0

    def apply(self, base_expr: str, consts: Constants) -> str:
        if self.prop == "storage_offset":
            return f"{base_expr}.storage_offset()"
        return f"{base_expr}.{self.prop}()[{self.index}]"

    def describe(self) -> str:
        return self.apply(self.base.describe(), Constants())


def _symbol_names(inputs: list[tuple[Any, Any]]) -> dict[str, str]:
    """Printed input expression (``___in0___.size()[1]``) -> the symbol it binds (``s41``), for
    the first input of each symbol (the others are related to it by duck sizing)."""
    names: dict[str, str] = {}
    for index, (_, value) in enumerate(inputs):
        token = f"___in{index}___"
        sizes = [(token, value)] if isinstance(value, torch.SymInt) else \
            [(f"{token}.size()[{dim}]", size) for dim, size in enumerate(value.shape)]
        for printed, size in sizes:
            expr = size.node.expr if isinstance(size, torch.SymInt) else None
            symbol = str(expr) if isinstance(expr, sympy.Symbol) else None  # not a specialised one
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
        # each size read once per guard call: a local of the guard, shared by every relation
        sources: list[Source] = []

        def slot(match: re.Match) -> str:
            base = inputs[int(match.group(1))][0]
            prop = match.group(2) or match.group(4)
            source = base if prop is None else TensorPropertySource(base, prop, int(match.group(3) or 0))
            if source not in sources:
                sources.append(source)
            return "{" + str(sources.index(source)) + "}"

        template = _READ.sub(slot, relation.replace("{", "{{").replace("}", "}}"))
        readable = _TOKEN.sub(lambda m: inputs[int(m.group(1))][0].describe(), relation)
        symbolic = relation
        for printed, symbol in sorted(symbols.items(), key=lambda kv: -len(kv[0])):
            symbolic = symbolic.replace(printed, symbol)
        symbolic = _TOKEN.sub(lambda m: inputs[int(m.group(1))][0].describe(), symbolic)
        shown = f"shape relation {readable}" + (f"  [{symbolic}]" if symbolic != readable else "")
        reads = [(s.base, s.prop, s.index) if isinstance(s, TensorPropertySource) else None for s in sources]
        guards.checks.append(Check(template, tuple(sources), shown, relations=parse(template, reads)))


__all__ = ["add_shape_guards"]
