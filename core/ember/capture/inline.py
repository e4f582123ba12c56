"""Inlining: a Python function called from captured code runs in a child frame.

The arguments are bound as Python binds them (``*args``, ``**kwargs``, and the defaults the call
leaves out, read through the function so that they are guarded: ``functions.py``); a generator
function's call makes a generator whose body runs as it is read (``generators.py``).
:func:`call_dunder` inlines a special method (``__len__``, ``__iter__``...) written in Python;
:func:`class_member` binds a method, static or class method, or property read through an object.
The child frame is made by the calling frame's own class, so this module needs no import of it.
"""
from __future__ import annotations

import inspect
import sys
import types
from typing import TYPE_CHECKING, Any

from .builder import closure_read_through
from .constants import lift
from .dispatch import handles_attr, handles_call, handles_store, handles_truth
from .exceptions import throw
from .functions import class_function, default, function_source
from .sources import AttrSource, ItemSource, Source
from .state import MAX_INLINE_DEPTH
from .values import BoundMethodVar, ConstVar, DictVar, FunctionVar, GeneratorVar, TupleVar, Var

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


class _Default:
    """A parameter the call left out: its default is read only then (``key``: an index from the end
    of the defaults, or a keyword-only name)."""

    def __init__(self, key: int | str) -> None:
        self.key = key


def _bind(frame: "Frame", code: types.CodeType, n_defaults: int, kw_defaults: Any, default_of: Any,
          args: list[Var], kwargs: dict[str, Var]) -> dict[str, Var]:
    """Python's binding of ``args``/``kwargs`` to ``code``'s parameters; the last ``n_defaults``
    positional parameters and the keyword-only ones in ``kw_defaults`` have defaults, read by
    ``default_of(key)`` for the parameters the call leaves out."""
    sig = _signature(code)
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    with_defaults = positional[len(positional) - n_defaults:] if n_defaults else []
    new_params = []
    for p in params:
        if p in with_defaults:
            p = p.replace(default=_Default(with_defaults.index(p) - len(with_defaults)))
        elif p.kind == p.KEYWORD_ONLY and p.name in kw_defaults:
            p = p.replace(default=_Default(p.name))
        new_params.append(p)
    sig = sig.replace(parameters=new_params)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:  # what Python raises at the call, which the caller may catch
        throw(TypeError(f"{code.co_qualname}() {exc}"))
    bound.apply_defaults()
    result: dict[str, Var] = {}
    for name, value in bound.arguments.items():
        if name not in code.co_varnames and name.startswith("implicit"):
            name = "." + name[len("implicit"):]  # inspect renames comprehension arguments
        sig_name = name if name in sig.parameters else "implicit" + name[1:]
        kind = sig.parameters[sig_name].kind
        if isinstance(value, _Default):
            value = default_of(value.key)
        elif kind == inspect.Parameter.VAR_POSITIONAL:
            value = TupleVar(list(value))
        elif kind == inspect.Parameter.VAR_KEYWORD:
            value = DictVar(dict(value))
        result[name] = value if isinstance(value, Var) else lift(value)
    return result


