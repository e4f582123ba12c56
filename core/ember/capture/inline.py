"""Inlining: a Python function called from captured code runs in a child frame.

The arguments are bound as Python binds them (defaults, ``*args``, ``**kwargs``); a generator
runs to completion where it is called and its caller gets an iterator over what it yielded.
:func:`call_dunder` inlines a special method (``__len__``, ``__iter__``...) written in Python.
The child frame is made by the calling frame's own class, so this module needs no import of it.
"""
from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any

import torch

from .constants import lift
from .dispatch import handles_attr, handles_call, handles_truth
from .exceptions import run_ahead
from .state import MAX_INLINE_DEPTH
from .values import ConstVar, DictVar, FunctionVar, IteratorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame

_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

_SIGNATURES: dict[types.CodeType, inspect.Signature] = {}


def _signature(code: types.CodeType) -> inspect.Signature:
    sig = _SIGNATURES.get(code)
    if sig is None:
        cells = tuple(types.CellType() for _ in code.co_freevars)
        dummy = types.FunctionType(code, {}, code.co_name, None, cells or None)
        sig = inspect.signature(dummy)
        if len(_SIGNATURES) > 4096:
            _SIGNATURES.clear()
        _SIGNATURES[code] = sig
    return sig


def _bind(frame: "Frame", code: types.CodeType, defaults: tuple, kwdefaults: dict,
          args: list[Var], kwargs: dict[str, Var]) -> dict[str, Var]:
    sig = _signature(code)
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    with_defaults = positional[len(positional) - len(defaults):] if defaults else []
    new_params = []
    for p in params:
        if p in with_defaults:
            p = p.replace(default=defaults[with_defaults.index(p)])
        elif p.kind == p.KEYWORD_ONLY and p.name in kwdefaults:
            p = p.replace(default=kwdefaults[p.name])
        new_params.append(p)
    sig = sig.replace(parameters=new_params)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        frame.fail(f"{code.co_name}() {exc}")
    bound.apply_defaults()
    result: dict[str, Var] = {}
    for name, value in bound.arguments.items():
        if name not in code.co_varnames and name.startswith("implicit"):
            name = "." + name[len("implicit"):]  # inspect renames comprehension arguments
        sig_name = name if name in sig.parameters else "implicit" + name[1:]
        kind = sig.parameters[sig_name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            value = TupleVar(list(value))
        elif kind == inspect.Parameter.VAR_KEYWORD:
            value = DictVar(dict(value))
        result[name] = value if isinstance(value, Var) else lift(value)
    return result


@handles_call(FunctionVar)
def inline_call(frame: "Frame", fn: Var, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """Run the Python function ``fn`` (a FunctionVar, or a ConstVar holding a function) in a child
    frame of the same class as ``frame``, its arguments bound as Python binds them."""
    if isinstance(fn, FunctionVar):
        code, globals_dict = fn.code, fn.globals
        defaults, kwdefaults = fn.defaults, fn.kwdefaults
        closure = dict(zip(code.co_freevars, fn.closure))
    else:
        func = fn.value
        code, globals_dict = func.__code__, func.__globals__
        defaults = tuple(_default(frame, d) for d in (func.__defaults__ or ()))
        kwdefaults = {k: _default(frame, v) for k, v in (func.__kwdefaults__ or {}).items()}
        closure = dict(zip(code.co_freevars, func.__closure__ or ()))
    is_generator = bool(code.co_flags & inspect.CO_GENERATOR)
    if code.co_flags & _GENERATOR_FLAGS and not is_generator:
        frame.fail(f"{code.co_name} is a coroutine (not supported)")
    state = frame.state
    if state.depth >= MAX_INLINE_DEPTH:
        frame.fail("inlining is too deep (recursion?)")
    bound = _bind(frame, code, defaults, kwdefaults, args, kwargs)
    child = type(frame)(state, code, globals_dict, bound, closure)
    if not is_generator:
        return _run(child)
    # run to completion now; the caller gets an iterator over what it yielded
    child.yielded = []
    with run_ahead(frame, f"generator {code.co_name}()"):
        result = _run(child)
    return IteratorVar(child.yielded, result=result)


def _run(child: "Frame") -> Var:
    state = child.state
    state.depth += 1
    try:
        return child.run()
    finally:
        state.depth -= 1


def _default(frame: "Frame", value: Any) -> Var:
    if isinstance(value, torch.Tensor):
        frame.fail("a tensor used as a default argument value")
    return lift(value)




def call_dunder(frame: "Frame", obj: Var, name: str, args: list[Var]) -> Var | None:
    """Inline ``type(obj).<name>`` when it is Python code; None when it is not."""
    method = inspect.getattr_static(obj.python_type(), name, None)
    if isinstance(method, types.FunctionType):
        return inline_call(frame, ConstVar(method), [obj, *args], {})
    return None


@handles_attr(FunctionVar)
def _function_attr(frame: "Frame", obj: FunctionVar, name: str) -> Var:
    if name in ("__name__", "__qualname__"):
        return ConstVar(obj.name)
    frame.fail(f"attribute {name!r} of a {type(obj).__name__} is not supported")
    raise AssertionError


@handles_truth(FunctionVar)
def _function_truth(frame: "Frame", var: FunctionVar) -> bool:
    return True


__all__ = ["call_dunder", "inline_call"]
