"""Compares the two twins of a Python program after a call: what ``f`` returned, every piece of
state the module holds, and which of those values are one object (or share a tensor's storage).

Values compare by kind: tensors with ``harness.differ`` (dtype, shape, values at the dtype's
tolerance), plus ``requires_grad``, the gradient of leaves (None included) and their Python
attributes; Python floats with a relative tolerance of 1e-6; other Python values with ``==`` and
the same type name; containers, dict views, objects (``__dict__`` and slots), dataclasses,
``nn.Module`` (training flag, parameters, buffers, submodules, plain attributes), classes (their
data attributes) and functions (``__defaults__``, ``__kwdefaults__``, closure cells) element by
element; other objects of builtin types (iterators, partials) by what pickling keeps. Identity: for every tensor, list, dict, set and user object reachable from the outputs
and the state (a few levels deep), the first path that reaches the same object, and for tensors
the first that shares its storage, must be the same in both twins.
"""
from __future__ import annotations

import math
import types
from typing import Any, Iterator

import numpy as np
import torch

from tests.fuzz.harness import differ
from tests.fuzz.pyprogram import PRELUDE, Twin

_DEPTH = 6
_PLAIN = (type(None), bool, int, str, bytes, complex, np.generic, torch.dtype, torch.device, torch.Size,
          range, slice)
_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
_BUILTIN_MODULES = ("builtins", "functools", "itertools", "collections")
_PRELUDE_NAMES = {"dataclasses", "math", "os", "types", "np", "torch", "pyflags", "cell", "rand",
                  "set_cell", "_outer"}
assert all(name in PRELUDE for name in _PRELUDE_NAMES - {"_outer"})


def state(twin: Twin) -> dict[str, Any]:
    """The state of a twin's module by name, with its environment variables and flags."""
    out = {name: v for name, v in twin.ns.items() if not name.startswith("__") and name not in _PRELUDE_NAMES}
    out["<environment>"] = dict(twin.state.env)
    out["<pyflags>"] = dict(twin.state.flags)
    return out


def _fields(value: Any) -> dict[str, Any]:
    """An object's attributes: its ``__dict__`` (but dunder names such as ``__module__``, which
    name the twin's module) and its slots."""
    out = {k: v for k, v in vars(value).items() if not k.startswith("__")} if hasattr(value, "__dict__") else {}
    for klass in type(value).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(value, slot):
                out[slot] = getattr(value, slot)
    return out


def _class_data(klass: type) -> dict[str, Any]:
    return {k: v for k, v in vars(klass).items() if not k.startswith("__") and not callable(v)
            and not isinstance(v, (property, staticmethod, classmethod, types.MemberDescriptorType))}


def _module_data(module: types.ModuleType) -> dict[str, Any]:
    return {k: v for k, v in vars(module).items() if not k.startswith("__")}


def _function_state(fn: types.FunctionType) -> dict[str, Any]:
    cells = {}
    for name, c in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            cells[name] = c.cell_contents
        except ValueError:
            cells[name] = "<empty cell>"
    return {"__defaults__": fn.__defaults__, "__kwdefaults__": fn.__kwdefaults__, "cells": cells}


def _module_state(m: torch.nn.Module) -> dict[str, Any]:
    out = {k: v for k, v in vars(m).items() if not k.startswith("_")}
    out.update(parameters=dict(m._parameters), buffers=dict(m._buffers), modules=dict(m._modules))
    return out


def _differ_dicts(what: str, e: dict, a: dict, depth: int) -> str | None:
    if list(e) != list(a):
        return f"{what}: keys {list(a)!r} instead of {list(e)!r}"
    for key in e:
        if (d := diff(f"{what}[{key!r}]", e[key], a[key], depth + 1)):
            return d
    return None


