"""Locks used by library code for mutual exclusion (``logging.getLogger``'s module lock).

Capture runs on one thread and replays nothing of a lock, so acquiring and releasing a
``threading.Lock``/``RLock`` while capturing is a no-op: ``acquire`` answers True as an
uncontended lock would, ``release`` and ``__exit__`` answer None.
"""
from __future__ import annotations

import _thread
import threading
import types
from typing import Any

from .values import ConstVar, Var

_LOCK_TYPES = (_thread.LockType, _thread.RLock, type(threading.RLock()))
_RESULTS = {"acquire": True, "__enter__": True, "release": None, "__exit__": None}


def is_lock(value: Any) -> bool:
    return isinstance(value, _LOCK_TYPES)


def is_lock_method(value: Any) -> bool:
    return isinstance(value, types.BuiltinMethodType) and isinstance(getattr(value, "__self__", None), _LOCK_TYPES) \
        and value.__name__ in _RESULTS


def lock_call(value: Any) -> Var:
    return ConstVar(_RESULTS[value.__name__])
