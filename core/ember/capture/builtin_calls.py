"""Python builtins over symbolic values (``len``, ``isinstance``, ``range``, ``zip``, ...).

Each handler takes ``(frame, args, kwargs)`` and returns a Var; it is called with arguments that
fit the builtin's parameters (``builtin_arity``: what does not fit raises Python's TypeError
first). Builtins not listed here are evaluated for real when every argument is a constant (see
``torch_ops.PURE_BUILTINS``).
"""
from __future__ import annotations

import collections
import functools
import inspect
import itertools
import operator
import os
import types
from typing import TYPE_CHECKING, Any, Callable

import torch

from . import environ, lazy_iterators, set_keys, unbacked
from .dispatch import call, each_item, is_lazy, length, load_attr, next_item, store_attr
from .exceptions import Raised, evaluate, run_ahead, throw
from .generators import stop_iteration
from .instances import InstanceVar, pin
from .ops import NotConstant, as_const, binary, compare, iterate, lift, python_value, truthy
from .torch_ops import BINARY_OPS
from .symbolic import sym_int, sym_minmax
from .user_objects import UserObjectVar
from .values import (
    BoundMethodVar, ConstVar, DictVar, EnvironVar, FunctionVar, IteratorVar, ListVar, SetVar, TensorVar, TupleVar,
    UserDictVar, UserSetVar, Var,
)

if TYPE_CHECKING:
    from .frame import Frame

Handler = Callable[["Frame", list, dict], Var]
BUILTIN_HANDLERS: dict[Any, Handler] = {}


def handles(*fns: Any) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        for fn in fns:
            BUILTIN_HANDLERS[fn] = handler
        return handler

    return register


def _const_or_none(var: Var) -> Any:
    try:
        return python_value(var)
    except NotConstant:
        return NotConstant


@handles(len)
def _len(frame: "Frame", args: list, kwargs: dict) -> Var:
    (obj,) = args
    return length(frame, obj)


def _python_type(var: Var) -> type:
    if isinstance(var, ConstVar):
        return type(var.value)
    return var.python_type()


@handles(isinstance)
def _isinstance(frame: "Frame", args: list, kwargs: dict) -> Var:
    obj, classes = args
    cls = as_const(frame, classes, "isinstance's class argument")
    if isinstance(obj, ConstVar):
        return ConstVar(evaluate(isinstance, obj.value, cls))
    evaluate(isinstance, None, cls)  # a class argument that is not a class raises isinstance's TypeError
    return ConstVar(issubclass(_python_type(obj), cls))


@handles(type)
def _type(frame: "Frame", args: list, kwargs: dict) -> Var:
    if len(args) != 1:
        frame.fail("type() with three arguments")
    return ConstVar(_python_type(args[0]))


@handles(range)
def _range(frame: "Frame", args: list, kwargs: dict) -> Var:
    return ConstVar(range(*(as_const(frame, a, "range bounds") for a in args)))


@handles(enumerate)
def _enumerate(frame: "Frame", args: list, kwargs: dict) -> Var:
    start = as_const(frame, args[1] if len(args) > 1 else kwargs.get("start", ConstVar(0)), "enumerate start")
    if is_lazy(args[0]):
        return lazy_iterators.make(frame, "enumerate", [args[0]], count=start)
    items = iterate(frame, args[0])
    return IteratorVar([TupleVar([ConstVar(start + i), v]) for i, v in enumerate(items)])


@handles(zip)
def _zip(frame: "Frame", args: list, kwargs: dict) -> Var:
    strict = kwargs.get("strict") is not None and as_const(frame, kwargs["strict"], "zip strict")
    if any(is_lazy(a) for a in args):  # read row by row: an endless generator stops with the others
        return lazy_iterators.make(frame, "zip", args, strict=strict)
    if strict:
        lengths = {len(iterate(frame, a)) for a in args}
        if len(lengths) > 1:
            frame.fail("zip(strict=True) over sequences of different lengths")
    columns = [iterate(frame, a) for a in args]
    return IteratorVar([TupleVar(list(row)) for row in zip(*columns)])


@handles(itertools.chain)
def _chain(frame: "Frame", args: list, kwargs: dict) -> Var:
    if kwargs:
        frame.fail("itertools.chain() takes no keyword arguments")
    if any(is_lazy(a) for a in args):
        return lazy_iterators.make(frame, "chain", args)
    return IteratorVar([item for a in args for item in iterate(frame, a)])


