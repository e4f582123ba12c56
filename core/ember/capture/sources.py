"""Sources: where a value the capture read came from, as a Python expression over the frame.

Every input the interpreter reads carries a source. Guards and the generated entry functions
are Python source code built from these expressions: ``L['x']`` is a local of the compiled
frame, ``G['cfg']`` a global, and chains such as ``L['self']._modules['lin']._parameters['weight']``
reach into modules through their dictionaries (faster than ``nn.Module.__getattr__``).
Objects a guard needs (a globals dict, a closure cell) are referenced by name through a
:class:`Constants` table that the generated code receives as its namespace.
"""
from __future__ import annotations

import dataclasses
import keyword
import math
from typing import Any

_LITERAL_TYPES = (str, int, bool, type(None), bytes)


def literal(value: Any) -> str | None:
    """Python source that evaluates back to a value equal to ``value``, of the same types, or
    None when there is none: ``float('nan')``, a class (``<class 'bool'>``), an object, a tuple
    holding one. Generated code writes such values through :meth:`Constants.ref` instead."""
    kind = type(value)
    try:
        if kind in _LITERAL_TYPES or kind is float and math.isfinite(value):
            return repr(value)
    except ValueError:  # an int too long to print
        return None
    if kind is tuple:
        items = [literal(v) for v in value]
        return None if None in items else "(" + "".join(f"{i}, " for i in items) + ")"
    return None


class Constants:
    """Names for Python objects referenced from generated code."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self._by_id: dict[int, str] = {}

    def name(self, value: Any, hint: str = "c") -> str:
        key = id(value)
        if key in self._by_id:
            return self._by_id[key]
        name = f"___{hint}{len(self.values)}"
        self.values[name] = value
        self._by_id[key] = name
        return name

    def ref(self, value: Any, hint: str = "c") -> str:
        """Source text for ``value`` in generated code: its literal, else a name for it."""
        text = literal(value)
        return text if text is not None else self.name(value, hint)


class Source:
    """Base class: a value reachable from the frame's locals or from a fixed object.

    Sources with a ``base`` build their expression from the base's with :meth:`apply`, so that
    generated code can compute a shared base once and reuse it.
    """

    def expr(self, consts: Constants) -> str:
        base = getattr(self, "base", None)
        if base is None:
            raise NotImplementedError
        return self.apply(base.expr(consts), consts)

    def apply(self, base_expr: str, consts: Constants) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        """Human-readable form for logs (no constant-table names)."""
        return self.expr(Constants())


@dataclasses.dataclass(frozen=True)
class LocalSource(Source):
    name: str

    def expr(self, consts: Constants) -> str:
        return f"L[{self.name!r}]"


@dataclasses.dataclass(frozen=True)
class GlobalSource(Source):
    """A global of some function; ``globals_id`` tells which module dict it lives in."""

    globals_dict: Any = dataclasses.field(compare=False, hash=False)
    name: str = ""
    globals_id: int = 0

    def expr(self, consts: Constants) -> str:
        return f"{consts.name(self.globals_dict, 'g')}[{self.name!r}]"

    def describe(self) -> str:
        return f"G[{self.name!r}]"


@dataclasses.dataclass(frozen=True)
class CellSource(Source):
    """The contents of a closure cell of a function that exists outside the capture."""

    cell: Any = dataclasses.field(compare=False, hash=False)
    name: str = ""
    cell_id: int = 0

    def expr(self, consts: Constants) -> str:
        return f"{consts.name(self.cell, 'cell')}.cell_contents"

    def describe(self) -> str:
        return f"C[{self.name!r}]"


@dataclasses.dataclass(frozen=True)
class ConstantSource(Source):
    """A fixed object (a module, a function) that needs no reading from the frame."""

    value: Any = dataclasses.field(compare=False, hash=False)
    value_id: int = 0

    def expr(self, consts: Constants) -> str:
        return consts.name(self.value, "k")

    def describe(self) -> str:  # names the object: two guards on two objects stay two guards
        name = getattr(self.value, "__qualname__", None) or getattr(self.value, "__name__", None) or ""
        return f"<{type(self.value).__name__} {name} at {self.value_id:#x}>".replace("  ", " ")


@dataclasses.dataclass(frozen=True)
class AttrSource(Source):
    base: Source
    attr: str

    def apply(self, base_expr: str, consts: Constants) -> str:
        if self.attr.isidentifier() and not keyword.iskeyword(self.attr):
            return f"{base_expr}.{self.attr}"
        return f"getattr({base_expr}, {consts.ref(self.attr)})"  # set through setattr/getattr

    def describe(self) -> str:
        return f"{self.base.describe()}.{self.attr}"


@dataclasses.dataclass(frozen=True)
class DictEntrySource(Source):
    """``base.<table>[key]``: a module's ``_parameters``/``_buffers``/``_modules`` entry."""

    base: Source
    table: str
    key: str

    def apply(self, base_expr: str, consts: Constants) -> str:
        return f"{base_expr}.{self.table}[{consts.ref(self.key, 'key')}]"

    def describe(self) -> str:
        return f"{self.base.describe()}.{self.key}"


