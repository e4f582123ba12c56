"""What capture calls instead of tracing: the standard library and disabled functions.

As torch.compile's skip files: a function of the standard library holds no torch work, so its
bytecode is never interpreted. Called with constants it is evaluated at capture time when it
is known to be pure (``math``, ``operator``, ``re``...); any other call of it is a graph break,
at which it runs as it is, once per call, as in eager (``warnings.warn``, ``logging``,
``traceback.print_stack``). A few standard modules whose functions do run user or torch code
(``functools``, ``itertools``, ``contextlib``, ``copy``, ``dataclasses``...) stay inlined.

A function marked with ``torch.compiler.disable`` or ``ember.disable`` is never traced either:
calling it is a graph break and it runs eagerly, and nothing it calls is compiled; so are the
graph break markers, ``ember.graph_break()`` and torch's own ``graph_break()`` marker.
"""
from __future__ import annotations

import sys
import types
from typing import Any

import torch

#: standard modules whose Python code is traced, because it calls back into user code
INLINED_STDLIB = frozenset({
    "functools", "itertools", "collections", "_collections_abc", "contextlib", "copy", "dataclasses",
    "enum", "abc", "typing", "types", "operator", "math", "inspect", "weakref", "_weakrefset", "copyreg",
})

_STDLIB = frozenset(sys.stdlib_module_names) - INLINED_STDLIB


#: the code of the wrapper ``torch._disable_dynamo`` puts around torch's own functions
#: (``Optimizer.zero_grad``): it marks them disabled only when first called
_TORCH_DISABLED_CODE = torch._disable_dynamo(lambda: None).__code__


def is_disabled(fn: Any) -> bool:
    """True for functions marked to run eagerly (``torch.compiler.disable``, ``ember.disable``,
    torch's ``_disable_dynamo``)."""
    try:
        return bool(getattr(fn, "_torchdynamo_disable", False) or getattr(fn, "__ember_disable__", False)
                    or getattr(fn, "__code__", None) is _TORCH_DISABLED_CODE)
    except Exception:  # objects with odd __getattr__
        return False


def _module_of(fn: Any) -> str | None:
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    module = getattr(fn, "__module__", None)
    if isinstance(fn, types.FunctionType) and isinstance(fn.__globals__.get("__name__"), str):
        module = fn.__globals__["__name__"]
    return module if isinstance(module, str) else None


def is_skipped(fn: Any) -> bool:
    """True for Python functions of the standard library that capture must call, not trace."""
    if not isinstance(fn, (types.FunctionType, types.MethodType)):
        return False
    module = _module_of(fn)
    return module is not None and module.partition(".")[0] in _STDLIB


#: functions whose call is a graph break and nothing more, by module (as its dotted parts: a name
#: compared, never imported) and qualified name; torch's is recognised without torch._dynamo
GRAPH_BREAK_MARKERS = frozenset({(("torch", "_dynamo", "decorators"), "graph_break"), (("ember", "api"), "graph_break")})


def is_graph_break_marker(fn: Any) -> bool:
    try:
        module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
        return isinstance(module, str) and (tuple(module.split(".")), name) in GRAPH_BREAK_MARKERS
    except Exception:  # objects with odd __getattr__
        return False


def marker_ignored(fn: Any, caller_globals: dict) -> bool:
    """A graph break marker that torch's own code calls: it serves torch.compile's pipeline (the
    optimizers' ``step`` breaks so that AOT sees its no_grad), not the user; ember breaks only
    where user code asks, as it captured those calls before."""
    caller = caller_globals.get("__name__")
    return is_graph_break_marker(fn) and isinstance(caller, str) and caller.partition(".")[0] == "torch"


#: torch.compile's shape hints that torch's own code gives about its tensors (``flex_attention`` marks
#: its head sizes static): no-ops for ember, whose sizes start specialised
SHAPE_HINTS = frozenset({(("torch", "_dynamo", "decorators"), name)
                         for name in ("mark_static", "mark_dynamic", "maybe_mark_dynamic", "mark_unbacked")})


def hint_ignored(fn: Any, caller_globals: dict) -> bool:
    """A shape hint called by torch's own code (see :data:`SHAPE_HINTS`)."""
    try:
        module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
        named = isinstance(module, str) and (tuple(module.split(".")), name) in SHAPE_HINTS
    except Exception:  # objects with odd __getattr__
        return False
    caller = caller_globals.get("__name__")
    return named and isinstance(caller, str) and caller.partition(".")[0] == "torch"


def never_traced(fn: Any) -> str | None:
    """Why ``fn`` is called natively rather than traced, or None when it is traced."""
    if is_graph_break_marker(fn):
        return "asks for a graph break (graph_break())"
    if is_disabled(fn):
        return "is marked disabled (torch.compiler.disable / ember.disable)"
    if is_skipped(fn):
        return "is in the standard library (called, not traced)"
    return None


__all__ = ["GRAPH_BREAK_MARKERS", "INLINED_STDLIB", "SHAPE_HINTS", "hint_ignored", "is_disabled", "is_graph_break_marker", "is_skipped", "marker_ignored",
           "never_traced"]