@handles(reversed)
def _reversed(frame: "Frame", args: list, kwargs: dict) -> Var:
    if is_lazy(args[0]) or isinstance(args[0], IteratorVar):
        throw(TypeError(f"'{args[0].python_type().__name__}' object is not reversible"))
    return IteratorVar(list(reversed(iterate(frame, args[0]))))


@handles(iter)
def _iter(frame: "Frame", args: list, kwargs: dict) -> Var:
    from .ops import get_iter

    return get_iter(frame, args[0])


@handles(next)
def _next(frame: "Frame", args: list, kwargs: dict) -> Var:
    it = args[0]
    if not (isinstance(it, IteratorVar) or is_lazy(it)):
        frame.fail("next() on something that is not an iterator made in the captured code")
    item = next_item(frame, it)
    if item is None:
        if len(args) > 1:
            return args[1]
        stop_iteration(frame, it)
    return item


@handles(map)
def _map(frame: "Frame", args: list, kwargs: dict) -> Var:
    fn, *iterables = args
    if any(is_lazy(a) for a in iterables):
        return lazy_iterators.make(frame, "map", iterables, fn)
    columns = [iterate(frame, a) for a in iterables]
    with run_ahead(frame, "map()"):
        return IteratorVar([call(frame, fn, list(row), {}) for row in zip(*columns)])


@handles(filter)
def _filter(frame: "Frame", args: list, kwargs: dict) -> Var:
    fn, iterable = args
    if is_lazy(iterable):
        return lazy_iterators.make(frame, "filter", [iterable], fn)
    items = iterate(frame, iterable)
    if isinstance(fn, ConstVar) and fn.value is None:
        return IteratorVar([v for v in items if truthy(frame, v)])
    with run_ahead(frame, "filter()"):
        return IteratorVar([v for v in items if truthy(frame, call(frame, fn, [v], {}))])


@handles(list)
def _list(frame: "Frame", args: list, kwargs: dict) -> Var:
    return ListVar(iterate(frame, args[0]) if args else [])


@handles(tuple)
def _tuple(frame: "Frame", args: list, kwargs: dict) -> Var:
    return TupleVar(iterate(frame, args[0]) if args else [])


def _make_set(set_type: type) -> Handler:
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        if not args:
            return set_keys.make(frame, (), set_type)
        if isinstance(args[0], SetVar):  # a set (a subclass's too) is read as its elements, not iterated
            return set_keys.make(frame, set(args[0].items), set_type)
        try:
            values = python_value(args[0])  # the same kind of argument as in Python (a list, a dict...)
        except NotConstant:
            values = [set_keys.key(frame, v) for v in iterate(frame, args[0])]
        return set_keys.make(frame, evaluate(set, values), set_type)

    return handler


BUILTIN_HANDLERS[set] = _make_set(set)
BUILTIN_HANDLERS[frozenset] = _make_set(frozenset)


@handles(dict)
def _dict(frame: "Frame", args: list, kwargs: dict, dict_type: type = dict) -> Var:
    from .ops import dict_items

    items: dict = {}
    if args:
        src = args[0]
        if isinstance(src, (DictVar, EnvironVar)) or isinstance(src, ConstVar) and isinstance(src.value, dict):
            items.update(dict_items(frame, src))
        else:
            for pair in iterate(frame, src):
                key, value = iterate(frame, pair)
                items[set_keys.dict_key(frame, key)] = value
    items.update(kwargs)
    return DictVar(items, dict_type=dict_type)


BUILTIN_HANDLERS[collections.OrderedDict] = functools.partial(_dict, dict_type=collections.OrderedDict)


def _fold_or_reduce(frame: "Frame", args: list, pick: Callable) -> Var:
    items = iterate(frame, args[0]) if len(args) == 1 else list(args)
    symbolic = sym_minmax(frame, items, pick)
    if symbolic is not None:
        return symbolic
    values = [_const_or_none(v) for v in items]
    if all(v is not NotConstant for v in values):
        return lift(pick(values))
    frame.fail(f"{pick.__name__}() over tensors compares tensor data (use torch.maximum/minimum)")
    raise AssertionError


