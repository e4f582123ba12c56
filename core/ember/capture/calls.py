"""Calls: torch ops become graph nodes, Python functions and module forwards are inlined,
builtins and pure helpers on constants are evaluated, anything else is refused.
"""
from __future__ import annotations

import functools
import inspect
import os
import types
from typing import TYPE_CHECKING, Any, Callable

import torch

from . import contexts, hooks, locks, objects, skips, torch_helpers, user_objects  # noqa: F401 (torch_helpers registers handlers)
from .attrs import ContainerMethod, TensorMethod
from .builtin_calls import BUILTIN_HANDLERS
from .exceptions import evaluate, is_plain_exception_class, run_ahead, throw
from .ops import NotConstant, as_const, iterate, lift, mutable_dict, mutable_list, mutable_set, python_value
from .state import MAX_INLINE_DEPTH
from .torch_ops import COMPILING_QUERIES, GRAPH_BREAK_CALLS, is_graph_callable, is_pure_function, module_is_trusted
from .values import (
    BoundMethodVar, CellVar, ConstVar, DictVar, FunctionVar, IteratorVar, ListVar, PartialVar, SetVar, TensorVar,
    TupleVar, Var, contains_tensor,
)

if TYPE_CHECKING:
    from .frame import Frame

__all__ = ["call", "call_dunder", "inline_call", "module_is_trusted", "super_attr"]

_TensorBase = torch._C.TensorBase
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_MODULE_CALL = torch.nn.Module.__call__


def _name(value: Any) -> str:
    module = getattr(value, "__module__", None)
    qual = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or type(value).__name__
    return f"{module}.{qual}" if module and module != "builtins" else qual


