"""Small generated functions on the hot path: argument binders and compiled-entry runners.

Generated code is plain Python compiled once per function (binder) or per cache entry
(runner), so a call of a compiled function costs one binder call, the guard checks (which
also gather the graph inputs), and one runner call around the backend's callable.
"""
from __future__ import annotations

import builtins
import dis
import inspect
import types
from typing import Any, Callable

from .tracebacks import pass_through, register_runner, relocate


def _exec(src: str, name: str, namespace: dict[str, Any]) -> Callable:
    exec(compile(src, f"<ember {name}>", "exec"), namespace)
    fn = namespace[name]
    fn.__ember_source__ = src
    check_names(fn)
    return fn


def check_names(fn: Callable) -> None:
    """Generated code must name only what it binds: raise NameError now, while ember can still
    fall back, for a global that ``fn`` reads and neither its globals nor the builtins hold
    (rather than when the user's program runs it)."""
    unbound = sorted(name for name in _global_reads(fn.__code__)
                     if name not in fn.__globals__ and not hasattr(builtins, name))
    if unbound:
        raise NameError(f"generated code {fn.__code__.co_name} names what it does not bind: {', '.join(unbound)}")


def _global_reads(code: types.CodeType) -> set[str]:
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_reads(const)
    return names


def _positional_names(fn: Callable) -> list[str] | None:
    """Argument names of a function whose names are not all identifiers (resume functions of
    code rewritten by pytest carry locals such as ``@py_assert1``); None otherwise."""
    code = fn.__code__
    names = list(code.co_varnames[: code.co_argcount])
    if all(n.isidentifier() for n in names) or code.co_kwonlyargcount or code.co_flags & 0x0C:
        return None
    return names


def make_binder(fn: Callable) -> Callable[..., dict]:
    """``bind(*args, **kwargs) -> {param: value}`` with ``fn``'s own signature; a call that does
    not fit raises the TypeError Python would, naming ``fn``. A parameter left out gets the
    default ``fn`` has at that call (``fn.__defaults__`` may be replaced after compiling)."""
    binder = _make_binder(fn)
    binder.__code__ = binder.__code__.replace(co_name=fn.__name__, co_qualname=fn.__qualname__)
    binder.__name__, binder.__qualname__ = fn.__name__, fn.__qualname__
    pass_through(binder)
    return binder


def _make_binder(fn: Callable) -> Callable[..., dict]:
    names = _positional_names(fn)
    if names is not None:
        return _exec("def ___bind(*a):\n    return dict(zip(___names, a))\n", "___bind", {"___names": names})
    sig = inspect.signature(fn, follow_wrapped=False)
    params, names = [], []
    namespace: dict[str, Any] = {"___fn": fn, "___left_out": _LEFT_OUT, "___default": _default}
    fills = []  # a parameter left out reads its default now, as Python does at each call
    positional = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    seen_kwonly_marker = False
    for i, p in enumerate(sig.parameters.values()):
        names.append(p.name)
        default = ""
        if p.default is not inspect.Parameter.empty:
            key = p.name if p.kind == p.KEYWORD_ONLY else positional.index(p.name) - len(positional)
            if _default(fn, key, None) is p.default:  # read from the function when it is called
                default = "=___left_out"
                fills.append(f"    if {p.name} is ___left_out:\n        {p.name} = ___default(___fn, {key!r})\n")
            else:  # a signature of its own (``__signature__``): its defaults, as given
                namespace[f"___d{i}"] = p.default
                default = f"=___d{i}"
        if p.kind == p.VAR_POSITIONAL:
            params.append(f"*{p.name}")
            seen_kwonly_marker = True
        elif p.kind == p.VAR_KEYWORD:
            params.append(f"**{p.name}")
        elif p.kind == p.KEYWORD_ONLY:
            if not seen_kwonly_marker:
                params.append("*")
                seen_kwonly_marker = True
            params.append(f"{p.name}{default}")
        else:
            params.append(f"{p.name}{default}")
        if p.kind == p.POSITIONAL_ONLY and (
            i + 1 == len(sig.parameters) or list(sig.parameters.values())[i + 1].kind != p.POSITIONAL_ONLY
        ):
            params.append("/")
    body = ", ".join(f"{n!r}: {n}" for n in names)
    src = f"def ___bind({', '.join(params)}):\n{''.join(fills)}    return {{{body}}}\n"
    return _exec(src, "___bind", namespace)


_LEFT_OUT = object()


def _default(fn: Any, key: int | str, missing: Any = _LEFT_OUT) -> Any:
    """``fn``'s default now for a positional parameter (``key``: its index from the end, as Python
    aligns defaults with the last parameters) or a keyword-only one; ``missing`` when it has none
    (by default, the TypeError of a call that leaves out a required argument)."""
    try:
        return fn.__defaults__[key] if isinstance(key, int) else fn.__kwdefaults__[key]
    except (TypeError, IndexError, KeyError, AttributeError):  # the default was removed after compiling
        if missing is not _LEFT_OUT:
            return missing
        raise TypeError(f"{fn.__name__}() missing required argument: {key!r}") from None


def make_eager_caller(fn: Callable) -> Callable[[dict], Any]:
    """``call(L)``: call ``fn`` with the arguments a binder produced (left out of tracebacks)."""
    caller = _make_eager_caller(fn)
    pass_through(caller)
    return caller


def _make_eager_caller(fn: Callable) -> Callable[[dict], Any]:
    names = _positional_names(fn)
    if names is not None:
        return _exec("def ___call_eager(L):\n    return ___fn(*L.values())\n", "___call_eager", {"___fn": fn})
    sig = inspect.signature(fn, follow_wrapped=False)
    parts = []
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            parts.append(f"*L[{p.name!r}]")
        elif p.kind == p.VAR_KEYWORD:
            parts.append(f"**L[{p.name!r}]")
        elif p.kind == p.KEYWORD_ONLY:
            parts.append(f"{p.name}=L[{p.name!r}]")
        else:
            parts.append(f"L[{p.name!r}]")
    src = f"def ___call_eager(L):\n    return ___fn({', '.join(parts)})\n"
    return _exec(src, "___call_eager", {"___fn": fn})


def make_runner(
    compiled: Callable | None,
    tail: list[str],
    namespace: dict[str, Any],
    user_code: types.CodeType,
    break_line: int | None = None,
) -> Callable[[dict, tuple], Any]:
    """``run(L, inputs)``: call the compiled graph on the inputs the guard gathered, then
    ``tail`` (which rebuilds the result, or performs a graph break's native step and calls a
    resume function). Its frame reads as ``user_code``'s function: the graph's call at the
    function's first line, the rest at the line of the break (see tracebacks.py)."""
    namespace = dict(namespace)
    lines = ["def ___run(L, ___inputs):"]
    if compiled is not None:
        namespace["___compiled"] = compiled
        lines.append("    ___o = ___compiled(*___inputs)")
    graph_lines = len(lines)
    lines.extend(tail)
    runner = _exec("\n".join(lines) + "\n", "___run", namespace)
    first, rest = user_code.co_firstlineno, break_line or user_code.co_firstlineno
    runner.__code__ = relocate(runner.__code__, user_code.co_filename, user_code.co_name,
                               user_code.co_qualname, lambda n: first if n <= graph_lines else rest)
    register_runner(runner.__code__, user_code)
    return runner