@handles(max)
def _max(frame: "Frame", args: list, kwargs: dict) -> Var:
    if kwargs:
        frame.fail("max() with keyword arguments")
    return _fold_or_reduce(frame, args, max)


@handles(min)
def _min(frame: "Frame", args: list, kwargs: dict) -> Var:
    if kwargs:
        frame.fail("min() with keyword arguments")
    return _fold_or_reduce(frame, args, min)


@handles(sum)
def _sum(frame: "Frame", args: list, kwargs: dict) -> Var:
    items = iterate(frame, args[0])
    total = args[1] if len(args) > 1 else kwargs.get("start", ConstVar(0))
    for item in items:
        total = binary(frame, "+", total, item)
    return total


@handles(int)
def _int(frame: "Frame", args: list, kwargs: dict) -> Var:
    same = sym_int(args, kwargs)  # int() of a symbolic size is that size
    if same is not None:
        return same
    try:
        py_args = [python_value(a) for a in args]
        py_kwargs = {k: python_value(v) for k, v in kwargs.items()}
    except NotConstant:
        frame.fail("int() of a tensor or a captured container")
        raise
    return lift(evaluate(int, *py_args, **py_kwargs))


@handles(abs)
def _abs(frame: "Frame", args: list, kwargs: dict) -> Var:
    if isinstance(args[0], TensorVar):
        return frame.state.graph.call("call_function", operator.abs, (args[0],), {})
    return lift(abs(as_const(frame, args[0], "abs()")))


def _make_any_all(fn: Callable[[Any], bool]) -> Handler:
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        return ConstVar(fn(truthy(frame, v) for v in each_item(frame, args[0])))  # stops where Python stops

    return handler


BUILTIN_HANDLERS[any] = _make_any_all(any)
BUILTIN_HANDLERS[all] = _make_any_all(all)


@handles(getattr)
def _getattr(frame: "Frame", args: list, kwargs: dict) -> Var:
    from ..errors import Unsupported

    name = as_const(frame, args[1], "getattr's name")
    if len(args) == 3:
        try:
            return load_attr(frame, args[0], name)
        except Unsupported as exc:
            if "has no attribute" in str(exc):
                if isinstance(args[0], ConstVar):  # the default holds while the attribute is absent
                    _lacks(frame, args[0], name)
                return args[2]
            raise
        except Raised as raised:  # an inlined property raised
            if isinstance(raised.value.value, AttributeError):
                return args[2]
            raise
    return load_attr(frame, args[0], name)


def _make_store(fn: Callable, deletes: bool, default: bool) -> Handler:
    """``setattr(obj, name, value)`` is ``obj.name = value`` (``delattr`` a deletion);
    ``object.__setattr__``/``__delattr__`` (what a custom ``__setattr__`` ends in, often through
    ``super()``) is Python's own store, which skips the class's hook."""
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        from .side_effects import DELETED

        if kwargs or len(args) != (2 if deletes else 3):
            frame.fail(f"{fn.__name__}() with {len(args)} arguments")
        name = as_const(frame, args[1], f"{fn.__name__}'s name")
        store_attr(frame, args[0], name, DELETED if deletes else args[2], default=default)
        return ConstVar(None)

    return handler


BUILTIN_HANDLERS[setattr] = _make_store(setattr, deletes=False, default=False)
BUILTIN_HANDLERS[delattr] = _make_store(delattr, deletes=True, default=False)
BUILTIN_HANDLERS[object.__setattr__] = _make_store(object.__setattr__, deletes=False, default=True)
BUILTIN_HANDLERS[object.__delattr__] = _make_store(object.__delattr__, deletes=True, default=True)


@handles(object.__getattribute__)
def _object_getattribute(frame: "Frame", args: list, kwargs: dict) -> Var:
    """Python's own attribute lookup, what a custom ``__getattribute__`` ends in: the capture's
    reads of real objects already skip the class's hook."""
    if kwargs or len(args) != 2:
        frame.fail(f"object.__getattribute__() with {len(args)} arguments")
    return load_attr(frame, args[0], as_const(frame, args[1], "object.__getattribute__'s name"))


