"""Resume functions: new code objects that continue a function after a graph break.

A resume function takes the values that were on the stack and the live locals as arguments,
pushes the stack back, and jumps to the instruction where execution continues; the rest is
the original bytecode, unchanged. The ``bytecode`` package computes the stack depth, the jump
offsets, and the exception and line tables.
"""
from __future__ import annotations

import dis
import types
from typing import Sequence

from bytecode import Bytecode, Instr, Label
from bytecode.flags import CompilerFlags

PREFIX_OPS = {"RESUME", "COPY_FREE_VARS", "MAKE_CELL", "NOP"}

#: stack slot kinds: a value passed as an argument, a NULL marker, a list to iterate over
VALUE, NULL_SLOT, ITER = "value", "null", "iter"


def ordinal_of(code: types.CodeType, offset: int) -> int:
    """Position of the instruction at ``offset`` among instructions, EXTENDED_ARG left out."""
    ordinal = 0
    for ins in dis.get_instructions(code):
        if ins.offset == offset:
            return ordinal
        if ins.opname != "EXTENDED_ARG":
            ordinal += 1
    raise ValueError(f"no instruction at offset {offset}")


def stack_arg(offset: int, i: int) -> str:
    """Argument name of stack slot ``i`` (unique per resume point, so resumes can nest)."""
    return f"___stack{offset}_{i}"


def make_resume_code(
    code: types.CodeType, offset: int, layout: Sequence[str], local_names: Sequence[str]
) -> types.CodeType:
    """A code object that resumes ``code`` at ``offset`` with the stack given by ``layout``."""
    if code.co_cellvars:
        raise ValueError("functions with cell variables cannot be resumed")
    target = ordinal_of(code, offset)
    bc = Bytecode.from_code(code)
    label = Label()
    body: list = []
    count = 0
    for item in bc:
        if isinstance(item, Instr):
            if count == target:
                body.append(label)
            count += 1
        body.append(item)
    prefix = []
    while body and isinstance(body[0], Instr) and body[0].name in PREFIX_OPS and body[0].name != "NOP":
        prefix.append(body.pop(0))
    line = code.co_firstlineno
    prologue: list = []
    for i, kind in enumerate(layout):
        if kind == NULL_SLOT:
            prologue.append(Instr("PUSH_NULL", lineno=line))
        else:
            prologue.append(Instr("LOAD_FAST", stack_arg(offset, i), lineno=line))
            if kind == ITER:
                prologue.append(Instr("GET_ITER", lineno=line))
    prologue.append(Instr("JUMP_FORWARD", label, lineno=line))
    new = Bytecode(prefix + prologue + body)
    for attr in ("filename", "first_lineno", "freevars", "cellvars", "docstring"):
        setattr(new, attr, getattr(bc, attr))
    new.name = f"__resume_{code.co_name}_at_{offset}"
    new.qualname = new.name
    new.argnames = [stack_arg(offset, i) for i, k in enumerate(layout) if k != NULL_SLOT] + list(local_names)
    new.argcount = len(new.argnames)
    new.posonlyargcount = 0
    new.kwonlyargcount = 0
    new.flags = CompilerFlags(bc.flags & ~(CompilerFlags.VARARGS | CompilerFlags.VARKEYWORDS))
    return new.to_code()


def make_resume_function(
    fn: types.FunctionType, offset: int, layout: Sequence[str], local_names: Sequence[str]
) -> types.FunctionType:
    code = make_resume_code(fn.__code__, offset, layout, local_names)
    return types.FunctionType(code, fn.__globals__, code.co_name, None, fn.__closure__)


def in_exception_range(code: types.CodeType, offset: int) -> bool:
    """True when ``offset`` is protected by a try/with block (we do not break there)."""
    try:
        entries = dis._parse_exception_table(code)  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover
        return True
    return any(e.start <= offset < e.end for e in entries)