def call(frame: "Frame", fn: Var, args: list[Var], kwargs: dict[str, Var]) -> Var:
    graph = frame.state.graph
    if isinstance(fn, TensorMethod):
        if fn.name in GRAPH_BREAK_CALLS:
            frame.fail(f"Tensor.{fn.name}() runs autograd's engine (graph break)")
        return graph.call("call_method", fn.name, (fn.tensor, *args), kwargs)
    if isinstance(fn, ContainerMethod):
        return container_method(frame, fn, args, kwargs)
    if isinstance(fn, (FunctionVar,)):
        return inline_call(frame, fn, args, kwargs)
    if isinstance(fn, BoundMethodVar):
        if isinstance(fn.self_var, ConstVar) and isinstance(fn.func, ConstVar):
            _refuse_optimizer_step(frame, fn.self_var.value, fn.func.value)
        return call(frame, fn.func, [fn.self_var, *args], kwargs)
    if isinstance(fn, objects.ShadowMethod):
        return objects.call_method(frame, fn, args, kwargs)
    if isinstance(fn, PartialVar):
        return call(frame, fn.func, [*fn.args, *args], {**fn.kwargs, **kwargs})
    if isinstance(fn, SuperProxy):
        frame.fail("calling super() directly")
    if isinstance(fn, contexts.ContextExit):
        return contexts.exit_(frame, fn)
    if isinstance(fn, contexts.Opaque):
        frame.fail("calling a value made in Python at a graph break (a context manager's __exit__)")
    if not isinstance(fn, ConstVar):
        frame.fail(f"calling a {type(fn).__name__} is not supported")
    value = fn.value
    if isinstance(value, torch.nn.Module):
        return call_module(frame, fn, args, kwargs)
    if _builtin_handler(value) is None and value in COMPILING_QUERIES:
        return ConstVar(True)
    if value in _AUTOGRAD_CALLS or getattr(value, "__func__", None) in _AUTOGRAD_CALLS:
        frame.fail(f"{_name(value)} runs autograd's engine (graph break)")
    if _is_torch_module_class(value):
        return _construct_torch_module(frame, value, args, kwargs)
    if value in contexts.CONTEXT_FACTORIES:
        return contexts.make_context(frame, value, args, kwargs)
    handler = _builtin_handler(value)
    if handler is not None:
        return handler(frame, args, kwargs)
    if locks.is_lock_method(value):
        return locks.lock_call(value)
    if getattr(value, "__objclass__", None) in _READ_ONLY_OWNERS and value.__name__ in _READ_ONLY_METHODS:
        return _read_only_method(frame, value, args, kwargs)
    if getattr(value, "__objclass__", None) is _TensorBase or getattr(value, "__objclass__", None) is torch.Tensor:
        if args and isinstance(args[0], TensorVar):
            return graph.call("call_method", value.__name__, tuple(args), kwargs)
    if value in _FROM_NUMPY and args and _is_sourced_array(args[0]):
        return _numpy_input(frame, value, args[0])
    if is_graph_callable(value):
        return graph.call("call_function", value, tuple(args), kwargs)
    if isinstance(value, types.MethodType) and value.__self__ is os.environ and value.__name__ in _ENV_READS:
        # reading the environment (libraries check flags): evaluated now, not guarded
        return lift(value(*[python_value(a) for a in args]))
    if isinstance(value, types.FunctionType) and is_pure_function(value):
        try:
            py_args = [python_value(a) for a in args]
            py_kwargs = {k: python_value(v) for k, v in kwargs.items()}
        except NotConstant:
            pass
        else:
            return lift(evaluate(value, *py_args, **py_kwargs))
    never = skips.never_traced(value)
    if never is not None:
        frame.fail(f"{_name(getattr(value, '_torchdynamo_orig_callable', value))} {never}")
    original = getattr(value, "__ember__", None)
    if original is not None:  # an ember-compiled function called from captured code: inline it
        return call(frame, ConstVar(value.__wrapped__), args, kwargs)
    if isinstance(value, types.FunctionType):
        return inline_call(frame, fn, args, kwargs)
    if isinstance(value, types.MethodType):
        _refuse_optimizer_step(frame, value.__self__, value.__func__)
        self_source = None
        if fn.source is not None:
            from .sources import AttrSource

            self_source = AttrSource(fn.source, "__self__")
        return call(frame, ConstVar(value.__func__), [ConstVar(value.__self__, self_source), *args], kwargs)
    if objects.constructible(value):
        return objects.construct(frame, value, args, kwargs)
    if isinstance(value, functools.partial):
        return _call_real_partial(frame, fn, args, kwargs)
    if isinstance(value, type) and hasattr(value, "_fields") and issubclass(value, tuple):
        return _make_namedtuple(frame, value, args, kwargs)
    if is_pure_function(value) or (isinstance(value, type) and value.__module__ == "builtins") \
            or is_plain_exception_class(value):
        try:
            py_args = [python_value(a) for a in args]
            py_kwargs = {k: python_value(v) for k, v in kwargs.items()}
        except NotConstant:
            frame.fail(f"{_name(value)} called with tensors or captured containers")
        return lift(evaluate(value, *py_args, **py_kwargs))
    if user_objects.can_construct(value):
        return user_objects.construct(frame, value, args, kwargs)
    user_call = inspect.getattr_static(type(value), "__call__", None)
    if isinstance(user_call, types.FunctionType) and not isinstance(value, type):
        return inline_call(frame, ConstVar(user_call), [fn, *args], kwargs)
    frame.fail(f"call to {_name(value)} is not supported (not a torch op, not Python code to inline)")
    raise AssertionError


def _refuse_optimizer_step(frame: "Frame", owner: Any, func: Any) -> None:
    """``optimizer.step()`` is a graph break: it runs as it is, between the graphs around it."""
    if isinstance(owner, torch.optim.Optimizer) and getattr(func, "__name__", None) == "step":
        frame.fail(f"{type(owner).__name__}.step() runs eagerly at a graph break (ember does not capture optimizer "
                   "steps yet: their lazily created, parameter-keyed state and grouped foreach updates)")


