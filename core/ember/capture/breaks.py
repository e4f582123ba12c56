"""Graph breaks: end the graph at an instruction the capture cannot handle, run that one
instruction in plain Python, and continue in a resume function that ember compiles lazily.

On a break in the outermost frame, the entry's runner (generated Python) calls the graph
captured so far, rebuilds the stack and the live locals from its outputs, performs the
breaking instruction natively (a call, a branch on a tensor, an attribute store...), and
returns what the resume function returns. When the break happened inside an inlined call,
the break is at the call site and the callee runs through ember's compile on its own.

A ``for`` loop over a real iterator (passed in, shared by a name, or made in Python at a break)
breaks at its ``FOR_ITER``: the runner reads the next item with ``next()`` and resumes in the
loop's body with it, or after the loop; ``GET_ITER`` at a break keeps an iterator itself (a
generator's items are read when Python reads them) and makes another iterable a list.

Inside ``with`` and ``try`` blocks (as torch.compile does): the graph closes the modelled
contexts still open (``contexts.close_open_blocks``), the runner enters new ones around the
native step and leaves them after it, and the resume function enters them again (its
prologue) inside the original blocks (its body keeps the exception table). When the native
step raises, the runner calls a resume function that starts at the instruction's handler, with
the exception, so ``except``/``finally`` and ``__exit__`` run as in Python.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..errors import Unsupported
from .compat import Instr, for_iter_exit
from .contexts import ContextExit, ContextSpec, Opaque
from .exceptions import handler_for
from .generator_outputs import ITERATOR_KINDS, items_left
from .output import OutputBuilder
from .resume import EXC, ITER, NULL_SLOT, OPAQUE, VALUE, SlotKind
from .torch_ops import BINARY_OPS, COMPARE_OPS
from .values import NULL, ConstVar, Var

if TYPE_CHECKING:
    from .frame import Frame, Snapshot

_JUMPS = {"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"}
_SIMPLE = {"CALL", "CALL_FUNCTION_EX", "STORE_ATTR", "STORE_SUBSCR", "STORE_GLOBAL", "LOAD_ATTR",
           "LOAD_METHOD", "BINARY_SUBSCR", "BINARY_OP", "COMPARE_OP", "UNARY_NOT", "GET_ITER",
           "DELETE_SUBSCR", "CONTAINS_OP", "IS_OP", "BEFORE_WITH", "FOR_ITER", "FORMAT_VALUE"}
#: what ``next`` returns at a break when the real iterator is exhausted
_END = object()
#: FORMAT_VALUE's conversion (its flags' low bits): ``f"{x!r}"`` formats ``repr(x)``
_CONVERSIONS = ("", "str", "repr", "ascii")


@dataclasses.dataclass
class ResumeRequest:
    """A resume point the runtime must turn into a compiled resume function."""

    offset: int
    layout: tuple[SlotKind, ...]
    local_names: tuple[str, ...]
    const_name: str  # how the runner refers to the compiled resume function
    opaque_locals: tuple[str, ...] = ()


@dataclasses.dataclass
class BreakPlan:
    """The Python lines that finish an entry after the graph, and the resumes they call:
    ``prefix`` rebuilds the stack, ``native`` runs the instruction and calls a resume."""

    prefix: list[str]
    native: list[str]
    resumes: list[ResumeRequest]


def can_break(frame: "Frame", exc: Unsupported) -> str | None:
    """None when a break is possible at the root frame's current instruction, else why not."""
    snap = frame.snapshot
    if snap is None:
        return "no instruction to break at"
    ins = snap.instr
    skip = getattr(exc, "skip_frame", None)
    if skip:  # a break inside a generator's body (generators.py)
        return skip
    if ins.opname not in _SIMPLE and ins.opname not in _JUMPS:
        return f"cannot break at a {ins.opname} instruction"
    if snap.handled is not None:
        return "cannot break inside an except or finally handler"
    if ins.opname == "FOR_ITER" and not (isinstance(snap.stack[-1], ConstVar) and snap.stack[-1].source is not None):
        return "cannot break at a FOR_ITER instruction over an iterator the capture models"
    if ins.opname == "CALL" and ins.arg == 0 and any(
            isinstance(v, ConstVar) and v.value is super for v in snap.stack[-2:]):
        return "zero-argument super() runs only in its method (it reads the method's __class__ cell)"
    return None


