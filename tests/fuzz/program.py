"""A fuzz program: its inputs, its statements and its outputs, rendered as ``def f(...)`` source.

A ``Program`` is plain data (it prints as a Python literal, so a minimal reproduction pastes into
``test_regressions.py``). Its statements are the unit the shrinker removes; each is one
top-level statement of ``f``'s body (an ``if``/``for`` block included, as indented lines).
"""
from __future__ import annotations

import dataclasses
import linecache
import math
import re
from typing import Any, Callable, Iterator

import torch

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
    "int32": torch.int32, "bool": torch.bool,
}


@dataclasses.dataclass(frozen=True)
class Input:
    """A tensor argument (``dtype`` a key of ``DTYPES``) or a Python scalar (``dtype`` "int"/"float",
    its value in ``value``). ``transposed`` lays a tensor out with its last two dims swapped in memory."""

    name: str
    dtype: str
    shape: tuple[int, ...] = ()
    requires_grad: bool = False
    transposed: bool = False
    value: float = 0.0

    @property
    def is_tensor(self) -> bool:
        return self.dtype in DTYPES

    def make(self, seed: int) -> Any:
        """The argument's value, the same for the same seed."""
        if not self.is_tensor:
            return int(self.value) if self.dtype == "int" else float(self.value)
        gen = torch.Generator().manual_seed(seed)
        dtype = DTYPES[self.dtype]
        shape = list(self.shape)
        if self.transposed:
            shape[-1], shape[-2] = shape[-2], shape[-1]
        if dtype.is_floating_point:
            t = torch.randn(shape, generator=gen, dtype=dtype)
        elif dtype == torch.bool:
            t = torch.randint(0, 2, shape, generator=gen).bool()
        else:
            t = torch.randint(-5, 6, shape, generator=gen, dtype=dtype)
        if self.transposed:
            t = t.transpose(-1, -2)
        return t.requires_grad_(self.requires_grad)


@dataclasses.dataclass(frozen=True)
class Program:
    """``def f(<inputs>): <stmts>; return (<outputs>,)``; ``seed`` fixes the input values."""

    inputs: tuple[Input, ...]
    stmts: tuple[str, ...]
    outputs: tuple[str, ...]
    seed: int = 0

    #: the fields the shrinker reduces, with the length each keeps at least
    PARTS = (("outputs", 1), ("stmts", 0))

    @property
    def source(self) -> str:
        args = ", ".join(i.name for i in self.inputs)
        body = [("    " + line) for stmt in self.stmts for line in stmt.splitlines()]
        body.append(f"    return ({', '.join(self.outputs)},)")
        return f"def f({args}):\n" + "\n".join(body) + "\n"

    @property
    def requires_grad(self) -> bool:
        return any(i.requires_grad for i in self.inputs)

    def make_inputs(self, variant: int = 0) -> list[Any]:
        """Fresh argument values (new tensors each call, the same values for the same seed; an
        input's values depend on its name, so they stay when the shrinker drops another input).

        ``variant`` 1 draws other values (Python scalars too: guards on values), 2 also grows
        the largest dimension size by one across all inputs (guards on sizes, dynamic shapes)."""
        sizes = [s for i in self.inputs for s in i.shape]
        grow = max(sizes) if variant == 2 and sizes and max(sizes) > 1 else None
        out = []
        for inp in self.inputs:
            if grow is not None:
                inp = dataclasses.replace(inp, shape=tuple(s + 1 if s == grow else s for s in inp.shape))
            if variant and not inp.is_tensor:
                inp = dataclasses.replace(inp, value=inp.value + 1 if inp.dtype == "int" else -2 * inp.value)
            out.append(inp.make(self.seed * 1000 + int(inp.name[1:]) + 100 * variant))
        return out

    def simplifications(self) -> Iterator["Program"]:
        """Simpler variants for the shrinker: an input without ``requires_grad`` or its
        transposed layout; the inputs that no statement reads dropped."""
        for k, inp in enumerate(self.inputs):
            for field in ("requires_grad", "transposed"):
                if getattr(inp, field):
                    inputs = list(self.inputs)
                    inputs[k] = dataclasses.replace(inp, **{field: False})
                    yield dataclasses.replace(self, inputs=tuple(inputs))
        used = set(re.findall(r"\w+", "\n".join(self.stmts + self.outputs)))
        if any(i.name not in used for i in self.inputs):
            yield dataclasses.replace(self, inputs=tuple(i for i in self.inputs if i.name in used))

    def function(self) -> Callable[..., Any]:
        """A new function object for ``source`` (a fresh ember cache each time); its source lines
        are registered with ``linecache`` so that break reasons show them."""
        filename = f"<fuzz-{abs(hash(self))}>"
        source = self.source
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace: dict[str, Any] = {"torch": torch, "F": torch.nn.functional, "math": math}
        exec(compile(source, filename, "exec"), namespace)
        return namespace["f"]