@dataclasses.dataclass(frozen=True)
class ItemSource(Source):
    """``base[index]`` for tuples, lists and dicts with constant keys."""

    base: Source
    index: Any

    def apply(self, base_expr: str, consts: Constants) -> str:
        return f"{base_expr}[{consts.ref(self.index, 'key')}]"

    def describe(self) -> str:
        return f"{self.base.describe()}[{self.index!r}]"


def global_source(globals_dict: dict, name: str) -> GlobalSource:
    return GlobalSource(globals_dict, name, id(globals_dict))


def cell_source(cell: Any, name: str) -> CellSource:
    return CellSource(cell, name, id(cell))


def constant_source(value: Any) -> ConstantSource:
    return ConstantSource(value, id(value))


@dataclasses.dataclass(frozen=True)
class NumpyTensorSource(Source):
    """``torch.from_numpy(base)``: a numpy array entering the graph as a tensor input."""

    base: Source

    def apply(self, base_expr: str, consts: Constants) -> str:
        from .numpy_runtime import array_tensor

        return f"{consts.name(array_tensor, 'f')}({base_expr})"

    def describe(self) -> str:
        return f"from_numpy({self.base.describe()})"


@dataclasses.dataclass(frozen=True)
class CallSource(Source):
    """``fn(*args)`` with constant arguments: a question about global state
    (``torch.get_default_dtype()``) that the guard asks again."""

    fn: Any = dataclasses.field(compare=False, hash=False)
    args: tuple = ()
    fn_id: int = 0

    def expr(self, consts: Constants) -> str:
        return f"{consts.name(self.fn, 'f')}({', '.join(consts.ref(a, 'a') for a in self.args)})"

    def describe(self) -> str:
        name = getattr(self.fn, "__qualname__", None) or repr(self.fn)
        return f"{getattr(self.fn, '__module__', None) or ''}.{name}({', '.join(map(repr, self.args))})".lstrip(".")


def call_source(fn: Any, args: tuple) -> CallSource:
    return CallSource(fn, args, id(fn))


@dataclasses.dataclass(frozen=True)
class MethodCallSource(Source):
    """``method(base, *args)`` for read-only builtin methods such as ``dict.get`` (called through
    the builtin itself, so a subclass's override is not what the guard re-runs)."""

    base: Source
    method: Any = dataclasses.field(compare=False, hash=False)
    args: tuple = ()
    method_name: str = ""

    def apply(self, base_expr: str, consts: Constants) -> str:
        args = "".join(f", {consts.ref(a, 'a')}" for a in self.args)
        return f"{consts.name(self.method, 'm')}({base_expr}{args})"

    def describe(self) -> str:
        args = ", ".join(repr(a) for a in self.args)
        return f"{self.base.describe()}.{self.method_name}({args})"
