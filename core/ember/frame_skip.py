"""Which resume functions run as plain Python: those torch.compile would not trace either.

torch.compile skips a frame whose locals hold no tensor and no module (looked for inside lists,
tuples, dicts and namedtuples of exactly those types, not inside other objects) and whose code
names no global torch module (its ``has_tensor_in_frame``): a frame resumed after a break that
holds only a HuggingFace ``ModelOutput`` (a dict subclass) runs untraced, and counts no break.
ember applies the same rule to its resume functions, looking only at the locals that the code
reachable from the resume point reads (torch's resume frames receive only those), and only where
those locals are plain data (no function, no object but containers) and that code loads no global
but builtins, no closure variable, imports nothing and has no exception handler: below a frame
that runs as plain Python ember compiles nothing more (it has no frame hook), so a resume
function that could reach a model or a helper stays compiled.
"""
from __future__ import annotations

import builtins
import dis
import functools
import types
from typing import Any

import torch

_ENDS = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE", "JUMP",
         "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)
_UNSAFE_BUILTINS = {"__import__", "eval", "exec", "compile", "globals", "__build_class__"}


def runs_as_python(fn: types.FunctionType, L: dict[str, Any]) -> bool:
    """Whether resume function ``fn``, called with the locals ``L``, holds no torch work by
    torch.compile's rule and reaches nothing outside its locals but builtins."""
    reach = _reachable_reads(fn.__code__)
    if reach is None:
        return False
    local_names, global_names = reach
    if any(n in fn.__globals__ or not hasattr(builtins, n) or n in _UNSAFE_BUILTINS for n in global_names):
        return False
    values = [L[n] for n in local_names if n in L]
    return not any(map(_holds_tensor, values)) and all(map(_plain, values))


def _plain(value: Any, depth: int = 0) -> bool:
    """Data, not code: scalars, strings, tensors, and lists, tuples and dicts of them (their
    subclasses too, as a ``ModelOutput``). A function or any other object could lead to code that
    ember would have compiled (a model in an attribute, a helper on the stack)."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, torch.Tensor)):
        return True
    if depth > 3:
        return False
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_plain(v, depth + 1) for v in list(value.values()))
    return False


@functools.lru_cache(maxsize=1024)
def _reachable_reads(code: types.CodeType) -> tuple[frozenset[str], frozenset[str]] | None:
    """(locals, globals) read by the instructions reachable from ``code``'s entry, or None where
    that code has exception handlers or nested code, reads a closure variable or imports."""
    if code.co_exceptiontable or any(isinstance(c, types.CodeType) for c in code.co_consts):
        return None
    instructions = list(dis.get_instructions(code))
    at = {ins.offset: i for i, ins in enumerate(instructions)}
    local_names: set[str] = set()
    global_names: set[str] = set()
    todo, seen = [0], set()
    while todo:
        i = todo.pop()
        while i < len(instructions) and i not in seen:
            seen.add(i)
            ins = instructions[i]
            if ins.opname.startswith("LOAD_FAST"):
                local_names.update(ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
            elif ins.opname == "LOAD_GLOBAL":
                global_names.add(ins.argval)
            elif ins.opname in ("LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE", "IMPORT_NAME"):
                return None  # a name from outside the locals (an import may bring torch)
            if ins.opcode in _JUMPS and ins.argval in at:
                todo.append(at[ins.argval])
            if ins.opname in _ENDS:
                break
            i += 1
    return frozenset(local_names), frozenset(global_names)


def _holds_tensor(value: Any, seen: set[int] | None = None) -> bool:
    """torch.compile's ``has_tensor``: a tensor, a module or a module class, or one inside a list,
    tuple, dict or namedtuple (exact types: not inside other objects)."""
    if isinstance(value, (torch.Tensor, torch.nn.Module)) or (
            type(value) is type and issubclass(value, torch.nn.Module)):
        return True
    seen = set() if seen is None else seen
    if id(value) in seen:
        return False
    seen.add(id(value))
    kind = type(value)
    if kind in (list, tuple):
        return any(_holds_tensor(v, seen) for v in value)
    if kind is dict:
        return any(_holds_tensor(v, seen) for v in list(value.values()))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return any(_holds_tensor(getattr(value, f), seen) for f in value._fields)
    return False
