"""Side effects on objects that exist outside the captured function, replayed after the graph.

Attribute stores and deletions (``self.count += 1``), global assignments, and mutations of
lists and dicts read from the frame are applied to an overlay during capture (later reads in
the same capture see them) and written back to the real objects by the entry's runner, in
the order they first happened, before it returns or takes a graph break's native step.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .container_types import base_of
from .values import DictVar, ListVar, SetVar, UserDictVar, Var

if TYPE_CHECKING:
    from .output import OutputBuilder

DELETED = object()


def replay_dict(target: Any, items: dict) -> None:
    """A mutated dict subclass's instance passed in ends holding ``items``, through its builtin's
    own methods (no override of its class runs)."""
    base = base_of(type(target))
    base.clear(target)
    for key, value in items.items():
        base.__setitem__(target, key, value)


def replay_set(target: Any, items: tuple) -> None:
    base = base_of(type(target))
    base.clear(target)
    base.update(target, items)


@dataclasses.dataclass
class SideEffects:
    #: (id(obj), name) -> (the object's Var, name, new value Var or DELETED)
    attrs: dict[tuple[int, str], tuple[Var, str, Any]] = dataclasses.field(default_factory=dict)
    #: (id(globals dict), name) -> (globals dict, name, value Var)
    globals: dict[tuple[int, str], tuple[dict, str, Var]] = dataclasses.field(default_factory=dict)
    #: id(container Var) -> the mutated ListVar/DictVar (it has a source)
    containers: dict[int, Var] = dataclasses.field(default_factory=dict)
    #: keys of ``attrs`` stored by ``object.__setattr__`` (the class's own hook already ran inlined)
    raw: set[tuple[int, str]] = dataclasses.field(default_factory=set)

    def copy(self) -> "SideEffects":
        return SideEffects(dict(self.attrs), dict(self.globals), dict(self.containers), set(self.raw))

    def store_attr(self, obj: Var, value_obj: Any, name: str, value: Any, raw: bool = False) -> None:
        """Record ``obj.name = value``; ``raw``: replayed with ``object.__setattr__``, not the class's."""
        key = (id(value_obj), name)
        self.attrs[key] = (obj, name, value)
        if raw:
            self.raw.add(key)
        else:
            self.raw.discard(key)

    def lookup_attr(self, value_obj: Any, name: str) -> Any:
        """The overlaid value (a Var or DELETED), or None when the attribute was not stored."""
        entry = self.attrs.get((id(value_obj), name))
        return entry[2] if entry else None

    def store_global(self, globals_dict: dict, name: str, value: Var) -> None:
        self.globals[(id(globals_dict), name)] = (globals_dict, name, value)

    def lookup_global(self, globals_dict: dict, name: str) -> Var | None:
        entry = self.globals.get((id(globals_dict), name))
        return entry[2] if entry else None

    def mutated(self, container: Var) -> None:
        self.containers[id(container)] = container

    def values(self) -> list[Var]:
        """Every value the replay writes (for aliasing between them and the returned values)."""
        out: list[Var] = list(self.containers.values())
        out += [value for _, _, value in self.attrs.values() if value is not DELETED]
        out += [value for _, _, value in self.globals.values()]
        return out

    def replay_lines(self, out: "OutputBuilder") -> list[str]:
        """Python statements that apply every recorded effect to the real objects."""
        lines = []
        for container in self.containers.values():
            target = container.source.expr(out.consts)
            if isinstance(container, ListVar):
                items = ", ".join(out.expr(v) for v in container.items)
                lines.append(f"    {target}[:] = [{items}]")
            elif isinstance(container, UserDictVar):  # through dict's own methods, not the subclass's
                body = ", ".join(f"{out.key(k)}: {out.expr(v)}" for k, v in container.items.items())
                lines.append(f"    {out.consts.name(replay_dict, 'replay')}({target}, {{{body}}})")
            elif isinstance(container, SetVar):  # a set subclass's instance passed in
                body = "".join(f"{out.key(k)}, " for k in container.items)
                lines.append(f"    {out.consts.name(replay_set, 'replay')}({target}, ({body}))")
            elif isinstance(container, DictVar):
                body = ", ".join(f"{out.key(k)}: {out.expr(v)}" for k, v in container.items.items())
                lines.append(f"    ___v = {{{body}}}; ___t = {target}; ___t.clear(); ___t.update(___v)")
        for key, (obj, name, value) in self.attrs.items():
            target = out.expr(obj)
            raw = key in self.raw
            if value is DELETED:
                lines.append(f"    {'object.__delattr__' if raw else 'delattr'}({target}, {name!r})")
            else:
                lines.append(f"    {'object.__setattr__' if raw else 'setattr'}({target}, {name!r}, {out.expr(value)})")
        for globals_dict, name, value in self.globals.values():
            lines.append(f"    {out.consts.name(globals_dict, 'g')}[{name!r}] = {out.expr(value)}")
        return lines
