"""Graph breaks: end the graph at an instruction the capture cannot handle, run that one
instruction in plain Python, and continue in a resume function that ember compiles lazily.

On a break in the outermost frame, the entry's runner (generated Python) calls the graph
captured so far, rebuilds the stack and the live locals from its outputs, performs the
breaking instruction natively (a call, a branch on a tensor, an attribute store...), and
returns what the resume function returns. When the break happened inside an inlined call,
the break is at the call site and the callee runs through ember's compile on its own.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..errors import Unsupported
from .compat import Instr
from .output import OutputBuilder
from .resume import ITER, NULL_SLOT, VALUE, in_exception_range
from .torch_ops import BINARY_OPS, COMPARE_OPS
from .values import NULL, IteratorVar, Var

if TYPE_CHECKING:
    from .frame import Frame, Snapshot

_JUMPS = {"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"}
_SIMPLE = {"CALL", "CALL_FUNCTION_EX", "STORE_ATTR", "STORE_SUBSCR", "STORE_GLOBAL", "LOAD_ATTR",
           "LOAD_METHOD", "BINARY_SUBSCR", "BINARY_OP", "COMPARE_OP", "UNARY_NOT", "GET_ITER",
           "DELETE_SUBSCR", "CONTAINS_OP", "IS_OP", "BEFORE_WITH"}


@dataclasses.dataclass
class ResumeRequest:
    """A resume point the runtime must turn into a compiled resume function."""

    offset: int
    layout: tuple[str, ...]
    local_names: tuple[str, ...]
    const_name: str  # how the runner refers to the compiled resume function


@dataclasses.dataclass
class BreakPlan:
    """The Python lines that finish an entry after the graph, and the resumes they call."""

    lines: list[str]
    resumes: list[ResumeRequest]
    reason: str


def can_break(frame: "Frame", exc: Unsupported) -> str | None:
    """None when a break is possible at the root frame's current instruction, else why not."""
    snap = frame.snapshot
    if snap is None:
        return "no instruction to break at"
    ins = snap.instr
    if ins.opname not in _SIMPLE and ins.opname not in _JUMPS:
        return f"cannot break at a {ins.opname} instruction"
    if frame.code.co_cellvars:
        return "cannot break in a function whose variables are captured by inner functions"
    if in_exception_range(frame.code, ins.offset):
        return "cannot break inside a try/with block"
    return None


class _Writer:
    """Builds the runner's tail: stack slots as locals of the runner, then the native step."""

    def __init__(self, frame: "Frame", snap: "Snapshot", out: OutputBuilder, callee: str) -> None:
        self.frame = frame
        self.snap = snap
        self.out = out
        self.callee = callee
        self.lines: list[str] = []
        self.resumes: list[ResumeRequest] = []
        self.slots: list[tuple[str, str]] = []  # (kind, expression) per stack slot
        # a container on the stack and in a local (or twice anywhere) stays one object
        self.lines += out.share([*snap.stack, *snap.locals.values(), *snap.side_effects.values()])
        for i, var in enumerate(snap.stack):
            self.slots.append(self._slot(i, var))
        self.local_exprs: dict[str, str] = {}
        for name, var in sorted(snap.locals.items()):
            if var is NULL:
                continue
            self.local_exprs[name] = self.out.expr(var)
        for name in sorted(snap.lazy_args):
            self.local_exprs[name] = f"L[{name!r}]"

    def _slot(self, i: int, var: Var) -> tuple[str, str]:
        if var is NULL:
            return NULL_SLOT, ""
        if isinstance(var, IteratorVar):
            items = ", ".join(self.out.expr(v) for v in var.items[var.index:])
            self.lines.append(f"    ___s{i} = [{items}]")
            return ITER, f"___s{i}"
        self.lines.append(f"    ___s{i} = {self.out.expr(var)}")
        return VALUE, f"___s{i}"

    def pop(self, n: int = 1) -> list[tuple[str, str]]:
        taken = self.slots[len(self.slots) - n:]
        del self.slots[len(self.slots) - n:]
        return taken

    def resume_call(self, offset: int) -> str:
        layout = tuple(kind for kind, _ in self.slots)
        names = tuple(self.local_exprs)
        const = f"___resume{len(self.resumes)}"
        self.resumes.append(ResumeRequest(offset, layout, names, const))
        args = [expr for kind, expr in self.slots if kind != NULL_SLOT] + [self.local_exprs[n] for n in names]
        return f"{const}({', '.join(args)})"


