"""Symbolic values on the interpreter's stack and in its locals.

- :class:`TensorVar`: a tensor produced or read by the graph (an fx node plus a fake tensor).
- :class:`ConstVar`: any Python value known at capture time (numbers, strings, modules,
  functions, classes, dtypes...). Operations on constants are evaluated for real.
- :class:`TupleVar`, :class:`ListVar`, :class:`DictVar`: containers that may hold tensors.
- :class:`SetVar`: a set made inside the captured code (its elements are Python values).
- :class:`UserDictVar`, :class:`UserSetVar`: an instance of a Python subclass of dict or set.
- :class:`DictViewVar`: ``d.keys()``, ``d.values()``, ``d.items()``: live, read from ``d`` at each use.
- :class:`EnvironVar`: ``os.environ``, whose reads are guarded one by one (``environ.py``).
- :class:`FunctionVar`: a function created inside the captured code (``MAKE_FUNCTION``).
- :class:`BoundMethodVar`: ``obj.method`` where the method is Python code to inline.
- :class:`IteratorVar`: the state of a ``for`` loop over a materialised sequence.
- :class:`GeneratorVar`: a generator made in the captured code, its body a suspended frame
  resumed one item at a time (``generators.py``).
- :class:`CellVar`: a closure cell, created inside the captured code or a real one.
- :data:`NULL`: the NULL marker pushed before callables (``PUSH_NULL`` / ``LOAD_GLOBAL``).

Every value may carry the :class:`~ember.capture.sources.Source` it was read from.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Any

import torch

from .sources import Source


def is_numpy_scalar(value: Any) -> bool:
    """``np.float32(2.5)``, ``np.int64(3)``, ``np.bool_(True)``: an immutable number (torch takes it
    as one; ``torch.tensor`` keeps its dtype), compared by type and value like a Python number."""
    return type(value).__module__ == "numpy" and type(value).__name__ != "ndarray" and getattr(value, "shape", None) == ()


class Var:
    source: Source | None = None

    def python_type(self) -> type:
        raise NotImplementedError


@dataclasses.dataclass(eq=False)
class ConstVar(Var):
    value: Any
    source: Source | None = None

    def python_type(self) -> type:
        return type(self.value)

    def __repr__(self) -> str:
        return f"ConstVar({self.value!r})"


@dataclasses.dataclass(eq=False)
class TensorVar(Var):
    node: torch.fx.Node
    fake: torch.Tensor
    source: Source | None = None
    cls: type = torch.Tensor  # the real class of an input (e.g. nn.Parameter)

    def python_type(self) -> type:
        return self.cls

    def __repr__(self) -> str:
        return f"TensorVar({self.node.name}, {tuple(self.fake.shape)}, {self.fake.dtype})"


@dataclasses.dataclass(eq=False)
class TupleVar(Var):
    items: list[Var]
    source: Source | None = None
    tuple_type: type = tuple  # tuple, torch.Size, or a namedtuple class

    def python_type(self) -> type:
        return self.tuple_type


@dataclasses.dataclass(eq=False)
class ListVar(Var):
    items: list[Var]
    source: Source | None = None

    def python_type(self) -> type:
        return list


@dataclasses.dataclass(eq=False)
class DictVar(Var):
    items: dict[Any, Var]
    source: Source | None = None
    dict_type: type = dict
    default_factory: Any = None  # a defaultdict's (a Var)

    def python_type(self) -> type:
        return self.dict_type


class Identity:
    """A set element that hashes by the identity of the object ``var`` stands for (``set_keys.py``)."""

    __slots__ = ("var", "key")

    def __init__(self, var: Var) -> None:
        self.var = var
        self.key = var.node if isinstance(var, TensorVar) else var

    def __hash__(self) -> int:
        return id(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.key is self.key

    def __repr__(self) -> str:
        return f"Identity({self.var!r})"


@dataclasses.dataclass(eq=False)
class SetVar(Var):
    """A set built by the captured code (``{a, b}``, ``set()``, ``s | t``...): it exists only in
    the capture, so it is mutated here and rebuilt in the output. Sets read from outside stay
    :class:`ConstVar` (mutating one breaks the graph)."""

    items: set  # Python values, and set_keys.Identity keys for tensors and objects
    set_type: type = set  # or frozenset

    def python_type(self) -> type:
        return self.set_type


class _Undone:
    """What the capture's undo log keeps of a container subclass's instance: items and attributes."""

    items: Any
    attrs: dict

    def save(self) -> tuple:
        return self.items.copy(), self.attrs.copy()

    def restore(self, saved: tuple) -> None:
        self.items, self.attrs = saved[0].copy(), saved[1].copy()


@dataclasses.dataclass(eq=False)
class UserDictVar(_Undone, DictVar):
    """An instance of a Python subclass of dict, OrderedDict or defaultdict (``dict_type``): the
    builtin dict's items plus the instance's attributes (``attrs``). ``real`` is the object an
    input was read from (its attributes are read from it, through sources); None for one made by
    the captured code. Its class's Python methods are inlined, the rest are dict's
    (``user_containers``)."""

    attrs: dict[str, Var] = dataclasses.field(default_factory=dict)
    real: Any = None


@dataclasses.dataclass(eq=False)
class UserSetVar(_Undone, SetVar):
    """An instance of a Python subclass of set or frozenset (``set_type``), as :class:`UserDictVar`."""

    source: Source | None = None
    attrs: dict[str, Var] = dataclasses.field(default_factory=dict)
    real: Any = None


class InstanceDictVar(DictVar):
    """``obj.__dict__`` of an object the capture built (a :class:`UserDictVar`, a plain object): a dict
    whose items are the object's own attribute table (``owner.<table>``), so that stores through
    either show in both, and the undo log restores them as one."""

    def __init__(self, owner: Var, table: str) -> None:  # no dataclass fields: ``items`` is the owner's
        self.owner = owner
        self.table = table
        self.source = None
        self.dict_type = dict
        self.default_factory = None

    @property  # type: ignore[override]
    def items(self) -> dict:
        return getattr(self.owner, self.table)

    @items.setter
    def items(self, value: dict) -> None:
        setattr(self.owner, self.table, value)


@dataclasses.dataclass(eq=False)
class DictViewVar(Var):
    """``mapping.keys()`` (``kind``, or ``values``/``items``): a view, so every use reads the
    mapping as it is then (a DictVar, or a dict inside an object built over fake tensors)."""

    mapping: Var
    kind: str

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())


class EnvironVar(Var):
    """``os.environ``, read through ``source``."""

    def __init__(self, source: Source) -> None:
        self.source = source

    def python_type(self) -> type:
        import os

        return type(os.environ)


@dataclasses.dataclass(eq=False)
class CellVar(Var):
    """A closure cell. One made by the captured code (``MAKE_CELL``) has no ``real`` cell; a real
    one (a closure of a function from outside, or a resume function's cell argument) has its
    ``source`` (the cell object) and its contents read on first use (``read``)."""

    contents: Var | None = None
    real: Any = None
    source: Source | None = None
    read: bool = True


@dataclasses.dataclass(eq=False)
class FunctionVar(Var):
    code: types.CodeType
    globals: dict
    name: str
    defaults: tuple[Var, ...] = ()
    kwdefaults: dict[str, Var] = dataclasses.field(default_factory=dict)
    closure: tuple[CellVar, ...] = ()
    #: what the captured code stored on it: ``__dict__`` entries, and ``__name__``-like slots
    attrs: dict[str, Var] = dataclasses.field(default_factory=dict)
    slots: dict[str, Var] = dataclasses.field(default_factory=dict)

    def python_type(self) -> type:
        return types.FunctionType


@dataclasses.dataclass(eq=False)
class BoundMethodVar(Var):
    func: Var  # ConstVar(python function) or FunctionVar
    self_var: Var

    def python_type(self) -> type:
        return types.MethodType


@dataclasses.dataclass(eq=False)
class IteratorVar(Var):
    items: list[Var]
    index: int = 0
    result: Var = dataclasses.field(default_factory=lambda: ConstVar(None))  # what `yield from` evaluates to
    sized: bool = False  # over a builtin container: it has __length_hint__ (the items left)

    def python_type(self) -> type:
        return type(iter(()))

    def next(self) -> Var | None:
        if self.index >= len(self.items):
            return None
        item = self.items[self.index]
        self.index += 1
        return item


class GeneratorVar(Var):
    """A generator made by calling a generator function (or a generator expression) in the captured
    code: ``frame`` runs its body, suspended at a ``yield`` between items (``generators.py``).
    ``fn``, ``args`` and ``kwargs``: the call that made it, to make it again after the graph
    while it has not started. ``status``: "created", "suspended", "running" or "done"."""

    lazy = True

    def __init__(self, frame: Any, fn: Var, args: list[Var], kwargs: dict[str, Var]) -> None:
        self.frame = frame
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.status = "created"
        self.result: Var = ConstVar(None)  # what it returned, once done
        self.handled: Any = None  # the exception its body was handling when it suspended
        self.stale = False  # its frame ran on in an instruction that was undone (a graph break)
        self.forced: list[Var] | None = None  # the items it had left, run ahead for the output
        self.made_at: int | None = None  # the offset of the outermost code's CALL that made it

    def python_type(self) -> type:
        return types.GeneratorType

    def save(self) -> tuple[str, Var]:
        return self.status, self.result

    def restore(self, saved: tuple[str, Var]) -> None:
        self.status, self.result = saved
        self.stale = True  # its frame cannot be put back

    def __repr__(self) -> str:
        return f"GeneratorVar({self.frame.code.co_name}, {self.status})"


@dataclasses.dataclass(eq=False)
class PartialVar(Var):
    """``functools.partial(fn, *args, **kwargs)`` made inside the captured code."""

    func: Var
    args: list[Var]
    kwargs: dict[str, Var]

    def python_type(self) -> type:
        import functools

        return functools.partial


class Suspended(Var):
    """What ``run()`` of a suspending generator frame returns at a ``yield``: the value yielded."""

    def __init__(self, value: Var) -> None:
        self.value = value


class _Null(Var):
    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


def is_const(*vars: Var) -> bool:
    return all(isinstance(v, ConstVar) for v in vars)


def contains_tensor(var: Var) -> bool:
    if isinstance(var, TensorVar):
        return True
    if isinstance(var, (TupleVar, ListVar)):
        return any(contains_tensor(v) for v in var.items)
    if isinstance(var, DictVar):
        return any(contains_tensor(v) for v in var.items.values())
    return False
