"""Writes a guard's source: ``guard(L) -> tuple | None``, from the checks ember.guards collected.

Without the C++ extension (:mod:`ember.native_guards`) the guard is straight-line Python, one
local per source, each computed once (``v4 = v0._modules['features']``) and shared by the checks
below it. With it, three things leave the Python:

- ``SourceWalk`` (source_walk.cpp) does the reads of every source it can express (locals,
  globals, cells, fixed objects, attributes, module table entries, items) and the checks on them
  that have a C++ form (``Check.walk``: types, constants, dict keys, lengths, identity), in the
  order the Python would run them; a read whose dict and type are unchanged since the last call
  (CPython's version tags, read_memo.h) is not done again. The guard calls it first; the few Python checks left read
  what they need from its values (``v12 = ___walked[40]``). The walk is written into the source
  as comments, so that ``EMBER_DEBUG`` still shows every read and check.
- ``TensorMatch`` (tensor_match.cpp) checks the plain tensors, the linear shape relations over
  their sizes, the hook tables of modules called as their class's forward, and (when the walk
  cannot read them) the constant attributes, in one call at the end.
- The objects TensorMatch takes and the values the guard returns come out of the walk as tuples
  when the walk read all of them.

Both forms accept exactly the same calls (tests/core/test_source_walk.py).
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from .capture.sources import (AttrSource, CellSource, ConstantSource, Constants, DictEntrySource,
                              GlobalSource, ItemSource, LocalSource, Source)
from .shape_relations import OPS, Linear

_PROPS = {"size": 0, "stride": 1, "storage_offset": 2}  # their codes in tensor_match.cpp
_OP_CODES = {op: i for i, op in enumerate(OPS.values())}
_CONST, _ATTR, _ITEM, _CHECK = range(4)  # source_walk.cpp's Op
#: The kinds of check of the walk (source_walk.cpp's Kind), the first item of ``Check.walk``.
TYPE, EQUALS, KEYS, LEN, IS, IS_WEAK = range(6)

#: Tensor types whose metadata Python reads straight from the C++ tensor (no Python override of
#: ``shape`` and the like), so that the C++ check sees what the Python check would.
_NATIVE_TYPES = (torch.Tensor, torch.nn.Parameter)


def _key(source: Source) -> Any:
    """Sources compare equal when they read the same thing; an unhashable one is itself."""
    try:
        hash(source)
    except TypeError:
        return id(source)
    return source


def _packed(relation: Linear, position: dict[Any, int]) -> tuple:
    """``relation`` as tensor_match.cpp takes it: ((tensor, prop, dim, coefficient)...),
    constant, op, modulus, offset; ``position`` gives each tensor's place in the C++ call."""
    terms = tuple((position[_key(tensor)], _PROPS[prop], dim, c) for (tensor, prop, dim), c in relation.terms)
    return terms, relation.constant, _OP_CODES[relation.op], relation.modulus, relation.offset


