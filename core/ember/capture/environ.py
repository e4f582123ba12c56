"""``os.environ`` in captured code: every read of it is guarded on what it read.

Libraries read flags from the environment while they run (``os.environ.get("FLAG")``,
``"X" in os.environ``, ``os.getenv``): the value read decides what the capture records, so the
entry must not run once the variable changes. :class:`EnvironVar` stands for ``os.environ`` read
through a source; a read of one variable is guarded on that variable alone (``environ.get(k)``
is the same string, or still None), a read of the whole environment (``len``, iteration,
``keys()``, ``dict(os.environ)``) on all of it. ``builder.wrap`` makes the EnvironVar, whatever
path reached ``os.environ`` (``os.environ``, ``from os import environ``, ``os.getenv`` inlined). Writes (``os.environ[k] = v``, ``pop``,
``setdefault``...) are not modelled: they break the graph and run in Python.
"""
from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .builder import wrap
from .constants import as_const, lift
from .dispatch import handles_attr, handles_call, handles_iter, handles_len, handles_truth
from .exceptions import throw
from .sources import AttrSource, MethodCallSource, constant_source
from .values import DictVar, EnvironVar, Var

if TYPE_CHECKING:
    from .frame import Frame


class EnvironMethod(Var):
    """``os.environ.<name>`` before it is called."""

    def __init__(self, env: EnvironVar, name: str) -> None:
        self.env = env
        self.name = name


def get(frame: "Frame", env: EnvironVar, key: Any) -> Any:
    """``os.environ.get(key)`` (a string, or None), guarded on that variable."""
    if not isinstance(key, str):
        throw(TypeError(f"str expected, not {type(key).__name__}"))
    value = os.environ.get(key)
    wrap(frame.state, value, MethodCallSource(env.source, Mapping.get, (key,), "get"))
    return value


def snapshot(frame: "Frame", env: EnvironVar) -> DictVar:
    """The whole environment as a dict, guarded on every variable (keys and values)."""
    source = MethodCallSource(env.source, dict, (), "copy")
    return wrap(frame.state, dict(os.environ), source)  # type: ignore[return-value]


def getenv(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``os.getenv(key, default=None)`` (standard library, not traced): ``os.environ.get``."""
    env = wrap(frame.state, os.environ, AttrSource(constant_source(os), "environ"))
    try:
        bound = inspect.signature(os.getenv).bind(*args, **kwargs)
    except TypeError as exc:
        throw(exc)
    key = as_const(frame, bound.arguments["key"], "an environment variable's name")
    value = get(frame, env, key)  # type: ignore[arg-type]
    return lift(value) if value is not None else bound.arguments.get("default", lift(None))


def getitem(frame: "Frame", env: EnvironVar, key: Any) -> Var:
    value = get(frame, env, key)
    if value is None:
        throw(KeyError(key))
    return lift(value)


def contains(frame: "Frame", env: EnvironVar, key: Any) -> bool:
    return isinstance(key, str) and get(frame, env, key) is not None


_READS = {"get", "keys", "values", "items", "copy", "__getitem__", "__contains__"}


@handles_attr(EnvironVar)
def _attr(frame: "Frame", env: EnvironVar, name: str) -> Var:
    if name not in _READS:
        frame.fail(f"os.environ.{name} (writes to the environment run in Python)")
    return EnvironMethod(env, name)


@handles_call(EnvironMethod)
def _call(frame: "Frame", method: EnvironMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    env, name = method.env, method.name
    values = [as_const(frame, a, f"an argument of os.environ.{name}") for a in args]
    if kwargs or len(values) > (2 if name == "get" else 1 if name in ("__getitem__", "__contains__") else 0):
        throw(TypeError(f"os.environ.{name}() got unexpected arguments"))
    if name == "get":
        if not values:
            throw(TypeError("get() missing 1 required positional argument: 'key'"))
        value = get(frame, env, values[0])
        return lift(value) if value is not None else (args[1] if len(args) > 1 else lift(None))
    if name == "__getitem__":
        return getitem(frame, env, values[0])
    if name == "__contains__":
        return lift(contains(frame, env, values[0]))
    whole = snapshot(frame, env)
    if name == "copy":
        return DictVar(dict(whole.items))
    from .dispatch import call, load_attr

    return call(frame, load_attr(frame, whole, name), [], {})


@handles_iter(EnvironVar)
def _iterate(frame: "Frame", env: EnvironVar) -> list[Var]:
    return [lift(k) for k in snapshot(frame, env).items]


@handles_len(EnvironVar)
def _len(frame: "Frame", env: EnvironVar) -> Var:
    return lift(len(snapshot(frame, env).items))


@handles_truth(EnvironVar)
def _truth(frame: "Frame", env: EnvironVar) -> bool:
    return bool(snapshot(frame, env).items)


def pairs(frame: "Frame", env: EnvironVar) -> list[tuple[Any, Var]]:
    """``dict(os.environ)``'s items."""
    return list(snapshot(frame, env).items.items())


__all__ = ["contains", "getenv", "getitem", "pairs"]