def diff(what: str, e: Any, a: Any, depth: int = 0) -> str | None:
    """How ``a`` (the compiled twin's) differs from ``e`` (eager's), None if it does not."""
    if depth > _DEPTH:
        return None
    if isinstance(e, torch.Tensor) or isinstance(a, torch.Tensor):
        if (d := differ(what, e, a)):
            return d
        if e.requires_grad != a.requires_grad:
            return f"{what}: requires_grad {a.requires_grad} instead of {e.requires_grad}"
        if e.is_leaf and e.requires_grad:
            if (e.grad is None) != (a.grad is None):
                return f"{what}.grad: {'None' if a.grad is None else 'a tensor'} instead of " \
                       f"{'None' if e.grad is None else 'a tensor'}"
            if e.grad is not None and (d := differ(f"{what}.grad", e.grad, a.grad)):
                return d
        return _differ_dicts(f"{what} (attributes)", vars(e), vars(a), depth) if vars(e) or vars(a) else None
    if type(e).__qualname__ != type(a).__qualname__:
        return f"{what}: {type(a).__qualname__} {_short(a)} instead of {type(e).__qualname__} {_short(e)}"
    if isinstance(e, float):
        same = e == a or (math.isnan(e) and math.isnan(a)) or math.isclose(e, a, rel_tol=1e-6, abs_tol=1e-9)
        return None if same else f"{what}: {a!r} instead of {e!r}"
    if isinstance(e, _PLAIN):
        return None if e == a else f"{what}: {_short(a)} instead of {_short(e)}"
    if isinstance(e, (list, tuple)) or isinstance(e, _VIEWS):
        e, a = list(e), list(a)
        if len(e) != len(a):
            return f"{what}: {len(a)} items instead of {len(e)} ({_short(a)} instead of {_short(e)})"
        return next((d for k, (x, y) in enumerate(zip(e, a)) if (d := diff(f"{what}[{k}]", x, y, depth + 1))), None)
    if isinstance(e, (set, frozenset)):
        return None if e == a else f"{what}: {_short(a)} instead of {_short(e)}"
    if isinstance(e, types.FunctionType):
        return _differ_dicts(what, _function_state(e), _function_state(a), depth)
    if isinstance(e, type):
        return _differ_dicts(what, _class_data(e), _class_data(a), depth)
    if isinstance(e, types.ModuleType):  # only the program's own (imported ones are the same object)
        return None if e is a else _differ_dicts(what, _module_data(e), _module_data(a), depth)
    if isinstance(e, (types.BuiltinFunctionType, types.MethodType)):
        return None
    if isinstance(e, torch.nn.Module):
        return _differ_dicts(what, _module_state(e), _module_state(a), depth)
    if isinstance(e, dict) and (d := _differ_dicts(what, e, a, depth)):
        return d
    if type(e).__module__ in _BUILTIN_MODULES and (reduced := _reduce(e)) is not None:
        return diff(f"{what} (state)", reduced, _reduce(a), depth + 1)
    if hasattr(e, "__dict__") or hasattr(type(e), "__slots__"):
        return _differ_dicts(f"{what} (attributes)", _fields(e), _fields(a), depth)
    return None if isinstance(e, dict) or _equal(e, a) else f"{what}: {_short(a)} instead of {_short(e)}"


def _reduce(value: Any) -> tuple | None:
    """What pickling keeps of a builtin object (an iterator's list and position, a partial's
    function and arguments), None if it cannot be pickled."""
    try:
        return tuple(value.__reduce_ex__(4)[1:])
    except Exception:
        return None


def _equal(e: Any, a: Any) -> bool:
    try:
        return bool(e == a)
    except Exception:
        return repr(e) == repr(a)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


def _tracked(value: Any) -> bool:
    return isinstance(value, (torch.Tensor, list, dict, set)) or (
        hasattr(value, "__dict__") and not isinstance(value, (type, types.FunctionType, types.ModuleType,
                                                              types.MethodType, types.BuiltinFunctionType)))


def _walk(path: str, value: Any, depth: int, seen: set[int]) -> Iterator[tuple[str, Any]]:
    """(path, object) for the objects whose identity matters, reachable from ``value``."""
    if _tracked(value):
        yield path, value
    if depth >= 3 or id(value) in seen or isinstance(value, (torch.Tensor, torch.nn.Module, type)):
        return
    seen.add(id(value))
    if isinstance(value, (list, tuple)):
        for k, v in enumerate(value):
            yield from _walk(f"{path}[{k}]", v, depth + 1, seen)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(f"{path}[{k!r}]", v, depth + 1, seen)
    elif isinstance(value, types.FunctionType):
        for k, v in _function_state(value).items():
            yield from _walk(f"{path}.{k}", v, depth + 1, seen)
    elif _tracked(value):
        for k, v in _fields(value).items():
            yield from _walk(f"{path}.{k}", v, depth + 1, seen)


def _identities(roots: dict[str, Any]) -> dict[str, str]:
    """For each tracked path, the first path to the same object ('is'), and for tensors also to
    the same storage ('shares storage with')."""
    first: dict[int, str] = {}
    storage: dict[int, str] = {}
    out: dict[str, str] = {}
    for name, value in roots.items():
        for path, obj in _walk(name, value, 0, set()):
            out[path] = f"is {first.setdefault(id(obj), path)}"
            if isinstance(obj, torch.Tensor) and obj.numel() and obj.device.type != "meta":
                out[path] += f", shares storage with {storage.setdefault(obj.untyped_storage().data_ptr(), path)}"
    return out


def compare(eager: Twin, eager_out: Any, compiled: Twin, compiled_out: Any) -> str | None:
    """The first difference between the twins after a call: outputs, state, then identities."""
    if (d := diff("the outputs", eager_out, compiled_out)):
        return d.replace("the outputs[", "output [")
    e_state, a_state = state(eager), state(compiled)
    if list(e_state) != list(a_state):
        return f"module names {sorted(a_state)} instead of {sorted(e_state)}"
    for name in e_state:
        if (d := diff(name, e_state[name], a_state[name])):
            return d
    e_ids = _identities({"output": eager_out, **e_state})
    a_ids = _identities({"output": compiled_out, **a_state})
    for path, ident in e_ids.items():
        if a_ids.get(path) != ident:
            return f"identity: {path} {a_ids.get(path, 'is missing')} instead of {ident}"
    extra = [p for p in a_ids if p not in e_ids]
    return f"identity: {extra[0]} {a_ids[extra[0]]}, absent in eager" if extra else None