class GuardWriter:
    """One guard's source (see the module docstring). ``tensor_match`` and ``source_walk`` are
    the C++ types, or None for Python checks."""

    def __init__(self, consts: Constants, tensor_match: type | None = None,
                 source_walk: type | None = None) -> None:
        self.consts = consts
        self.tensor_match = tensor_match
        self.source_walk = source_walk
        self.names: dict[Any, str] = {}     # source -> its Python local
        self.lines: list[str] = []          # the Python body
        self.walked: dict[Any, int] = {}    # source -> its index in the walk's values
        self.steps: list[tuple] = []        # the walk
        self.comments: list[str] = []       # the walk, as Python, for EMBER_DEBUG
        self._objects: dict[int, int] = {}  # id of a fixed object -> its index in the walk
        self._values = 1                    # values[0] is L

    def _push(self, step: tuple, text: str) -> int:
        self.steps.append(step)
        self.comments.append(f"        #   w{self._values} = {text}")
        self._values += 1
        return self._values - 1

    def _fixed(self, obj: Any, text: str) -> int:
        if id(obj) not in self._objects:
            self._objects[id(obj)] = self._push((_CONST, obj), text)
        return self._objects[id(obj)]

    def walkable(self, source: Source) -> bool:
        """Whether the walk can read ``source`` (:meth:`_read`'s cases), without reading it."""
        if self.source_walk is None:
            return False
        if isinstance(source, (LocalSource, ConstantSource, GlobalSource, CellSource)):
            return True
        return isinstance(source, (AttrSource, DictEntrySource, ItemSource)) and self.walkable(source.base)

    def walk_index(self, source: Source) -> int | None:
        """Where the walk reads ``source`` (appending its reads), or None: no walk, or a source
        it cannot express (then neither can it read anything built on it)."""
        if self.source_walk is None:
            return None
        key = _key(source)
        if key in self.walked:
            return self.walked[key]
        index = self._read(source)
        if index is not None:
            self.walked[key] = index
        return index

    def _read(self, source: Source) -> int | None:
        consts = self.consts
        if isinstance(source, LocalSource):
            return self._push((_ITEM, 0, source.name), f"L[{source.name!r}]")
        if isinstance(source, ConstantSource):
            return self._fixed(source.value, source.expr(consts))
        if isinstance(source, GlobalSource):
            table = self._fixed(source.globals_dict, consts.name(source.globals_dict, "g"))
            return self._push((_ITEM, table, source.name), f"w{table}[{source.name!r}]")
        if isinstance(source, CellSource):
            cell = self._fixed(source.cell, consts.name(source.cell, "cell"))
            return self._push((_ATTR, cell, "cell_contents"), f"w{cell}.cell_contents")
        if not isinstance(source, (AttrSource, DictEntrySource, ItemSource)):
            return None
        base = self.walk_index(source.base)
        if base is None:
            return None
        if isinstance(source, AttrSource):
            return self._push((_ATTR, base, source.attr), source.apply(f"w{base}", consts))
        if isinstance(source, DictEntrySource):
            table = self._push((_ATTR, base, source.table), f"w{base}.{source.table}")
            return self._push((_ITEM, table, source.key), f"w{table}[{source.key!r}]")
        return self._push((_ITEM, base, source.index), f"w{base}[{source.index!r}]")

    def local(self, source: Source) -> str:
        """The Python local holding ``source``'s value, computed (or taken from the walk) once."""
        key = _key(source)
        name = self.names.get(key)
        if name is None:
            index = self.walk_index(source)
            if index is not None:
                expr = f"___walked[{index}]"
            else:
                base = getattr(source, "base", None)
                expr = source.apply(self.local(base), self.consts) if base is not None else source.expr(self.consts)
            name = self.names[key] = f"v{len(self.names)}"
            self.lines.append(f"        {name} = {expr}")
        return name

    def _read_first(self, source: Source) -> None:
        """Read ``source`` where its checks would be read (the walk, else a Python local)."""
        if self.walk_index(source) is None:
            self.local(source)

    def _tuple(self, sources: Sequence[Source], groups: dict[str, tuple], name: str) -> str:
        """Python for the tuple of ``sources``' values: ``name``, a group of the walk's result,
        when the walk read them all; else a tuple of locals."""
        indices = [self.walked.get(_key(s)) for s in sources]
        if sources and None not in indices:
            groups[name] = tuple(indices)
            return name
        return "(" + "".join(f"{self.local(s)}, " for s in sources) + ")"

    def write(self, name: str, checks: list[Any], inputs: Sequence[Source]) -> str:
        """The source of ``def name(L)``: ``checks`` (ember.guards' ``Check``s) in their order,
        returning the values of ``inputs`` when all pass, else None."""
        use_cpp = self.tensor_match is not None
        native = [c for c in checks if use_cpp and c.tensor_spec is not None and c.tensor_spec[0] in _NATIVE_TYPES]
        modules = [c for c in checks if use_cpp and c.plain_module]
        walked_checks = {id(c) for c in checks if c.walk is not None and len(c.sources) == 1
                         and self.walkable(c.sources[0])}
        constants = [c for c in checks if use_cpp and c.walk is not None and c.walk[0] == EQUALS
                     and id(c) not in walked_checks and isinstance(c.sources[0], AttrSource)]  # TensorMatch reads it
        position = {_key(c.sources[0]): i for i, c in enumerate(native)}
        read_in_cpp = {id(c) for c in constants}
        in_native = {id(c) for c in native + modules} | read_in_cpp
        relations: list[tuple] = []
        for check in checks:
            if check.relations is not None and native and \
                    all(_key(read[0]) in position for r in check.relations for read, _ in r.terms):
                relations.extend(_packed(r, position) for r in check.relations)
                continue
            if id(check) in in_native:
                self._read_first(check.sources[0].base if id(check) in read_in_cpp else check.sources[0])
                continue
            if id(check) in walked_checks:
                index = self.walk_index(check.sources[0])
                self.steps.append((_CHECK, index, *check.walk))
                self.comments.append(f"        #   check {check.template.format(f'w{index}')}")
                continue
            local_names = [self.local(s) for s in check.sources]
            test = check.template.format(*local_names)
            self.lines.append(f"        if not ({test}):\n            return None")
        groups: dict[str, tuple] = {}
        if native or modules or constants:
            specs = tuple(c.tensor_spec for c in native)
            attrs = tuple((c.sources[0].attr, *c.walk[1:]) for c in constants)
            match = self.consts.name(self.tensor_match(specs, tuple(relations), len(modules), attrs), "tensor_match")
            objects = self._tuple([c.sources[0] for c in native + modules] + [c.sources[0].base for c in constants],
                                  groups, "___objects")
            self.lines.append(f"        if not {match}({objects}):\n            return None")
        values = self._tuple(list(inputs), groups, "___inputs")
        head: list[str] = []
        if self.steps:
            walk = self.consts.name(self.source_walk(tuple(self.steps), tuple(groups.values())), "walk")
            names = "".join(f" {g}," for g in groups)
            head = [f"        # {walk}(L) reads and checks, in C++ (source_walk.cpp):", *self.comments,
                    f"        ___result = {walk}(L)",
                    "        if ___result is None:\n            return None",
                    f"        ___walked,{names} = ___result"]
        body = "\n".join(head + self.lines) or "        pass"
        return (f"def {name}(L):\n    try:\n{body}\n        return {values}\n"
                f"    except Exception:\n        return None\n")
