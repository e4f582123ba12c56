"""The symbolic bytecode interpreter: one :class:`Frame` per Python function it walks.

It executes a code object's instructions over symbolic values (see ``values.py``): tensor work
becomes fx nodes through :class:`~ember.capture.graph.GraphBuilder`, everything else is
evaluated for real at capture time. Control flow decided by Python values or shapes is
followed (loops are unrolled). User functions and ``nn.Module.forward`` are inlined by a
child Frame. Exceptions raised and caught inside the captured code follow the code object's
exception table (see ``exceptions.py``). What it cannot handle raises
:class:`~ember.errors.Unsupported` with the file, line and source line of every frame on the
way out.
"""
from __future__ import annotations

import dataclasses
import linecache
import types
from typing import Any

import torch

from ..errors import Unsupported
from . import exceptions, ops, set_keys
from .builder import wrap
from .compat import PY312, Instr, compare_op, for_iter_exit, instructions, method_bit_load_attr
from .dispatch import call, load_attr, next_item, store_attr
from .sources import AttrSource, ConstantSource, LocalSource, cell_source, constant_source, global_source
from .state import CaptureState
from .supers import super_attr
from .torch_ops import module_is_trusted
from .values import (
    NULL, BoundMethodVar, CellVar, ConstVar, DictVar, FunctionVar, IteratorVar, ListVar,
    SetVar, Suspended, TupleVar, Var,
)

_BUILTINS = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)


@dataclasses.dataclass
class Snapshot:
    instr: Instr
    stack: list[Var]
    locals: dict[str, Var]
    lazy_args: dict[str, Any]
    kw_names: tuple[str, ...]
    last_node: Any
    side_effects: Any
    grad: bool  # the grad mode the capture runs in before the instruction
    handled: Any  # the exception being handled (inside an except or finally block), or None


class _Return(Exception):
    def __init__(self, value: Var) -> None:
        self.value = value


