"""Bytecode differences between Python 3.11 and 3.12, kept in one place.

The interpreter reads instructions through :func:`instructions`, which normalises the names it
sees (3.11's ``POP_JUMP_FORWARD_IF_FALSE`` and ``POP_JUMP_BACKWARD_IF_FALSE`` become
``POP_JUMP_IF_FALSE``) and records, per version, where an exhausted ``FOR_ITER`` continues.
"""
from __future__ import annotations

import dataclasses
import dis
import sys
import types
from typing import Any

PY312 = sys.version_info >= (3, 12)
if sys.version_info < (3, 11) or sys.version_info >= (3, 13):
    raise ImportError("ember's frame capture supports Python 3.11 and 3.12")


@dataclasses.dataclass(frozen=True)
class Instr:
    opname: str
    arg: int | None
    argval: Any
    argrepr: str
    offset: int
    lineno: int | None
    index: int


def _normalise(opname: str) -> str:
    for direction in ("FORWARD_", "BACKWARD_"):
        if opname.startswith("POP_JUMP_" + direction):
            return "POP_JUMP_" + opname[len("POP_JUMP_" + direction):]
    return opname


def instructions(code: types.CodeType) -> list[Instr]:
    result = []
    lineno = code.co_firstlineno
    for i, ins in enumerate(dis.get_instructions(code)):
        if ins.positions is not None and ins.positions.lineno is not None:
            lineno = ins.positions.lineno
        elif ins.starts_line is not None and not isinstance(ins.starts_line, bool):
            lineno = ins.starts_line
        result.append(Instr(_normalise(ins.opname), ins.arg, ins.argval, ins.argrepr, ins.offset, lineno, i))
    return result


def for_iter_exit(instrs: list[Instr], target_index: int) -> int:
    """Index where an exhausted FOR_ITER continues (3.12 jumps over END_FOR)."""
    if PY312 and instrs[target_index].opname == "END_FOR":
        return target_index + 1
    return target_index


def method_bit_load_attr(ins: Instr) -> bool:
    """3.12's LOAD_ATTR with the low bit set behaves like 3.11's LOAD_METHOD."""
    return PY312 and ins.opname == "LOAD_ATTR" and bool(ins.arg & 1)


def compare_op(ins: Instr) -> str:
    return ins.argval if isinstance(ins.argval, str) else dis.cmp_op[ins.arg >> 4 if PY312 else ins.arg]


def call_instrs(argc: int, lineno: int) -> list[Any]:
    """``bytecode`` instructions that call ``callable(*argc args)`` pushed after a NULL."""
    from bytecode import Instr as BInstr

    if PY312:
        return [BInstr("CALL", argc, lineno=lineno)]
    return [BInstr("PRECALL", argc, lineno=lineno), BInstr("CALL", argc, lineno=lineno)]