def _call_real_partial(frame: "Frame", fn: ConstVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    from .builder import wrap
    from .sources import AttrSource

    part = fn.value
    src = fn.source

    def field(name: str) -> Var:
        return wrap(frame.state, getattr(part, name), AttrSource(src, name) if src else None)

    inner_args = list(field("args").items) if part.args else []
    inner_kwargs = dict(field("keywords").items) if part.keywords else {}
    return call(frame, field("func"), [*inner_args, *args], {**inner_kwargs, **kwargs})


_ENV_READS = {"get", "__getitem__", "__contains__", "keys", "items"}
_READ_ONLY_OWNERS = (dict, list, tuple, str, set, frozenset)
_READ_ONLY_METHODS = {"get", "keys", "values", "items", "__getitem__", "__contains__", "__len__", "index",
                      "count", "copy"}


def _read_only_method(frame: "Frame", descriptor: Any, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``dict.get(obj, key)`` and friends on a real container read from the frame: evaluated now,
    guarded through a source that repeats the call."""
    from .builder import wrap
    from .sources import MethodCallSource

    if not args or not isinstance(args[0], ConstVar) or kwargs:
        frame.fail(f"{descriptor.__qualname__} on a value the capture does not hold")
    owner = args[0]
    try:
        call_args = tuple(python_value(a) for a in args[1:])
    except NotConstant:
        frame.fail(f"{descriptor.__qualname__} with tensor arguments")
    result = descriptor(owner.value, *call_args)
    if owner.source is None:
        return lift(result)
    return wrap(frame.state, result, MethodCallSource(owner.source, descriptor, call_args, descriptor.__name__))


_FROM_NUMPY = (torch.from_numpy, torch.as_tensor, torch.tensor, torch.asarray)


def _is_sourced_array(var: Var) -> bool:
    return isinstance(var, ConstVar) and var.source is not None and type(var.value).__name__ == "ndarray" \
        and type(var.value).__module__ == "numpy"


def _numpy_input(frame: "Frame", fn: Any, array: ConstVar) -> Var:
    """A numpy array read from the frame becomes a tensor input sharing its memory."""
    from .builder import wrap
    from .sources import NumpyTensorSource

    tensor = wrap(frame.state, torch.from_numpy(array.value), NumpyTensorSource(array.source))
    if fn is torch.tensor:  # torch.tensor copies
        return frame.state.graph.call("call_method", "clone", (tensor,), {})
    return tensor


_AUTOGRAD_CALLS = {torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad}


def _is_torch_module_class(value: Any) -> bool:
    return (isinstance(value, type) and issubclass(value, torch.nn.Module)
            and value.__module__.startswith("torch.nn.modules"))


def _construct_torch_module(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``nn.CrossEntropyLoss()`` inside captured code: a stateless torch module, built now."""
    try:
        module = cls(*[python_value(a) for a in args], **{k: python_value(v) for k, v in kwargs.items()})
    except NotConstant:
        frame.fail(f"constructing {cls.__name__} with tensors")
    if any(True for _ in module.parameters()) or any(b is not None for b in module.buffers()):
        frame.fail(f"constructing {cls.__name__} (a module with parameters) inside captured code")
    return ConstVar(module)


def _builtin_handler(value: Any) -> Callable | None:
    try:
        return BUILTIN_HANDLERS.get(value)
    except TypeError:  # unhashable callable
        return None


def _make_namedtuple(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> Var:
    fields = cls._fields
    values = list(args)
    for name in fields[len(args):]:
        if name in kwargs:
            values.append(kwargs[name])
        elif name in getattr(cls, "_field_defaults", {}):
            values.append(lift(cls._field_defaults[name]))
        else:
            frame.fail(f"{cls.__name__}() missing argument {name!r}")
    return TupleVar(values, tuple_type=cls)


# -- modules ---------------------------------------------------------------------------------
def has_hooks(module: torch.nn.Module) -> bool:
    return hooks.has_forward_hooks(module) or hooks.has_backward_hooks(module)


def call_module(frame: "Frame", mod_var: ConstVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    module = mod_var.value
    cls = type(module)
    if cls.__call__ is not _MODULE_CALL:
        return inline_call(frame, ConstVar(cls.__call__), [mod_var, *args], kwargs)
    forward = inspect.getattr_static(module, "forward")
    if not isinstance(forward, types.FunctionType):
        frame.fail(f"forward of {cls.__name__} is not Python code")

    def call_forward(fwd_args: list[Var], fwd_kwargs: dict[str, Var]) -> Var:
        if "forward" in module.__dict__:  # an instance attribute replaced forward
            return call(frame, ConstVar(forward), fwd_args, fwd_kwargs)
        return inline_call(frame, ConstVar(forward), [mod_var, *fwd_args], fwd_kwargs)

    if has_hooks(module):
        return hooks.call_with_hooks(frame, mod_var, args, kwargs, call_forward)
    return call_forward(args, kwargs)


# -- inlining --------------------------------------------------------------------------------
_SIGNATURES: dict[types.CodeType, inspect.Signature] = {}


def _signature(code: types.CodeType) -> inspect.Signature:
    sig = _SIGNATURES.get(code)
    if sig is None:
        cells = tuple(types.CellType() for _ in code.co_freevars)
        dummy = types.FunctionType(code, {}, code.co_name, None, cells or None)
        sig = inspect.signature(dummy)
        if len(_SIGNATURES) > 4096:
            _SIGNATURES.clear()
        _SIGNATURES[code] = sig
    return sig


def _bind(frame: "Frame", code: types.CodeType, defaults: tuple, kwdefaults: dict,
          args: list[Var], kwargs: dict[str, Var]) -> dict[str, Var]:
    sig = _signature(code)
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    with_defaults = positional[len(positional) - len(defaults):] if defaults else []
    new_params = []
    for p in params:
        if p in with_defaults:
            p = p.replace(default=defaults[with_defaults.index(p)])
        elif p.kind == p.KEYWORD_ONLY and p.name in kwdefaults:
            p = p.replace(default=kwdefaults[p.name])
        new_params.append(p)
    sig = sig.replace(parameters=new_params)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        frame.fail(f"{code.co_name}() {exc}")
    bound.apply_defaults()
    result: dict[str, Var] = {}
    for name, value in bound.arguments.items():
        if name not in code.co_varnames and name.startswith("implicit"):
            name = "." + name[len("implicit"):]  # inspect renames comprehension arguments
        sig_name = name if name in sig.parameters else "implicit" + name[1:]
        kind = sig.parameters[sig_name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            value = TupleVar(list(value))
        elif kind == inspect.Parameter.VAR_KEYWORD:
            value = DictVar(dict(value))
        result[name] = value if isinstance(value, Var) else lift(value)
    return result


def inline_call(frame: "Frame", fn: Var, args: list[Var], kwargs: dict[str, Var]) -> Var:
    from .frame import Frame

    if isinstance(fn, FunctionVar):
        code, globals_dict = fn.code, fn.globals
        defaults, kwdefaults = fn.defaults, fn.kwdefaults
        closure = dict(zip(code.co_freevars, fn.closure))
    else:
        func = fn.value
        code, globals_dict = func.__code__, func.__globals__
        defaults = tuple(_default(frame, d) for d in (func.__defaults__ or ()))
        kwdefaults = {k: _default(frame, v) for k, v in (func.__kwdefaults__ or {}).items()}
        closure = dict(zip(code.co_freevars, func.__closure__ or ()))
    is_generator = bool(code.co_flags & inspect.CO_GENERATOR)
    if code.co_flags & _GENERATOR_FLAGS and not is_generator:
        frame.fail(f"{code.co_name} is a coroutine (not supported)")
    state = frame.state
    if state.depth >= MAX_INLINE_DEPTH:
        frame.fail("inlining is too deep (recursion?)")
    bound = _bind(frame, code, defaults, kwdefaults, args, kwargs)
    child = Frame(state, code, globals_dict, bound, closure)
    if not is_generator:
        return _run(child)
    # run to completion now; the caller gets an iterator over what it yielded
    child.yielded = []
    with run_ahead(frame, f"generator {code.co_name}()"):
        result = _run(child)
    return IteratorVar(child.yielded, result=result)


def _run(child: "Frame") -> Var:
    state = child.state
    state.depth += 1
    try:
        return child.run()
    finally:
        state.depth -= 1


def _default(frame: "Frame", value: Any) -> Var:
    if isinstance(value, torch.Tensor):
        frame.fail("a tensor used as a default argument value")
    return lift(value)


# -- containers ------------------------------------------------------------------------------
def container_method(frame: "Frame", fn: ContainerMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    obj, name = fn.container, fn.name
    if isinstance(obj, ListVar):
        return _list_method(frame, obj, name, args)
    if isinstance(obj, DictVar):
        return _dict_method(frame, obj, name, args, kwargs)
    if isinstance(obj, (SetVar, ConstVar)):
        return _set_method(frame, obj, name, args, kwargs)
    if isinstance(obj, TupleVar) and hasattr(obj.tuple_type, "_fields") and name in ("_replace", "_asdict"):
        return _namedtuple_method(frame, obj, name, args, kwargs)
    if isinstance(obj, TupleVar) and name in ("index", "count"):
        try:
            values = tuple(python_value(v) for v in obj.items)
            return lift(evaluate(getattr(values, name), *[python_value(a) for a in args]))
        except NotConstant:
            frame.fail(f"tuple.{name} over tensors")
    frame.fail(f"method {name!r} of a {type(obj).__name__} is not supported")
    raise AssertionError


def _list_method(frame: "Frame", obj: ListVar, name: str, args: list[Var]) -> Var:
    if name in ("index", "count", "copy", "__len__"):
        if name == "copy":
            return ListVar(list(obj.items))
        try:
            values = [python_value(v) for v in obj.items]
            return lift(evaluate(getattr(values, name), *[python_value(a) for a in args]))
        except NotConstant:
            frame.fail(f"list.{name} over tensors")
    items = mutable_list(frame, obj).items
    if name == "append":
        items.append(args[0])
    elif name == "extend":
        items.extend(iterate(frame, args[0]))
    elif name == "insert":
        items.insert(python_value(args[0]), args[1])
    elif name == "pop":
        return evaluate(items.pop, *(python_value(a) for a in args))
    elif name == "reverse":
        items.reverse()
    elif name == "clear":
        items.clear()
    else:
        frame.fail(f"list.{name} is not supported")
    return ConstVar(None)


def _namedtuple_method(frame: "Frame", obj: TupleVar, name: str, args: list[Var], kwargs: dict[str, Var]) -> Var:
    fields = obj.tuple_type._fields
    if name == "_asdict":
        return DictVar(dict(zip(fields, obj.items)))
    unknown = set(kwargs) - set(fields)
    if args or unknown:
        throw(ValueError(f"Got unexpected field names: {sorted(unknown)!r}") if unknown else
              TypeError("_replace() takes 1 positional argument"))
    return TupleVar([kwargs.get(f, v) for f, v in zip(fields, obj.items)], tuple_type=obj.tuple_type)


def _dict_method(frame: "Frame", obj: DictVar, name: str, args: list[Var], kwargs: dict[str, Var]) -> Var:
    items = obj.items
    if kwargs and name != "update":
        frame.fail(f"dict.{name} with keyword arguments")
    if name == "items":
        return ListVar([TupleVar([ConstVar(k), v]) for k, v in items.items()])
    if name == "keys":
        return ListVar([ConstVar(k) for k in items])
    if name == "values":
        return ListVar(list(items.values()))
    if name == "get":
        key = python_value(args[0])
        return items.get(key, args[1] if len(args) > 1 else ConstVar(None))
    if name == "copy":
        return DictVar(dict(items), dict_type=obj.dict_type)
    if name == "__contains__":
        return ConstVar(python_value(args[0]) in items)
    table = mutable_dict(frame, obj).items
    if name == "update":
        from .ops import dict_items

        if args:
            table.update(dict_items(frame, args[0]))
        table.update(kwargs)
        return ConstVar(None)
    if name == "pop":
        key = python_value(args[0])
        if key in table:
            return table.pop(key)
        if len(args) > 1:
            return args[1]
        throw(KeyError(key))
    if name == "setdefault":
        return table.setdefault(python_value(args[0]), args[1] if len(args) > 1 else ConstVar(None))
    if name == "clear":
        table.clear()
        return ConstVar(None)
    frame.fail(f"dict.{name} is not supported")
    raise AssertionError


_SET_READS = {"union", "intersection", "difference", "symmetric_difference", "copy", "issubset", "issuperset",
              "isdisjoint"}
_SET_WRITES = {"add", "discard", "remove", "pop", "clear", "update", "intersection_update", "difference_update",
               "symmetric_difference_update"}


def _set_method(frame: "Frame", obj: Var, name: str, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """A method of a set (a SetVar, or a set or frozenset from outside): evaluated on its elements."""
    if kwargs or name not in _SET_READS | _SET_WRITES:
        frame.fail(f"{type(python_value(obj)).__name__}.{name} is not supported")
    values = [_set_argument(frame, a, name) for a in args]
    if name in _SET_WRITES:
        return lift(evaluate(getattr(mutable_set(frame, obj).items, name), *values))
    result = evaluate(getattr(python_value(obj), name), *values)
    return SetVar(result) if type(result) is set else lift(result)


def _set_argument(frame: "Frame", var: Var, name: str) -> Any:
    if isinstance(var, IteratorVar):  # a generator or map(): the method consumes its items
        return [as_const(frame, v, f"an item given to set.{name}") for v in iterate(frame, var)]
    return as_const(frame, var, f"an argument of set.{name}")


# -- dunder dispatch and super() -------------------------------------------------------------
def call_dunder(frame: "Frame", obj: Var, name: str, args: list[Var]) -> Var | None:
    """Inline ``type(obj).<name>`` when it is Python code; None when it is not."""
    if isinstance(obj, user_objects.UserObjectVar):
        cls = obj.cls
    else:
        cls = type(obj.shadow) if isinstance(obj, objects.ObjectVar) else type(obj.value)
    method = inspect.getattr_static(cls, name, None)
    if isinstance(method, types.FunctionType):
        return inline_call(frame, ConstVar(method), [obj, *args], {})
    return None


class SuperProxy(Var):
    """``super()`` inside a method, before its attribute is read (3.11 spelling)."""

    def __init__(self, cls: type, self_var: Var) -> None:
        self.cls = cls
        self.self_var = self_var


def super_attr(frame: "Frame", cls_var: Var, self_var: Var, name: str) -> Var:
    cls = python_value(cls_var) if not isinstance(cls_var, CellVar) else python_value(cls_var.contents)
    obj_type = self_var.value if isinstance(self_var, ConstVar) and isinstance(self_var.value, type) else None
    if obj_type is None and isinstance(self_var, objects.ObjectVar):
        obj_type = type(self_var.shadow)
    if obj_type is None and isinstance(self_var, user_objects.UserObjectVar):
        obj_type = self_var.cls
    if obj_type is None:
        obj_type = type(self_var.value) if isinstance(self_var, ConstVar) else None
    if obj_type is None:
        frame.fail("super() on a value that is not a Python object")
    mro = obj_type.__mro__
    for klass in mro[mro.index(cls) + 1:]:
        if name in klass.__dict__:
            attr = klass.__dict__[name]
            if isinstance(attr, types.FunctionType):
                return BoundMethodVar(ConstVar(attr), self_var)
            if isinstance(attr, property):
                return inline_call(frame, ConstVar(attr.fget), [self_var], {})
            if isinstance(attr, classmethod):
                return BoundMethodVar(ConstVar(attr.__func__), ConstVar(obj_type))
            if isinstance(attr, staticmethod):
                return ConstVar(attr.__func__)
            if isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType)):
                if isinstance(self_var, objects.ObjectVar):
                    return objects.super_method(frame, self_var, attr)
                return BoundMethodVar(ConstVar(attr), self_var)
            return lift(attr) if not contains_tensor(lift(attr)) else frame.fail("super attribute tensor")
    frame.fail(f"super() has no attribute {name!r}")
    raise AssertionError