class _Writer:
    """Builds the runner's tail: stack slots as locals of the runner, then the native step."""

    def __init__(self, frame: "Frame", snap: "Snapshot", out: OutputBuilder, callee: str) -> None:
        self.frame = frame
        self.snap = snap
        self.out = out
        self.callee = callee
        self.prefix: list[str] = []  # rebuilds the stack
        self.lines: list[str] = []  # the native step (runs inside the open blocks)
        self.finish: list[str] = []  # returns what a resume function returns
        self.resumes: list[ResumeRequest] = []
        self.slots: list[tuple[SlotKind, str]] = []  # (kind, expression) per stack slot
        # a container on the stack and in a local (or twice anywhere) stays one object
        self.prefix += out.share([*snap.stack, *snap.locals.values(), *snap.side_effects.values()])
        for i, var in enumerate(snap.stack):
            self.slots.append(self._slot(i, var))
        self.initial_slots = list(self.slots)
        self.local_exprs: dict[str, str] = {}
        self.opaque_locals: list[str] = []
        for name, var in sorted(snap.locals.items()):
            if var is NULL:
                continue
            # read now, before the side effects are replayed: a local read from a container
            # (``flag = kwargs.pop("return_dict")``) has that entry as its source, gone after
            temp = f"___l{len(self.local_exprs)}"
            self.prefix.append(f"    {temp} = {self.out.expr(var)}")
            self.local_exprs[name] = temp
            if isinstance(var, Opaque):
                self.opaque_locals.append(name)
        for name in sorted(snap.lazy_args):
            self.local_exprs[name] = f"L[{name!r}]"
        for name in frame.code.co_cellvars:  # the cells themselves, shared with closures made before
            self.local_exprs[name] = out.expr(frame.cell_var(name))

    def _slot(self, i: int, var: Var) -> tuple[SlotKind, str]:
        if var is NULL:
            return NULL_SLOT, ""
        if isinstance(var, ContextExit):  # entered again by the runner and the resume
            return var.ctx.spec, ""
        if isinstance(var, Opaque):
            return OPAQUE, self.out.expr(var)
        left = items_left(var, self.out.live) if isinstance(var, ITERATOR_KINDS) else None
        if left is not None and not self.out.is_shared(var):  # a list the resume function iterates over
            items = ", ".join(self.out.expr(v) for v in left)
            self.prefix.append(f"    ___s{i} = [{items}]")
            return ITER, f"___s{i}"
        self.prefix.append(f"    ___s{i} = {self.out.expr(var)}")
        return VALUE, f"___s{i}"

    def pop(self, n: int = 1) -> list[tuple[str, str]]:
        taken = self.slots[len(self.slots) - n:]
        del self.slots[len(self.slots) - n:]
        return taken

    def resume_call(self, offset: int, slots: list[tuple[SlotKind, str]] | None = None) -> str:
        slots = self.slots if slots is None else slots
        layout = tuple(kind for kind, _ in slots)
        names = tuple(self.local_exprs)
        const = f"___resume{len(self.resumes)}"
        self.resumes.append(ResumeRequest(offset, layout, names, const, tuple(self.opaque_locals)))
        args = [expr for kind, expr in slots if kind != NULL_SLOT and not isinstance(kind, ContextSpec)]
        args += [self.local_exprs[n] for n in names]
        return f"{const}({', '.join(args)})"

    def assemble(self) -> BreakPlan:
        """Wrap the native step in the blocks it is inside (see the module docstring)."""
        entry = handler_for(self.frame.code, self.snap.instr.offset)
        if entry is None:
            return BreakPlan(self.prefix, self.lines + self.finish, self.resumes)
        contexts = [(f"___c{i}", kind) for i, (kind, _) in enumerate(self.initial_slots)
                    if isinstance(kind, ContextSpec)]
        native = []
        for name, spec in contexts:  # outermost first
            args = ", ".join(self.out.expr(ConstVar(a)) for a in spec.args)
            native.append(f"    {name} = {self.out.consts.name(spec.factory, 'ctx')}({args})")
            native.append(f"    {name}.__enter__()")
        native.append("    try:")
        native += ["    " + line for line in self.lines]
        native += ["    except BaseException as ___e:", "        ___exc = ___e", "    else:", "        ___exc = None"]
        native += [f"    {name}.__exit__(None, None, None)" for name, _ in reversed(contexts)]
        # the handler's stack: the block's slots, the "last instruction" Python pushes for
        # RERAISE (any index of the resume code: it only places the traceback), the exception
        # (raised, so it has the traceback that 3.11's WITH_EXCEPT_START needs)
        handler_slots = self.initial_slots[:entry.depth] + ([(VALUE, "0")] if entry.lasti else []) + [(EXC, "___exc")]
        native += ["    if ___exc is not None:", f"        return {self.resume_call(entry.target, handler_slots)}"]
        return BreakPlan(self.prefix, native + self.finish, self.resumes)


