"""Resume functions: new code objects that continue a function after a graph break.

A resume function takes the values that were on the stack and the live locals as arguments,
pushes the stack back, and jumps to the instruction where execution continues; the rest is
the original bytecode, unchanged. The ``bytecode`` package computes the stack depth, the jump
offsets, and the exception and line tables.

A break inside ``with`` and ``try`` blocks: the body keeps the original exception table, so
jumping into a protected range puts the resume function inside the same blocks, with the
same handlers. A ``with`` block over a modelled context (a :class:`ContextSpec` slot) is
entered again at the start: the prologue makes the context, ``BEFORE_WITH`` enters it and
leaves its ``__exit__`` in the slot where the original code, and its exception handler, call
it when the block ends or raises. A resume function can also start at a handler, with the
exception that the instruction run in Python raised (an ``EXC`` slot).
"""
from __future__ import annotations

import dis
import types
from typing import Sequence

from bytecode import Bytecode, Instr, Label, TryBegin
from bytecode.flags import CompilerFlags

from .compat import call_instrs
from .contexts import ContextSpec

PREFIX_OPS = {"RESUME", "COPY_FREE_VARS", "MAKE_CELL", "NOP"}

#: stack slot kinds: a value passed as an argument, a NULL marker, a list to iterate over,
#: a value the capture passes along unread (contexts.Opaque), an exception for a handler;
#: a ContextSpec slot is a modelled context entered again by the prologue. CELL marks an
#: argument that is a closure cell of the function (see :func:`make_resume_code`).
VALUE, NULL_SLOT, ITER, OPAQUE, EXC, CELL = "value", "null", "iter", "opaque", "exc", "cell"
SlotKind = str | ContextSpec

#: the attribute of a resume function naming its arguments of kind OPAQUE or EXC
ARG_KINDS = "__ember_arg_kinds__"


def takes_argument(kind: SlotKind) -> bool:
    return kind != NULL_SLOT and not isinstance(kind, ContextSpec)


def ordinal_of(code: types.CodeType, offset: int) -> int:
    """Position of the instruction at ``offset`` among instructions, EXTENDED_ARG left out."""
    ordinal = 0
    for ins in dis.get_instructions(code):
        if ins.offset == offset:
            return ordinal
        if ins.opname != "EXTENDED_ARG":
            ordinal += 1
    raise ValueError(f"no instruction at offset {offset}")


def stack_arg(code: types.CodeType, offset: int, i: int) -> str:
    """Argument name of stack slot ``i``: a name ``code`` does not use yet (a resume function's
    own stack arguments are locals of the resume functions made from it)."""
    name = f"___stack{offset}_{i}"
    while name in code.co_varnames:
        name += "_"
    return name


def make_resume_code(
    code: types.CodeType, offset: int, layout: Sequence[SlotKind], local_names: Sequence[str]
) -> types.CodeType:
    """A code object that resumes ``code`` at ``offset`` with the stack given by ``layout``.

    A cell variable of ``code`` named in ``local_names`` is passed as the cell itself, shared
    with the closures made before the break: it stays a cell variable, and its ``MAKE_CELL``
    is left out, so the argument's slot (CPython keeps one slot for a name that is both an
    argument and a cell) holds that cell, as ``MAKE_CELL`` would have left it."""
    target = ordinal_of(code, offset)
    bc = Bytecode.from_code(code)
    _keep_handler_depths(code, bc)
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
        ins = body.pop(0)
        if not (ins.name == "MAKE_CELL" and ins.arg.name in local_names):
            prefix.append(ins)
    line = code.co_firstlineno
    prologue: list = []
    for i, kind in enumerate(layout):
        if isinstance(kind, ContextSpec):  # make the context and enter it: its __exit__ stays
            prologue += [Instr("PUSH_NULL", lineno=line), Instr("LOAD_CONST", kind.factory, lineno=line)]
            prologue += [Instr("LOAD_CONST", arg, lineno=line) for arg in kind.args]
            prologue += call_instrs(len(kind.args), line)
            prologue += [Instr("BEFORE_WITH", lineno=line), Instr("POP_TOP", lineno=line)]
        elif kind == NULL_SLOT:
            prologue.append(Instr("PUSH_NULL", lineno=line))
        else:
            prologue.append(Instr("LOAD_FAST", stack_arg(code, offset, i), lineno=line))
            if kind == ITER:
                prologue.append(Instr("GET_ITER", lineno=line))
    prologue.append(Instr("JUMP_FORWARD", label, lineno=line))
    new = Bytecode(prefix + prologue + body)
    for attr in ("filename", "first_lineno", "freevars", "cellvars", "docstring"):
        setattr(new, attr, getattr(bc, attr))
    # the user's name, file and lines: a traceback through it reads as the user's function
    new.name = code.co_name
    new.qualname = code.co_qualname
    new.argnames = [stack_arg(code, offset, i) for i, k in enumerate(layout) if takes_argument(k)] + list(local_names)
    new.argcount = len(new.argnames)
    new.posonlyargcount = 0
    new.kwonlyargcount = 0
    new.flags = CompilerFlags(bc.flags & ~(CompilerFlags.VARARGS | CompilerFlags.VARKEYWORDS))
    # The prologue jumps past the start of the blocks it lands in, where ``bytecode`` would
    # compute their handlers' stack depths: keep the original ones (the prologue rebuilds
    # the same stack) and leave room for the original stack plus the contexts being made.
    extra = max((len(k.args) for k in layout if isinstance(k, ContextSpec)), default=0) + 2
    return new.to_code(stacksize=code.co_stacksize + len(layout) + extra, compute_exception_stack_depths=False)


def _keep_handler_depths(code: types.CodeType, bc: Bytecode) -> None:
    """Give ``bytecode``'s try blocks the stack depths of ``code``'s exception table (one
    block per entry, in order), which it cannot compute for blocks a resume jumps into."""
    entries = dis._parse_exception_table(code)  # type: ignore[attr-defined]
    begins = [item for item in bc if isinstance(item, TryBegin)]
    if len(begins) != len(entries) or any(b.push_lasti != e.lasti for b, e in zip(begins, entries)):
        raise ValueError("cannot match the exception table of the code to resume")
    for begin, entry in zip(begins, entries):
        begin.stack_depth = entry.depth


def make_resume_function(
    fn: types.FunctionType, offset: int, layout: Sequence[SlotKind], local_names: Sequence[str],
    opaque_locals: Sequence[str] = (),
) -> types.FunctionType:
    code = make_resume_code(fn.__code__, offset, layout, local_names)
    resume = types.FunctionType(code, fn.__globals__, f"{code.co_name}_resume_at_{offset}", None, fn.__closure__)
    kinds = {stack_arg(fn.__code__, offset, i): k for i, k in enumerate(layout) if k in (OPAQUE, EXC)}
    kinds.update((name, OPAQUE) for name in opaque_locals)
    kinds.update((name, CELL) for name in local_names if name in code.co_cellvars)
    setattr(resume, ARG_KINDS, kinds)
    return resume