class Frame:
    """Interprets one code object; ``run()`` returns the symbolic return value."""

    def __init__(
        self,
        state: CaptureState,
        code: types.CodeType,
        globals_dict: dict,
        locals_: dict[str, Var],
        closure: dict[str, Any],
        lazy_args: dict[str, Any] | None = None,
        is_root: bool = False,
    ) -> None:
        self.state = state
        self.code = code
        self.globals = globals_dict
        self.locals: dict[str, Var] = dict(locals_)
        self.lazy_args = dict(lazy_args or {})
        # name -> CellVar (made inside the capture) or a real closure cell (read lazily)
        self.cells: dict[str, Any] = dict(closure)
        self.instrs = instructions(code)
        self.index_of = {ins.offset: ins.index for ins in self.instrs}
        self.stack: list[Var] = []
        self.kw_names: tuple[str, ...] = ()
        self.pc = 0
        self.current: Instr | None = None
        self.is_root = is_root
        self.snapshot: Snapshot | None = None
        self.suspends = False  # a generator's body, stepped one yield at a time (generators.py)
        self.suspended_at: Instr | None = None  # the yield it stopped at

    # -- running --------------------------------------------------------------------------
    def run(self) -> Var:
        frames = self.state.graph.frames  # where graph nodes are recorded (positions.py)
        frames.append(self)
        try:
            return self._run()
        finally:
            frames.pop()

    def _run(self) -> Var:
        state = self.state
        instrs = self.instrs
        while True:
            ins = instrs[self.pc]
            self.current = ins
            if self.is_root:
                self.take_snapshot(ins)
            self.pc += 1
            state.instructions += 1
            if state.instructions > state.max_instructions:
                self.fail("capture is too long (unrolled loop?)")
            handler = getattr(self, ins.opname, None)
            if handler is None:
                self.fail(f"bytecode {ins.opname} is not supported")
            try:
                handler(ins)
            except _Return as ret:
                return ret.value
            except exceptions.Raised as raised:
                self.unwind(raised, ins)
            except Unsupported as exc:
                self.locate(exc)
                raise
            except RecursionError:
                raise
            except Exception as exc:  # a gap in the interpreter: fall back, never crash the program
                error = Unsupported(f"ember internal error at {ins.opname}: {type(exc).__name__}: {exc}")
                self.locate(error)
                raise error from exc

    def unwind(self, raised: exceptions.Raised, ins: Instr) -> None:
        """Jump to the handler of the exception ``ins`` raised, or let it leave this frame."""
        entry = exceptions.handler_for(self.code, ins.offset)
        if entry is not None:
            del self.stack[entry.depth:]
            if entry.lasti:
                self.push(ConstVar(ins.offset))
            self.push(raised.value)
            self.jump(entry.target)
        elif not self.is_root:
            raise raised
        else:  # Python raises it for real when it runs the function: no graph, as torch.compile
            error = Unsupported(f"{raised.describe()} raised in captured code and not caught there")
            error.uncaught = True
            if not raised.at_call:
                error.skip_frame = f"{raised.describe()} leaves the compiled function: it runs in Python"
            self.locate(error)
            raise error from None

    def take_snapshot(self, ins: Instr) -> None:
        """Remember the state before a root instruction: a graph break restarts from here."""
        graph = self.state.graph.graph
        last = graph._root.prev  # the graph's last node (the root sentinel when empty)
        self.snapshot = Snapshot(ins, list(self.stack), dict(self.locals), dict(self.lazy_args),
                                 self.kw_names, None if last is graph._root else last,
                                 self.state.side_effects.copy(), torch.is_grad_enabled(),
                                 self.state.handled)
        self.state.undo.clear()

    def locate(self, exc: Unsupported) -> None:
        """Append this frame's position to the exception's user stack (innermost first)."""
        frames = getattr(exc, "user_stack", None)
        if frames is None:
            frames = exc.user_stack = []
        if getattr(exc, "_located_in", None) is self:
            return
        exc._located_in = self
        line = self.current.lineno if self.current else self.code.co_firstlineno
        source_line = linecache.getline(self.code.co_filename, line or 0).strip()
        frames.append((self.code.co_filename, line, self.code.co_name, source_line))

    def fail(self, reason: str) -> None:
        raise Unsupported(reason)

    def jump(self, offset: int) -> None:
        self.pc = self.index_of[offset]

    def push(self, var: Var) -> None:
        self.stack.append(var)

    def pop(self) -> Var:
        return self.stack.pop()

    def popn(self, n: int) -> list[Var]:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    # -- no-ops and stack shuffling -----------------------------------------------------------
    def NOP(self, ins: Instr) -> None: ...
    RESUME = CACHE = EXTENDED_ARG = NOP

    def POP_TOP(self, ins: Instr) -> None:
        self.pop()

    def PUSH_NULL(self, ins: Instr) -> None:
        self.push(NULL)

    def COPY(self, ins: Instr) -> None:
        self.push(self.stack[-ins.arg])

    def SWAP(self, ins: Instr) -> None:
        s = self.stack
        s[-1], s[-ins.arg] = s[-ins.arg], s[-1]

    def END_FOR(self, ins: Instr) -> None:  # 3.12, reached only by explicit jumps
        self.popn(2)

    # -- loads and stores -------------------------------------------------------------------
    def LOAD_CONST(self, ins: Instr) -> None:
        self.push(ConstVar(ins.argval))

    def RETURN_CONST(self, ins: Instr) -> None:
        raise _Return(ConstVar(ins.argval))

    def RETURN_VALUE(self, ins: Instr) -> None:
        raise _Return(self.pop())

    def local(self, name: str) -> Var | None:
        """The variable ``name`` (an argument is wrapped when first read); None when unbound."""
        if name not in self.locals and name in self.lazy_args:
            self.locals[name] = wrap(self.state, self.lazy_args.pop(name), LocalSource(name))
        return self.locals.get(name)

    def LOAD_FAST(self, ins: Instr) -> None:
        value = self.local(ins.argval)
        if value is None:
            self.fail(f"local variable {ins.argval!r} is read before assignment")
        self.push(value)

    LOAD_FAST_CHECK = LOAD_FAST

    def LOAD_FAST_AND_CLEAR(self, ins: Instr) -> None:  # 3.12 inlined comprehensions
        self.push(self.locals.pop(ins.argval, NULL))

    def STORE_FAST(self, ins: Instr) -> None:
        value = self.pop()
        self.lazy_args.pop(ins.argval, None)
        if value is NULL:
            self.locals.pop(ins.argval, None)
        else:
            self.locals[ins.argval] = value

    def DELETE_FAST(self, ins: Instr) -> None:
        self.locals.pop(ins.argval, None)
        self.lazy_args.pop(ins.argval, None)

    def LOAD_GLOBAL(self, ins: Instr) -> None:
        if ins.arg & 1:
            self.push(NULL)
        self.push(self.load_global(ins.argval))

    def load_global(self, name: str) -> Var:
        stored = self.state.side_effects.lookup_global(self.globals, name)
        if stored is not None:
            return stored
        if name in self.globals:
            value = self.globals[name]
            import types as _t
            if isinstance(value, _t.ModuleType) and module_is_trusted(value):
                return ConstVar(value)
            return wrap(self.state, value, global_source(self.globals, name))
        builtins_ = self.globals.get("__builtins__", _BUILTINS)
        builtins_ = builtins_ if isinstance(builtins_, dict) else vars(builtins_)
        if name in builtins_:
            return ConstVar(builtins_[name])
        self.fail(f"name {name!r} is not defined")
        raise AssertionError

    def STORE_GLOBAL(self, ins: Instr) -> None:
        self.state.side_effects.store_global(self.globals, ins.argval, self.pop())

    def DELETE_ATTR(self, ins: Instr) -> None:
        from .side_effects import DELETED

        store_attr(self, self.pop(), ins.argval, DELETED)

    def LOAD_DEREF(self, ins: Instr) -> None:
        self.push(self.load_cell(ins.argval))

    LOAD_CLASSDEREF = LOAD_DEREF

    def cell_var(self, name: str) -> CellVar:
        """The CellVar of ``name``; a real cell gets one on first use, its contents unread."""
        cell = self.cells.get(name)
        if isinstance(cell, CellVar):
            return cell
        if cell is None:
            self.fail(f"unknown closure variable {name!r}")
        var = self.cells[name] = self.state.real_cell(cell, constant_source(cell))
        return var

    def load_cell(self, name: str) -> Var:
        cell = self.cell_var(name)
        if not cell.read:
            try:
                value = cell.real.cell_contents
            except ValueError:
                self.fail(f"free variable {name!r} is read before assignment")
            source = cell_source(cell.real, name) if isinstance(cell.source, ConstantSource) \
                else AttrSource(cell.source, "cell_contents")
            cell.contents, cell.read = wrap(self.state, value, source), True
        if cell.contents is None:
            self.fail(f"free variable {name!r} is read before assignment")
        return cell.contents

    def STORE_DEREF(self, ins: Instr) -> None:
        """A store into a real cell is a side effect, replayed on the cell after the graph."""
        cell = self.cell_var(ins.argval)
        value = self.pop()
        self.state.remember(cell)
        cell.contents, cell.read = value, True
        if cell.real is not None:
            self.state.side_effects.store_attr(cell, cell.real, "cell_contents", value)

    def MAKE_CELL(self, ins: Instr) -> None:
        name = ins.argval
        initial = self.locals.pop(name, None)
        if initial is None and name in self.lazy_args:
            initial = wrap(self.state, self.lazy_args.pop(name), LocalSource(name))
        self.cells[name] = CellVar(initial)

    def COPY_FREE_VARS(self, ins: Instr) -> None: ...

    def LOAD_CLOSURE(self, ins: Instr) -> None:
        self.push(self.cell_var(ins.argval))

    def LOAD_ATTR(self, ins: Instr) -> None:
        obj = self.pop()
        if method_bit_load_attr(ins):
            self.push(NULL)
        self.push(load_attr(self, obj, ins.argval))

    def LOAD_METHOD(self, ins: Instr) -> None:  # 3.11
        obj = self.pop()
        self.push(NULL)
        self.push(load_attr(self, obj, ins.argval))

    def LOAD_SUPER_ATTR(self, ins: Instr) -> None:  # 3.12: super().name
        self_var = self.pop()
        cls_var = self.pop()
        self.pop()  # the global `super`
        attr = super_attr(self, cls_var, self_var, ins.argval)
        if ins.arg & 1:
            self.push(NULL)
        self.push(attr)

    def STORE_ATTR(self, ins: Instr) -> None:
        obj = self.pop()
        value = self.pop()
        store_attr(self, obj, ins.argval, value)

    # -- operators ----------------------------------------------------------------------------
    def BINARY_OP(self, ins: Instr) -> None:
        b = self.pop()
        a = self.pop()
        self.push(ops.binary(self, ins.argrepr, a, b))

    def BINARY_SUBSCR(self, ins: Instr) -> None:
        index = self.pop()
        obj = self.pop()
        self.push(ops.getitem(self, obj, index))

    def BINARY_SLICE(self, ins: Instr) -> None:
        stop = self.pop()
        start = self.pop()
        obj = self.pop()
        self.push(ops.getitem(self, obj, ops.make_slice(self, start, stop, ConstVar(None))))

    def STORE_SUBSCR(self, ins: Instr) -> None:
        index = self.pop()
        obj = self.pop()
        value = self.pop()
        ops.setitem(self, obj, index, value)

    def STORE_SLICE(self, ins: Instr) -> None:
        stop = self.pop()
        start = self.pop()
        obj = self.pop()
        value = self.pop()
        ops.setitem(self, obj, ops.make_slice(self, start, stop, ConstVar(None)), value)

    def DELETE_SUBSCR(self, ins: Instr) -> None:
        index = self.pop()
        obj = self.pop()
        ops.delitem(self, obj, index)

    def COMPARE_OP(self, ins: Instr) -> None:
        b = self.pop()
        a = self.pop()
        self.push(ops.compare(self, compare_op(ins), a, b))

    def IS_OP(self, ins: Instr) -> None:
        b = self.pop()
        a = self.pop()
        same = ops.is_same(self, a, b)
        self.push(ConstVar(same != bool(ins.arg)))

    def CONTAINS_OP(self, ins: Instr) -> None:
        container = self.pop()
        item = self.pop()
        found = ops.contains(self, container, item)
        self.push(ConstVar(found != bool(ins.arg)))

    def UNARY_POSITIVE(self, ins: Instr) -> None:  # 3.11
        self.push(ops.unary(self, "pos", self.pop()))

    def UNARY_NEGATIVE(self, ins: Instr) -> None:
        self.push(ops.unary(self, "neg", self.pop()))

    def UNARY_INVERT(self, ins: Instr) -> None:
        self.push(ops.unary(self, "invert", self.pop()))

    def UNARY_NOT(self, ins: Instr) -> None:
        self.push(ConstVar(not ops.truthy(self, self.pop())))

    def CALL_INTRINSIC_1(self, ins: Instr) -> None:  # 3.12
        name = ins.argrepr
        value = self.pop()
        if name == "INTRINSIC_UNARY_POSITIVE":
            self.push(ops.unary(self, "pos", value))
        elif name == "INTRINSIC_LIST_TO_TUPLE":
            self.push(TupleVar(list(value.items)))
        elif name == "INTRINSIC_STOPITERATION_ERROR":  # PEP 479: StopIteration leaving a generator
            if isinstance(value.value, StopIteration):
                error = RuntimeError("generator raised StopIteration")
                error.__cause__ = error.__context__ = value.value
                value = ConstVar(error)
            self.push(value)
        else:
            self.fail(f"intrinsic {name} is not supported")

    def GET_LEN(self, ins: Instr) -> None:
        self.push(call(self, ConstVar(len), [self.stack[-1]], {}))

    def FORMAT_VALUE(self, ins: Instr) -> None:
        spec = self.pop() if (ins.arg & 0x04) else ConstVar("")
        value = self.pop()
        conv = ins.arg & 0x03
        py = ops.as_const(self, value, "formatting a value")
        py = {0: py, 1: str(py), 2: repr(py), 3: ascii(py)}[conv]
        self.push(ConstVar(format(py, ops.as_const(self, spec, "a format spec"))))

    def BUILD_STRING(self, ins: Instr) -> None:
        parts = self.popn(ins.arg)
        self.push(ConstVar("".join(ops.as_const(self, p, "building a string") for p in parts)))

    # -- control flow -------------------------------------------------------------------------
    def JUMP_FORWARD(self, ins: Instr) -> None:
        self.jump(ins.argval)

    JUMP_BACKWARD = JUMP_BACKWARD_NO_INTERRUPT = JUMP_ABSOLUTE = JUMP = JUMP_FORWARD

    def POP_JUMP_IF_FALSE(self, ins: Instr) -> None:
        if not ops.truthy(self, self.pop()):
            self.jump(ins.argval)

    def POP_JUMP_IF_TRUE(self, ins: Instr) -> None:
        if ops.truthy(self, self.pop()):
            self.jump(ins.argval)

    def POP_JUMP_IF_NONE(self, ins: Instr) -> None:
        if ops.is_same(self, self.pop(), ConstVar(None)):
            self.jump(ins.argval)

    def POP_JUMP_IF_NOT_NONE(self, ins: Instr) -> None:
        if not ops.is_same(self, self.pop(), ConstVar(None)):
            self.jump(ins.argval)

    def JUMP_IF_TRUE_OR_POP(self, ins: Instr) -> None:  # 3.11
        if ops.truthy(self, self.stack[-1]):
            self.jump(ins.argval)
        else:
            self.pop()

    def JUMP_IF_FALSE_OR_POP(self, ins: Instr) -> None:  # 3.11
        if not ops.truthy(self, self.stack[-1]):
            self.jump(ins.argval)
        else:
            self.pop()

    def GET_ITER(self, ins: Instr) -> None:
        self.push(ops.get_iter(self, self.pop()))

    def FOR_ITER(self, ins: Instr) -> None:
        it = self.stack[-1]
        if isinstance(it, IteratorVar):
            self.state.remember(it)
            item = it.next()
        else:  # a generator, zip over one...: read one item at a time
            item = next_item(self, it)
        if item is None:
            self.pop()
            self.pc = for_iter_exit(self.instrs, self.index_of[ins.argval])
        else:
            self.push(item)

    # -- building containers -------------------------------------------------------------------
    def BUILD_TUPLE(self, ins: Instr) -> None:
        self.push(TupleVar(self.popn(ins.arg)))

    def BUILD_LIST(self, ins: Instr) -> None:
        self.push(ListVar(self.popn(ins.arg)))

    def BUILD_SET(self, ins: Instr) -> None:
        items = self.popn(ins.arg)
        self.push(set_keys.make(self, [set_keys.key(self, i) for i in items]))

    def BUILD_MAP(self, ins: Instr) -> None:
        flat = self.popn(2 * ins.arg)
        items = {set_keys.dict_key(self, flat[i]): flat[i + 1] for i in range(0, len(flat), 2)}
        self.push(DictVar(items))

    def BUILD_CONST_KEY_MAP(self, ins: Instr) -> None:
        keys = ops.as_const(self, self.pop(), "dict keys")
        values = self.popn(ins.arg)
        self.push(DictVar(dict(zip(keys, values))))

    def BUILD_SLICE(self, ins: Instr) -> None:
        parts = self.popn(ins.arg)
        step = parts[2] if ins.arg == 3 else ConstVar(None)
        self.push(ops.make_slice(self, parts[0], parts[1], step))

    def LIST_APPEND(self, ins: Instr) -> None:
        value = self.pop()
        ops.mutable_list(self, self.stack[-ins.arg]).items.append(value)

    def LIST_EXTEND(self, ins: Instr) -> None:
        value = self.pop()
        ops.mutable_list(self, self.stack[-ins.arg]).items.extend(ops.iterate(self, value))

    def SET_ADD(self, ins: Instr) -> None:
        value = self.pop()
        target = ops.mutable_set(self, self.stack[-ins.arg])
        target.items.add(set_keys.key(self, value))
        set_keys.keep_distinct(self, target.items)

    def SET_UPDATE(self, ins: Instr) -> None:
        value = self.pop()
        target = ops.mutable_set(self, self.stack[-ins.arg])
        target.items.update(set_keys.key(self, i) for i in ops.iterate(self, value))
        set_keys.keep_distinct(self, target.items)

    def MAP_ADD(self, ins: Instr) -> None:
        value = self.pop()
        key = self.pop()
        ops.mutable_dict(self, self.stack[-ins.arg]).items[set_keys.dict_key(self, key)] = value

    def DICT_UPDATE(self, ins: Instr) -> None:
        other = self.pop()
        ops.mutable_dict(self, self.stack[-ins.arg]).items.update(ops.dict_items(self, other))

    DICT_MERGE = DICT_UPDATE

    def LIST_TO_TUPLE(self, ins: Instr) -> None:
        self.push(TupleVar(list(self.pop().items)))

    def UNPACK_SEQUENCE(self, ins: Instr) -> None:
        items = ops.iterate(self, self.pop())
        if len(items) != ins.arg:
            self.fail(f"cannot unpack {len(items)} values into {ins.arg}")
        self.stack.extend(reversed(items))

    def UNPACK_EX(self, ins: Instr) -> None:
        items = ops.iterate(self, self.pop())
        before, after = ins.arg & 0xFF, ins.arg >> 8
        if len(items) < before + after:
            self.fail("not enough values to unpack")
        rest = ListVar(items[before:len(items) - after])
        values = items[:before] + [rest] + items[len(items) - after:]
        self.stack.extend(reversed(values))

    # -- calls --------------------------------------------------------------------------------
    def PRECALL(self, ins: Instr) -> None: ...

    def KW_NAMES(self, ins: Instr) -> None:
        self.kw_names = ins.argval if isinstance(ins.argval, tuple) else self.code.co_consts[ins.arg]

    def CALL(self, ins: Instr) -> None:
        if self.is_root and ins.offset in self.state.in_python:  # see generator_outputs
            self.fail("a generator made here is live at a graph break and cannot be run ahead: Python makes it")
        argc = ins.arg
        args = self.popn(argc)
        fn = self.pop()
        head = self.pop()
        if head is not NULL:  # [method, self, args...] or [callable, self?]
            fn, args = head, [fn] + args
        kw_names, self.kw_names = self.kw_names, ()
        kwargs = {}
        if kw_names:
            kwargs = dict(zip(kw_names, args[len(args) - len(kw_names):]))
            args = args[: len(args) - len(kw_names)]
        self.push(call(self, fn, args, kwargs))

    def CALL_FUNCTION_EX(self, ins: Instr) -> None:
        kwargs_var = self.pop() if ins.arg & 1 else DictVar({})
        args_var = self.pop()
        fn = self.pop()
        if self.stack and self.stack[-1] is NULL:
            self.pop()
        args = ops.iterate(self, args_var)
        kwargs = dict(ops.dict_items(self, kwargs_var))
        self.push(call(self, fn, args, kwargs))

    def MAKE_FUNCTION(self, ins: Instr) -> None:
        code_var = self.pop()
        code = ops.as_const(self, code_var, "a code object")
        closure: tuple = ()
        kwdefaults: dict = {}
        defaults: tuple = ()
        if ins.arg & 0x08:
            closure = tuple(self.pop().items)
        if ins.arg & 0x04:
            self.pop()  # annotations
        if ins.arg & 0x02:
            kwdefaults = dict(self.pop().items)
        if ins.arg & 0x01:
            defaults = tuple(ops.iterate(self, self.pop()))
        self.push(FunctionVar(code, self.globals, code.co_name, defaults, kwdefaults, closure))

    # -- generators (a generator's body runs in a child frame that suspends: generators.py) -------
    def RETURN_GENERATOR(self, ins: Instr) -> None:
        if not self.suspends:
            self.fail("generator function called where its generator object escapes")
        self.push(ConstVar(None))

    def YIELD_VALUE(self, ins: Instr) -> None:
        if not self.suspends:
            self.fail("yield outside a generator the capture runs")
        # run() returns; resuming pushes the value sent in (or raises at this instruction)
        self.suspended_at = ins
        raise _Return(Suspended(self.pop()))

    def GET_YIELD_FROM_ITER(self, ins: Instr) -> None:
        self.push(ops.get_iter(self, self.pop()))

    def SEND(self, ins: Instr) -> None:
        """``yield from``: the receiver's next item (the value sent in passed on), or its return
        value and a jump."""
        sent = self.pop()
        receiver = self.stack[-1]
        if isinstance(receiver, IteratorVar) and not (isinstance(sent, ConstVar) and sent.value is None):
            exceptions.throw(AttributeError("'list_iterator' object has no attribute 'send'"))
        item = next_item(self, receiver, sent)
        if item is not None:
            self.push(item)
            return
        result = getattr(receiver, "result", None) or ConstVar(None)
        if PY312:  # the END_SEND at the target pops the receiver
            self.push(result)
        else:
            self.stack[-1] = result
        self.jump(ins.argval)

    def CLEANUP_THROW(self, ins: Instr) -> None:  # 3.12: a throw() through a yield from
        exc = self.pop()
        if not isinstance(exc.value, StopIteration):
            raise exceptions.Raised(exc)
        self.popn(2)
        self.push(exceptions.stop_value(exc))

    def END_SEND(self, ins: Instr) -> None:  # 3.12
        del self.stack[-2]

    # -- exceptions (see exceptions.py) ---------------------------------------------------------
    def RAISE_VARARGS(self, ins: Instr) -> None:
        if ins.arg == 0:  # bare `raise`: the exception being handled
            if self.state.handled is None:
                exceptions.throw(RuntimeError("No active exception to reraise"))
            raise exceptions.Raised(self.state.handled)
        cause = self.pop() if ins.arg == 2 else None
        raise exceptions.Raised(exceptions.raising(self, self.pop(), cause))

    def PUSH_EXC_INFO(self, ins: Instr) -> None:
        exc = self.pop()
        self.push(self.state.handled or ConstVar(None))
        self.state.handled = exc
        self.push(exc)

    def POP_EXCEPT(self, ins: Instr) -> None:
        previous = self.pop()
        self.state.handled = None if previous.value is None else previous

    def CHECK_EXC_MATCH(self, ins: Instr) -> None:
        classes = self.pop()
        self.push(ConstVar(exceptions.matches(self, self.stack[-1], classes)))

    def RERAISE(self, ins: Instr) -> None:
        raise exceptions.Raised(self.pop())

    def WITH_EXCEPT_START(self, ins: Instr) -> None:
        """``__exit__(type, value, traceback)`` of a with-block an exception leaves."""
        exc = self.stack[-1]
        self.push(call(self, self.stack[-4], [ConstVar(type(exc.value)), exc, ConstVar(None)], {}))

    def LOAD_ASSERTION_ERROR(self, ins: Instr) -> None:
        self.push(ConstVar(AssertionError))

    # -- what breaks ----------------------------------------------------------------------------
    def BEFORE_WITH(self, ins: Instr) -> None:
        from . import inlined_contexts
        from .contexts import ModelledContext, enter

        ctx = self.stack[-1]
        if isinstance(ctx, ModelledContext):
            exit_var, value = enter(self, ctx)
        else:
            if self.is_root and ins.offset in self.state.in_python:
                inlined_contexts.refuse(self)
            entered = inlined_contexts.enter(self, ctx, ins.offset if self.is_root else None)
            if entered is None:
                self.fail(f"a with-block over a {type(ctx).__name__} (no Python __enter__/__exit__ to inline): "
                          "it is entered in Python at a graph break")
            exit_var, value = entered
        self.pop()
        self.push(exit_var)
        self.push(value)

    def IMPORT_NAME(self, ins: Instr) -> None:
        """``import x.y`` and ``from ..x import y``: allowed for modules already loaded (importing
        them again does nothing); a relative name is resolved against the function's package."""
        import importlib.util
        import sys

        fromlist = self.pop()
        level = self.pop()
        name = ins.argval
        depth = level.value if isinstance(level, ConstVar) and isinstance(level.value, int) else 0
        if depth:
            package = self.globals.get("__package__") or self.globals.get("__name__", "").rpartition(".")[0]
            try:
                name = importlib.util.resolve_name("." * depth + name, package)
            except (ImportError, ValueError):
                self.fail(f"relative import of {ins.argval!r} outside a package")
        module = sys.modules.get(name)
        if module is None:
            self.fail(f"import of {name!r} inside the captured function (not loaded yet)")
        has_fromlist = isinstance(fromlist, ConstVar) and fromlist.value
        self.push(ConstVar(module if has_fromlist or depth else sys.modules[name.partition(".")[0]]))

    def IMPORT_FROM(self, ins: Instr) -> None:
        self.push(load_attr(self, self.stack[-1], ins.argval))


__all__ = ["BoundMethodVar", "Frame"]