@handles_call(FunctionVar)
def inline_call(frame: "Frame", fn: Var, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """Run the Python function ``fn`` (a FunctionVar, or a ConstVar holding a function) in a child
    frame of the same class as ``frame``, its arguments bound as Python binds them."""
    child = child_frame(frame, fn, args, kwargs)
    if not child.code.co_flags & inspect.CO_GENERATOR:
        return run_child(child)
    # a generator: its body runs when it is read (generators.py)
    child.suspends = True
    gen = GeneratorVar(child, fn, list(args), dict(kwargs))
    root = frame.state.graph.frames[0]
    if root.is_root and root.current is not None and root.current.opname == "CALL":
        gen.made_at = root.current.offset
    frame.state.generators.append(gen)
    return gen


def child_frame(frame: "Frame", fn: Var, args: list[Var], kwargs: dict[str, Var]) -> "Frame":
    """The frame that runs ``fn(*args, **kwargs)``, not started (a generator function's frame is its
    generator's body)."""
    if isinstance(fn, FunctionVar):
        code, globals_dict = fn.code, fn.globals
        defaults, kwdefaults = fn.defaults, fn.kwdefaults
        closure = dict(zip(code.co_freevars, fn.closure))

        def default_of(key: int | str) -> Var:
            return defaults[key] if isinstance(key, int) else kwdefaults[key]
    else:
        func = fn.value
        code, globals_dict = func.__code__, func.__globals__
        defaults, kwdefaults = func.__defaults__ or (), func.__kwdefaults__ or {}
        source = function_source(func, fn.source)
        closure = closure_cells(frame, func, source)
        frame.state.guards.identity(AttrSource(source, "__code__"), code)  # its code may be replaced

        def default_of(key: int | str) -> Var:  # read through the function, so guarded
            return default(frame, func, source, key)
    if code.co_flags & _GENERATOR_FLAGS and not code.co_flags & inspect.CO_GENERATOR:
        frame.fail(f"{code.co_name} is a coroutine (not supported)")
    state = frame.state
    if state.depth >= MAX_INLINE_DEPTH:
        frame.fail("inlining is too deep (recursion?)")
    bound = _bind(frame, code, len(defaults), kwdefaults, default_of, args, kwargs)
    return type(frame)(state, code, globals_dict, bound, closure)


def closure_cells(frame: "Frame", func: types.FunctionType, source: Source) -> dict[str, Any]:
    """The cells of ``func``: real cells, read through ``source`` for a closure guarded on its
    code (``builder.closure_read_through``), else (the function guarded itself) as they are."""
    cells = func.__closure__ or ()
    if not closure_read_through(func, source):
        return dict(zip(func.__code__.co_freevars, cells))
    table = AttrSource(source, "__closure__")
    return {name: frame.state.real_cell(cell, ItemSource(table, i))
            for i, (name, cell) in enumerate(zip(func.__code__.co_freevars, cells))}


def run_child(child: "Frame") -> Var:
    """Run (or go on running) a child frame, one level deeper."""
    state = child.state
    state.depth += 1
    try:
        return child.run()
    finally:
        state.depth -= 1


def call_dunder(frame: "Frame", obj: Var, name: str, args: list[Var]) -> Var | None:
    """Inline ``type(obj).<name>`` when it is Python code; None when it is not."""
    cls = obj.python_type()
    method = inspect.getattr_static(cls, name, None)
    if isinstance(method, types.FunctionType):
        return inline_call(frame, class_function(frame.state, cls, name, method), [obj, *args], {})
    return None


def class_member(frame: "Frame", obj: Var, cls: type, name: str, static: Any) -> Var | None:
    """``obj.name`` when ``static`` (found on ``obj``'s class ``cls``) is a Python method, static
    or class method, property or other descriptor (its getter inlined); None for anything else. The class is read
    through a guard (``functions.class_function``)."""
    if isinstance(static, property) and isinstance(static.fget, types.FunctionType):
        return inline_call(frame, class_function(frame.state, cls, name, static), [obj], {})
    if isinstance(static, types.FunctionType):
        return BoundMethodVar(class_function(frame.state, cls, name, static), obj)
    if isinstance(static, staticmethod) and isinstance(static.__func__, types.FunctionType):
        return class_function(frame.state, cls, name, static)
    if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
        return BoundMethodVar(class_function(frame.state, cls, name, static), ConstVar(cls))
    getter = inspect.getattr_static(type(static), "__get__", None)
    if isinstance(getter, types.FunctionType) and type(static).__module__.partition(".")[0] not in _STDLIB:
        # a descriptor the program wrote: its __get__ inlined, so that it sees the stores made
        # before it (the standard library's, enum members' ``value`` or ``cached_property``, are
        # read as they are)
        return inline_call(frame, ConstVar(getter), [ConstVar(static), obj, ConstVar(cls)], {})
    return None


_STDLIB = frozenset(sys.stdlib_module_names)


#: a function's attributes that are not in its ``__dict__`` and may be stored (``functools.wraps``)
_SLOTS = ("__name__", "__qualname__", "__doc__", "__module__", "__annotations__")


@handles_attr(FunctionVar)
def _function_attr(frame: "Frame", obj: FunctionVar, name: str) -> Var:
    if name in obj.slots:
        return obj.slots[name]
    if name in ("__name__", "__qualname__"):
        return ConstVar(obj.name)
    if name == "__module__":
        return ConstVar(obj.globals.get("__name__"))
    if name == "__doc__":
        first = obj.code.co_consts[0] if obj.code.co_consts and obj.code.co_name != "<lambda>" else None
        return ConstVar(first if isinstance(first, str) else None)
    if name == "__annotations__":
        return DictVar({})
    if name == "__dict__":  # the same table: ``wrapper.__dict__.update(...)`` stores on the function
        return DictVar(obj.attrs)
    if name in obj.attrs:
        return obj.attrs[name]
    if name.startswith("__") and name.endswith("__"):
        frame.fail(f"attribute {name!r} of a function made inside the captured code")
    throw(AttributeError(f"'function' object has no attribute {name!r}"))
    raise AssertionError


@handles_store(FunctionVar)
def _function_store(frame: "Frame", obj: FunctionVar, name: str, value: Any, default: bool = False) -> None:
    from .side_effects import DELETED

    table = obj.slots if name in _SLOTS else obj.attrs
    if name.startswith("__") and name.endswith("__") and name not in _SLOTS and name != "__wrapped__":
        frame.fail(f"assignment to attribute {name!r} of a function made inside the captured code")
    if value is DELETED:
        table.pop(name, None)
    else:
        table[name] = value


@handles_truth(FunctionVar)
def _function_truth(frame: "Frame", var: FunctionVar) -> bool:
    return True


__all__ = ["call_dunder", "child_frame", "class_member", "inline_call", "run_child"]
