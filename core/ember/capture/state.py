"""What one capture shares across the frames it interprets: graph, guards and limits."""
from __future__ import annotations

import dataclasses
from typing import Any

from ..guards import GuardSet
from .graph import GraphBuilder
from .side_effects import SideEffects
from .values import CellVar

MAX_INLINE_DEPTH = 64
# a generator live after the graph has its items left run ahead (lazy_iterators.force): more items
# than this is taken as endless, and capture gives up instead of running for minutes
MAX_GENERATOR_ITEMS = 1_000


@dataclasses.dataclass
class CaptureState:
    graph: GraphBuilder = dataclasses.field(default_factory=GraphBuilder)
    guards: GuardSet = dataclasses.field(default_factory=GuardSet)
    depth: int = 0
    instructions: int = 0
    max_instructions: int = 2_000_000
    side_effects: SideEffects = dataclasses.field(default_factory=SideEffects)
    #: id(real value in an object built over fake tensors) -> the Var it stands for (objects.py)
    shadows: dict[int, Any] = dataclasses.field(default_factory=dict)
    #: id(ListVar or DictVar) -> [it, the real list or dict standing for it in such objects, what
    #: that held when last filled] (objects.py)
    stand_ins: dict[int, list] = dataclasses.field(default_factory=dict)
    #: original contents of containers/iterators changed by the current root instruction
    undo: dict[int, tuple[Any, Any]] = dataclasses.field(default_factory=dict)
    #: the exception being handled (what a bare ``raise`` re-raises), a ConstVar, or None
    handled: Any = None
    #: id(real list or dict read from the frame) -> (it, its Var): one Var per object, so that
    #: a list reached through two names aliases in the capture as it does in Python
    containers: dict[int, tuple[Any, Any]] = dataclasses.field(default_factory=dict)
    #: the compiled function's ember.shapes.ShapePolicy (None: every size specialised)
    policy: Any = None
    #: id(object) -> object, for real objects made at capture by a constant computation (a
    #: ``copy.deepcopy``): the captured code's stores of constants into them apply at once
    made: dict[int, Any] = dataclasses.field(default_factory=dict)
    #: id(module or user object guarded on its class) -> (it, the first source it was read from)
    instances: dict[int, tuple[Any, Any]] = dataclasses.field(default_factory=dict)
    #: torch's global state when the call began (global_state.GlobalState), set by capture()
    entry_state: Any = None
    #: offsets of the outermost code's instructions run in Python at a graph break, not inlined
    #: (inlined_contexts.RetryCapture): ``with`` blocks whose body breaks, calls making a generator
    #: live at a break that cannot be run ahead (generator_outputs)
    in_python: frozenset = frozenset()
    #: id(real closure cell) -> its CellVar: one per cell, however the code reaches it
    cells: dict[int, Any] = dataclasses.field(default_factory=dict)
    #: the identity keys (set_keys.Identity) of dicts the capture holds: inputs among them are
    #: guarded to stay distinct objects, as the dicts tell them apart
    dict_identities: dict[Any, None] = dataclasses.field(default_factory=dict)
    #: every generator the captured code made (values.GeneratorVar), in order: those it abandons
    #: suspended are closed when it returns (generators.close_abandoned)
    generators: list = dataclasses.field(default_factory=list)

    def real_cell(self, cell: Any, source: Any) -> CellVar:
        """The CellVar of a real closure cell read from ``source`` (its contents read on first
        use); a cell reached again, from another source, is guarded to be the same object."""
        seen = self.cells.get(id(cell))
        if seen is not None and seen.real is cell:
            if seen.source != source:
                self.guards.same_object(source, seen.source)
            return seen
        var = self.cells[id(cell)] = CellVar(None, cell, source, read=False)
        return var

    def remember(self, var: Any) -> None:
        """Save ``var``'s state the first time the current root instruction changes it."""
        if id(var) in self.undo:
            return
        if hasattr(var, "index"):
            self.undo[id(var)] = (var, var.index)
        elif hasattr(var, "save"):  # an object built over fake tensors: its log of mutations
            self.undo[id(var)] = (var, var.save())
        elif hasattr(var, "contents"):  # a closure cell
            self.undo[id(var)] = (var, (var.contents, var.read))
        else:  # the items of a list, dict or set
            self.undo[id(var)] = (var, var.items.copy())

    def rollback(self) -> None:
        """Undo what the failed root instruction did to containers and iterators."""
        for var, saved in self.undo.values():
            if hasattr(var, "index"):
                var.index = saved
            elif hasattr(var, "restore"):
                var.restore(saved)
            elif hasattr(var, "contents"):
                var.contents, var.read = saved
            else:
                var.items = saved
        self.undo.clear()