@handles(hasattr)
def _hasattr(frame: "Frame", args: list, kwargs: dict) -> Var:
    obj, name = args[0], as_const(frame, args[1], "hasattr's name")
    if isinstance(obj, TensorVar):  # its class's attributes, else one of the tensor object itself
        if hasattr(obj.cls, name):
            return ConstVar(True)
        from .tensors import instance_attr

        try:
            instance_attr(frame, obj, name)
        except Raised:
            return ConstVar(False)
        return ConstVar(True)
    if isinstance(obj, ConstVar):
        if isinstance(obj.value, torch.nn.Module) or isinstance(obj, InstanceVar):
            from ..errors import Unsupported

            try:  # True: the attribute read is guarded; False: its absence is
                load_attr(frame, obj, name)
                return ConstVar(True)
            except Unsupported:
                return _lacks(frame, obj, name)
            except Raised as raised:  # an inlined property raised
                if isinstance(raised.value.value, AttributeError):
                    return _lacks(frame, obj, name)
                raise
        pin(obj)
        if not hasattr(obj.value, name):
            return _lacks(frame, obj, name)
        if obj.source is not None:  # its presence holds while the read it guards does
            load_attr(frame, obj, name)
        return ConstVar(True)
    from .objects import ShadowVar
    from .values import PartialVar

    if isinstance(obj, PartialVar):  # a partial's attributes are its type's and func/args/keywords
        return ConstVar(hasattr(_A_PARTIAL, name))
    if isinstance(obj, (UserObjectVar, ShadowVar, UserDictVar, UserSetVar)):  # a property or __getattr__ may raise
        try:
            load_attr(frame, obj, name)
            return ConstVar(True)
        except Raised as raised:
            if isinstance(raised.value.value, AttributeError):
                return ConstVar(False)
            raise
    if isinstance(obj, (ListVar, TupleVar, DictVar, SetVar)) and (
            obj.source is None or obj.python_type().__dictoffset__ == 0):  # no attribute of its own
        return ConstVar(hasattr(obj.python_type(), name))  # its class's
    frame.fail(f"hasattr on a {type(obj).__name__}")
    raise AssertionError


_A_PARTIAL = functools.partial(print)


def _lacks(frame: "Frame", obj: ConstVar, name: str) -> Var:
    if obj.source is not None:
        frame.state.guards.lacks(obj.source, name)
    return ConstVar(False)


BUILTIN_HANDLERS[os.getenv] = environ.getenv


@handles(inspect.signature)
def _signature(frame: "Frame", args: list, kwargs: dict) -> Var:
    """The signature of a bound method is its function's without the first parameter: the
    object it is bound to plays no part (its identity is not guarded)."""
    if len(args) == 1 and not kwargs and isinstance(args[0], BoundMethodVar):
        method = args[0]
        func = as_const(frame, method.func, "a method's function")
        return ConstVar(evaluate(inspect.signature, types.MethodType(func, object())))
    return ConstVar(evaluate(inspect.signature, *[python_value(a) for a in args],
                             **{k: python_value(v) for k, v in kwargs.items()}))


#: constants made at capture that are the very objects the program uses on every call
_LASTING = (type(None), bool, type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, torch.nn.Module)


@handles(id)
def _id(frame: "Frame", args: list, kwargs: dict) -> Var:
    """``id()`` of an input tensor: its real object's, guarded to stay that object (as
    torch.compile's ID_MATCH); of a constant: its own."""
    (obj,) = args
    if isinstance(obj, TensorVar) and obj.source is not None and obj.node.op == "placeholder":
        tensor = next(t for s, n, t in frame.state.graph.inputs if n is obj.node)
        frame.state.guards.identity(obj.source, tensor)
        return ConstVar(id(tensor))
    if isinstance(obj, ConstVar) and obj.source is not None:
        frame.state.guards.identity(obj.source, obj.value)
        return ConstVar(id(obj.value))
    if isinstance(obj, ConstVar) and isinstance(obj.value, _LASTING):  # the same object on every call
        return ConstVar(id(obj.value))
    frame.fail(f"id() of a {type(obj).__name__} made inside the captured code")
    raise AssertionError


@handles(callable)
def _callable(frame: "Frame", args: list, kwargs: dict) -> Var:
    obj = args[0]
    if isinstance(obj, (FunctionVar, BoundMethodVar)):
        return ConstVar(True)
    if isinstance(obj, ConstVar):
        return ConstVar(callable(obj.value))
    return ConstVar(False)


