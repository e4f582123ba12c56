"""The arguments Python's builtins take: a call the capture answers itself (``isinstance``,
``len``, ``getattr``... in ``builtin_calls``) whose arguments do not fit raises the TypeError
CPython raises, inside the captured code, so that the user's ``try``/``except`` sees it.

A builtin with a signature (``inspect.signature``: ``len(obj, /)``, ``isinstance(obj,
class_or_tuple, /)``) is checked by binding; those with none (``getattr(object, name[,
default])``, ``range``, ``min``...) by a table of how many positional arguments they take and which
keywords. A callable in neither is left to its handler.
"""
from __future__ import annotations

import collections
import functools
import inspect
import itertools
from typing import Any, NoReturn

from .exceptions import Raised
from .values import ConstVar

ANY_KEYWORD = None
#: fn -> (fewest positional arguments, most (None: any), keywords it takes (ANY_KEYWORD: any))
_TABLE: dict[Any, tuple[int, int | None, tuple[str, ...] | None]] = {
    type: (1, 3, ()), range: (1, 3, ()), zip: (0, None, ("strict",)), itertools.chain: (0, None, ()),
    iter: (1, 2, ()), next: (1, 2, ()), map: (2, None, ()), filter: (2, 2, ()), set: (0, 1, ()),
    frozenset: (0, 1, ()), dict: (0, 1, ANY_KEYWORD), collections.OrderedDict: (0, 1, ANY_KEYWORD),
    max: (1, None, ("key", "default")), min: (1, None, ("key", "default")), int: (0, 2, ("base",)),
    bool: (0, 1, ()), getattr: (2, 3, ()), super: (0, 2, ()), functools.reduce: (2, 3, ()),
    functools.partial: (1, None, ANY_KEYWORD),
}
_SIGNATURES: dict[Any, inspect.Signature | None] = {}


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return _SIGNATURES[fn]
    except KeyError:
        pass
    except TypeError:  # unhashable
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    _SIGNATURES[fn] = sig
    return sig


def _misfit(message: str) -> NoReturn:
    raise Raised(ConstVar(TypeError(message)), at_call=True)


def check_arguments(fn: Any, args: list, kwargs: dict) -> None:
    """Raise in the captured code what Python raises when ``fn(*args, **kwargs)`` does not fit
    ``fn``'s parameters; return when it fits (or ``fn``'s parameters are unknown)."""
    name = getattr(fn, "__name__", type(fn).__name__)
    try:
        spec = _TABLE.get(fn)
    except TypeError:  # unhashable
        spec = None
    if spec is None:
        sig = _signature(fn)
        if sig is None:
            return
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            _misfit(f"{name}() {exc}")
        return
    fewest, most, keywords = spec
    if kwargs and keywords is not ANY_KEYWORD:
        unknown = [k for k in kwargs if k not in keywords]
        if unknown:
            _misfit(f"{name}() takes no keyword arguments" if not keywords
                    else f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    count = len(args)
    if fn is type and count == 2:
        _misfit("type() takes 1 or 3 arguments")
    if count < fewest:
        _misfit(f"{name} expected at least {fewest} argument{'s' if fewest > 1 else ''}, got {count}")
    if most is not None and count > most:
        _misfit(f"{name} expected at most {most} argument{'s' if most > 1 else ''}, got {count}")


__all__ = ["check_arguments"]