def plan_break(frame: "Frame", out: OutputBuilder, next_offset: int, callee: str) -> BreakPlan:
    """Write the native step for the snapshot's instruction and the calls of its resumes."""
    snap = frame.snapshot
    assert snap is not None
    ins: Instr = snap.instr
    w = _Writer(frame, snap, out, callee)
    op = ins.opname
    emit = w.lines.append

    def value(slot: tuple[str, str]) -> str:
        kind, expr = slot
        if kind == NULL_SLOT:
            raise Unsupported("a NULL stack slot where a value is needed")
        return f"iter({expr})" if kind == ITER else expr

    if op in _JUMPS:
        (cond,) = w.pop()
        test = {"POP_JUMP_IF_FALSE": "not ({})", "POP_JUMP_IF_TRUE": "{}",
                "POP_JUMP_IF_NONE": "({}) is None", "POP_JUMP_IF_NOT_NONE": "({}) is not None"}[op]
        emit(f"    if {test.format(value(cond))}:")
        emit(f"        return {w.resume_call(ins.argval)}")
        emit(f"    return {w.resume_call(next_offset)}")
        return BreakPlan(w.lines, w.resumes, "")
    if op == "CALL":
        argc = ins.arg
        taken = w.pop(argc + 2)
        head, fn, args = taken[0], taken[1], taken[2:]
        if head[0] != NULL_SLOT:
            fn, args = head, [taken[1]] + list(args)
        arg_exprs = [value(a) for a in args]
        kw = snap.kw_names
        positional = arg_exprs[: len(arg_exprs) - len(kw)]
        keywords = [f"{k}={v}" for k, v in zip(kw, arg_exprs[len(arg_exprs) - len(kw):])]
        emit(f"    ___r = {callee}({value(fn)})({', '.join(positional + keywords)})")
    elif op == "CALL_FUNCTION_EX":
        kwargs = w.pop()[0] if ins.arg & 1 else None
        (args,) = w.pop()
        (fn,) = w.pop()
        if w.slots and w.slots[-1][0] == NULL_SLOT:
            w.pop()
        star_kw = f", **{value(kwargs)}" if kwargs else ""
        emit(f"    ___r = {callee}({value(fn)})(*{value(args)}{star_kw})")
    elif op == "STORE_ATTR":
        obj, val = w.pop(), w.pop()
        emit(f"    {value(obj[0])}.{ins.argval} = {value(val[0])}")
        return _resume_after(w, next_offset, None)
    elif op == "STORE_SUBSCR":
        index, obj, val = w.pop(), w.pop(), w.pop()
        emit(f"    {value(obj[0])}[{value(index[0])}] = {value(val[0])}")
        return _resume_after(w, next_offset, None)
    elif op == "DELETE_SUBSCR":
        index, obj = w.pop(), w.pop()
        emit(f"    del {value(obj[0])}[{value(index[0])}]")
        return _resume_after(w, next_offset, None)
    elif op == "STORE_GLOBAL":
        (val,) = w.pop()
        emit(f"    {out.consts.name(frame.globals, 'g')}[{ins.argval!r}] = {value(val)}")
        return _resume_after(w, next_offset, None)
    elif op in ("LOAD_ATTR", "LOAD_METHOD"):
        (obj,) = w.pop()
        emit(f"    ___r = {value(obj)}.{ins.argval}")
        method = op == "LOAD_METHOD" or (ins.arg is not None and ins.arg & 1 and _py312())
        if method:
            w.slots.append((NULL_SLOT, ""))
    elif op == "BINARY_SUBSCR":
        index, obj = w.pop(), w.pop()
        emit(f"    ___r = {value(obj[0])}[{value(index[0])}]")
    elif op in ("BINARY_OP", "COMPARE_OP"):
        b, a = w.pop(), w.pop()
        table = BINARY_OPS if op == "BINARY_OP" else COMPARE_OPS
        symbol = ins.argrepr if op == "BINARY_OP" else _compare_symbol(ins)
        fn = out.consts.name(table[symbol], "op")
        emit(f"    ___r = {fn}({value(a[0])}, {value(b[0])})")
    elif op == "CONTAINS_OP":
        container, item = w.pop(), w.pop()
        emit(f"    ___r = ({value(item[0])} {'not in' if ins.arg else 'in'} {value(container[0])})")
    elif op == "IS_OP":
        b, a = w.pop(), w.pop()
        emit(f"    ___r = ({value(a[0])} {'is not' if ins.arg else 'is'} {value(b[0])})")
    elif op == "UNARY_NOT":
        (a,) = w.pop()
        emit(f"    ___r = not {value(a)}")
    elif op == "BEFORE_WITH":
        (ctx,) = w.pop()
        emit(f"    ___ctx = {value(ctx)}")
        emit("    ___exit = ___ctx.__exit__")
        emit("    ___r = ___ctx.__enter__()")
        w.slots.append((VALUE, "___exit"))
    elif op == "GET_ITER":
        (a,) = w.pop()
        emit(f"    ___r = list({value(a)})")
        return _resume_after(w, next_offset, (ITER, "___r"))
    else:  # pragma: no cover - can_break filters
        raise Unsupported(f"cannot break at {op}")
    return _resume_after(w, next_offset, (VALUE, "___r"))


def _resume_after(w: _Writer, offset: int, pushed: tuple[str, str] | None) -> BreakPlan:
    if pushed is not None:
        w.slots.append(pushed)
    w.lines.append(f"    return {w.resume_call(offset)}")
    return BreakPlan(w.lines, w.resumes, "")


def _py312() -> bool:
    from .compat import PY312

    return PY312


def _compare_symbol(ins: Instr) -> str:
    from .compat import compare_op

    return compare_op(ins)


__all__ = ["BreakPlan", "ResumeRequest", "can_break", "plan_break"]