@handles(bool)
def _bool(frame: "Frame", args: list, kwargs: dict) -> Var:
    if args and isinstance(args[0], TensorVar) and unbacked.captures("item"):
        return unbacked.scalar_of(frame, bool, args[0])
    return ConstVar(truthy(frame, args[0]) if args else False)


def _make_scalar(cls: type) -> Handler:
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        if args and isinstance(args[0], TensorVar):
            if len(args) == 1 and unbacked.captures("item"):
                return unbacked.scalar_of(frame, cls, args[0])
            frame.fail(f"{cls.__name__}() of a tensor reads its data (graph break)")
        return lift(evaluate(cls, *(as_const(frame, a, f"{cls.__name__}()") for a in args)))

    return handler


BUILTIN_HANDLERS[int] = _make_scalar(int)
BUILTIN_HANDLERS[float] = _make_scalar(float)


@handles(print)
def _print(frame: "Frame", args: list, kwargs: dict) -> Var:
    frame.fail("print() is a side effect outside PyTorch (graph break)")
    raise AssertionError


@handles(super)
def _super(frame: "Frame", args: list, kwargs: dict) -> Var:
    from .supers import SuperProxy

    if args:
        cls = as_const(frame, args[0], "super's class")
        return SuperProxy(cls, args[1])
    code = frame.code
    cell = frame.cells.get("__class__")
    if cell is None or not code.co_varnames:
        frame.fail("zero-argument super() outside a method")
    cls = cell.contents.value if hasattr(cell, "contents") and cell.contents is not None else cell.cell_contents
    first = code.co_varnames[0]
    self_var = frame.local(first)
    if self_var is None:
        frame.fail("super(): the method's first argument is not available")
    return SuperProxy(cls, self_var)


@handles(operator.getitem)
def _op_getitem(frame: "Frame", args: list, kwargs: dict) -> Var:
    from .ops import getitem

    return getitem(frame, args[0], args[1])


@handles(functools.reduce)
def _reduce(frame: "Frame", args: list, kwargs: dict) -> Var:
    fn, iterable = args[0], iterate(frame, args[1])
    acc = args[2] if len(args) > 2 else iterable.pop(0)
    for item in iterable:
        acc = call(frame, fn, [acc, item], {})
    return acc


def _make_unary(name: str) -> Handler:
    from .ops import unary

    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        return unary(frame, name, args[0])

    return handler


BUILTIN_HANDLERS[operator.neg] = _make_unary("neg")
BUILTIN_HANDLERS[operator.pos] = _make_unary("pos")
BUILTIN_HANDLERS[operator.invert] = _make_unary("invert")
BUILTIN_HANDLERS[operator.abs] = BUILTIN_HANDLERS[abs]


@handles(functools.partial)
def _partial(frame: "Frame", args: list, kwargs: dict) -> Var:
    from .values import PartialVar

    return PartialVar(args[0], list(args[1:]), dict(kwargs))


def _make_operator(symbol: str, compare_op: bool = False) -> Handler:
    def handler(frame: "Frame", args: list, kwargs: dict) -> Var:
        return (compare if compare_op else binary)(frame, symbol, args[0], args[1])

    return handler


for _fn, _sym in [(operator.add, "+"), (operator.sub, "-"), (operator.mul, "*"), (operator.truediv, "/"),
                  (operator.floordiv, "//"), (operator.mod, "%"), (operator.pow, "**"),
                  (operator.matmul, "@"), (operator.and_, "&"), (operator.or_, "|"), (operator.xor, "^")]:
    BUILTIN_HANDLERS[_fn] = _make_operator(_sym)
for _sym, _fn in BINARY_OPS.items():
    if _sym.endswith("="):  # operator.iadd(a, b) is `a += b`: it may mutate a
        BUILTIN_HANDLERS[_fn] = _make_operator(_sym)
for _fn, _sym in [(operator.lt, "<"), (operator.le, "<="), (operator.eq, "=="), (operator.ne, "!="),
                  (operator.gt, ">"), (operator.ge, ">=")]:
    BUILTIN_HANDLERS[_fn] = _make_operator(_sym, compare_op=True)