def plan_break(frame: "Frame", out: OutputBuilder, next_offset: int, callee: str) -> BreakPlan:
    """Write the native step for the snapshot's instruction and the calls of its resumes."""
    snap = frame.snapshot
    assert snap is not None
    ins: Instr = snap.instr
    w = _Writer(frame, snap, out, callee)
    op = ins.opname
    emit = w.lines.append

    def value(slot: tuple[SlotKind, str]) -> str:
        kind, expr = slot
        if kind == NULL_SLOT:
            raise Unsupported("a NULL stack slot where a value is needed")
        return f"iter({expr})" if kind == ITER else expr

    if op in _JUMPS:
        (cond,) = w.pop()
        test = {"POP_JUMP_IF_FALSE": "not ({})", "POP_JUMP_IF_TRUE": "bool({})",
                "POP_JUMP_IF_NONE": "({}) is None", "POP_JUMP_IF_NOT_NONE": "({}) is not None"}[op]
        emit(f"    ___go = {test.format(value(cond))}")
        w.finish.append("    if ___go:")
        w.finish.append(f"        return {w.resume_call(ins.argval)}")
        w.finish.append(f"    return {w.resume_call(next_offset)}")
        return w.assemble()
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
        call = value(fn) if fn[0] == OPAQUE else f"{callee}({value(fn)})"  # an __exit__ runs as it is
        emit(f"    ___r = {call}({', '.join(positional + keywords)})")
        following = frame.instrs[ins.index + 1] if ins.index + 1 < len(frame.instrs) else None
        if following is not None and following.opname == "BEFORE_WITH":  # a context, entered next
            return _resume_after(w, next_offset, (OPAQUE, "___r"))
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
        if obj[0] == ITER:  # rebuilt as a list iterator: a generator's ``send``/``throw`` are not there
            raise Unsupported(f"attribute {ins.argval!r} of an iterator or generator made in the captured code")
        emit(f"    ___r = {value(obj)}.{ins.argval}")
        method = op == "LOAD_METHOD" or (ins.arg is not None and ins.arg & 1 and _py312())
        if method:
            w.slots.append((NULL_SLOT, ""))
        if obj[0] == OPAQUE:  # a method of a value made at a break is new on every call too
            return _resume_after(w, next_offset, (OPAQUE, "___r"))
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
        w.slots.append((OPAQUE, "___exit"))
        # the context itself (a new object on every call) is passed along unread; another
        # value (``with f() as v``) is an input of the resume function like any other
        w.slots.append((OPAQUE, "___r"))
        w.finish.append(f"    if ___r is ___ctx:\n        return {w.resume_call(next_offset)}")
        w.slots[-1] = (VALUE, "___r")
        return _resume_after(w, next_offset, None)
    elif op == "FORMAT_VALUE":  # an f-string's ``{x}`` (``{x!r:>8}``): format(conversion(x), spec)
        spec = w.pop()[0] if ins.arg & 0x04 else None
        (a,) = w.pop()
        emit(f"    ___r = format({_CONVERSIONS[ins.arg & 0x03]}({value(a)}), {value(spec) if spec else repr('')})")
    elif op == "FOR_ITER":  # a real iterator (passed in, or one a name shares): Python reads its next item
        emit(f"    ___r = next({value(w.slots[-1])}, {out.consts.name(_END, 'end')})")
        exit_offset = frame.instrs[for_iter_exit(frame.instrs, frame.index_of[ins.argval])].offset
        w.finish.append(f"    if ___r is {out.consts.name(_END, 'end')}:")
        w.finish.append(f"        return {w.resume_call(exit_offset, w.slots[:-1])}")
    elif op == "GET_ITER":  # an iterator stays itself (read one item at a time), another iterable a list
        (a,) = w.pop()
        emit(f"    ___r = iter({value(a)})")
        emit(f"    ___live = ___r is {value(a)}")
        emit("    if not ___live:")
        emit("        ___r = list(___r)")
        w.finish.append("    if ___live:")
        w.finish.append(f"        return {w.resume_call(next_offset, [*w.slots, (VALUE, '___r')])}")
        return _resume_after(w, next_offset, (ITER, "___r"))
    else:  # pragma: no cover - can_break filters
        raise Unsupported(f"cannot break at {op}")
    return _resume_after(w, next_offset, (VALUE, "___r"))


def _resume_after(w: _Writer, offset: int, pushed: tuple[SlotKind, str] | None) -> BreakPlan:
    if pushed is not None:
        w.slots.append(pushed)
    w.finish.append(f"    return {w.resume_call(offset)}")
    return w.assemble()


def _py312() -> bool:
    from .compat import PY312

    return PY312


def _compare_symbol(ins: Instr) -> str:
    from .compat import compare_op

    return compare_op(ins)


__all__ = ["BreakPlan", "ResumeRequest", "can_break", "plan_break"]
