"""Calls of real Python values (ConstVars): torch ops become graph nodes, Python functions and
module forwards are inlined, builtins and pure helpers on constants are evaluated, anything else
is refused. Registered in ``dispatch``'s call table, as bound methods and partials are; the
other kinds of value register their own calls in their modules.
"""
from __future__ import annotations

import enum
import functools
import inspect
import types
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch.utils._pytree import tree_leaves

from ..distributed import native_reason
from . import (
    autograd_functions, collections_calls, containers, contexts, global_state, hooks, inlined_contexts, locks,
    numpy_arrays, objects, optimizers, scalar_tensors, skips, unbacked, user_containers, user_objects,
)
from .builtin_arity import check_arguments
from .builtin_calls import BUILTIN_HANDLERS
from .constants import READ_ONLY_METHODS, READ_ONLY_OWNERS, NotConstant, lift, python_value
from .dispatch import call, handles_call, handles_truth, load_attr
from .distributed import collective_handler
from .exceptions import evaluate, is_plain_exception_class
from .functions import class_function
from .inline import inline_call
from .instances import InstanceVar, pin
from .torch_ops import COMPILING_QUERIES, is_graph_callable, is_pure_function
from .values import BoundMethodVar, ConstVar, PartialVar, TensorVar, TupleVar, Var, contains_tensor

if TYPE_CHECKING:
    from .frame import Frame

__all__ = ["call_module", "call_value", "has_hooks"]

_TensorBase = torch._C.TensorBase
_MODULE_CALL = torch.nn.Module.__call__


def _name(value: Any) -> str:
    module = getattr(value, "__module__", None)
    qual = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or type(value).__name__
    return f"{module}.{qual}" if module and module != "builtins" else qual


@handles_call(BoundMethodVar)
def _call_bound_method(frame: "Frame", fn: BoundMethodVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if isinstance(fn.self_var, ConstVar) and isinstance(fn.func, ConstVar) \
            and optimizers.is_init_group(fn.self_var.value, fn.func.value):
        return optimizers.init_group(frame, fn.self_var, args, kwargs)
    return call(frame, fn.func, [fn.self_var, *args], kwargs)


@handles_truth(BoundMethodVar)
def _bound_method_truth(frame: "Frame", fn: BoundMethodVar) -> bool:
    return True


@handles_call(PartialVar)
def _call_partial(frame: "Frame", fn: PartialVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    return call(frame, fn.func, [*fn.args, *args], {**fn.kwargs, **kwargs})


@handles_call(ConstVar)
def call_value(frame: "Frame", fn: ConstVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """A call of a real Python value: a torch op, a module, a builtin, a function, a class..."""
    graph = frame.state.graph
    value = fn.value
    if isinstance(value, torch.nn.Module):
        return call_module(frame, fn, args, kwargs)
    if _builtin_handler(value) is None and value in COMPILING_QUERIES:
        return ConstVar(True)
    if value in _AUTOGRAD_CALLS or getattr(value, "__func__", None) in _AUTOGRAD_CALLS:
        frame.fail(f"{_name(value)} runs autograd's engine (graph break)")
    if value is autograd_functions.FUNCTION_APPLY and args and isinstance(args[0], ConstVar):
        return autograd_functions.apply(frame, args[0].value, args[1:], kwargs)
    if _is_module_class(value):
        return _construct_module(frame, value, args, kwargs)
    if value in contexts.CONTEXT_FACTORIES:
        return contexts.make_context(frame, value, args, kwargs)
    if inlined_contexts.is_contextmanager_helper(value):
        return inlined_contexts.helper_call(frame, fn, args, kwargs)
    if containers.is_unbound_method(value):  # ``set.add(s, x)``, ``dict.__eq__(a, b)``
        result = containers.call_unbound(frame, value, args, kwargs)
        if result is not None:
            return result
    if user_containers.is_builtin_new(value):  # ``dict.__new__(cls)``, ``super().__new__(cls)``
        return user_containers.builtin_new(frame, value.__self__, args, kwargs)
    if containers.is_fromkeys(value):
        return containers.from_keys(frame, value.__self__, args, kwargs)
    handler = _builtin_handler(value)
    if handler is not None:
        check_arguments(value, args, kwargs)  # what does not fit raises as in Python
        return handler(frame, args, kwargs)
    if locks.is_lock_method(value):
        return locks.lock_call(value)
    if isinstance(value, _UNBOUND) and value.__objclass__ in READ_ONLY_OWNERS and value.__name__ in READ_ONLY_METHODS:
        return _read_only_method(frame, value, args, kwargs)
    if getattr(value, "__objclass__", None) is _TensorBase or getattr(value, "__objclass__", None) is torch.Tensor:
        if args and isinstance(args[0], TensorVar):
            return graph.call("call_method", value.__name__, tuple(args), kwargs)
    converted = numpy_arrays.to_tensor(frame, value, args[0], args[1:], kwargs) if args else None
    if converted is not None:  # ``torch.from_numpy(a)`` and friends of an array
        return converted
    traced = numpy_arrays.call_function(frame, value, args, kwargs)
    if traced is not None:  # numpy's functions, as torch ops on the arrays' tensors
        return traced
    if is_graph_callable(value) and isinstance(value, types.FunctionType) \
            and not any(contains_tensor(a) for a in [*args, *kwargs.values()]):
        return inline_call(frame, fn, args, kwargs)  # torch's Python helper on no tensor (F._none_or_dtype)
    if is_graph_callable(value):
        if _asks_global_state(value, args, kwargs):
            return _global_state_query(frame, value, args)
        rewritten = scalar_tensors.rewrite_function(frame, value, args, kwargs) or unbacked.tensor_ctor(
            frame, value, args, kwargs)
        if rewritten is not None:
            return rewritten
        return graph.call("call_function", value, tuple(args), kwargs)
    if isinstance(value, types.FunctionType) and is_pure_function(value):
        try:
            py_args = [python_value(a) for a in args]
            py_kwargs = {k: python_value(v) for k, v in kwargs.items()}
        except NotConstant:
            pass
        else:
            return lift(evaluate(value, *py_args, **py_kwargs))
    if isinstance(value, functools._lru_cache_wrapper):
        return _call_cached(frame, value, args, kwargs)
    if skips.hint_ignored(value, frame.globals):
        return ConstVar(None)
    never = skips.never_traced(value)
    if never is not None and skips.marker_ignored(value, frame.globals):
        return ConstVar(None)
    if never is not None:
        frame.fail(f"{_name(getattr(value, '_torchdynamo_orig_callable', value))} {never}")
    original = getattr(value, "__ember__", None)
    if original is not None:  # an ember-compiled function called from captured code: inline it
        return call(frame, ConstVar(value.__wrapped__), args, kwargs)
    if isinstance(value, types.FunctionType):
        return inline_call(frame, fn, args, kwargs)
    if isinstance(value, types.MethodType):
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
    if isinstance(value, enum.EnumMeta):
        return collections_calls.call_enum(frame, value, args, kwargs)
    if isinstance(value, collections_calls.GETTERS):
        return collections_calls.call_getter(frame, value, args, kwargs)
    if user_containers.can_construct(value):  # a Python subclass of dict or set
        return user_containers.construct(frame, value, args, kwargs)
    if is_pure_function(value) or (isinstance(value, type) and value.__module__ == "builtins") \
            or is_plain_exception_class(value):
        if "out" in kwargs:  # a numpy ufunc writing into an array
            frame.fail(f"{_name(value)} with out=")
        try:
            py_args = [python_value(a) for a in args]
            py_kwargs = {k: python_value(v) for k, v in kwargs.items()}
        except NotConstant:
            frame.fail(f"{_name(value)} called with tensors or captured containers")
        result = evaluate(value, *py_args, **py_kwargs)
        if isinstance(value, type) and value.__module__ == "builtins" and not isinstance(result, _IMMUTABLE):
            # a new mutable object at each call in Python (bytearray(2), object()): not one shared constant
            frame.fail(f"{_name(value)}() makes a new mutable object at each call")
        return lift(result)
    if user_objects.can_construct(value):
        return user_objects.construct(frame, value, args, kwargs)
    user_call = inspect.getattr_static(type(value), "__call__", None)
    if isinstance(user_call, types.FunctionType) and not isinstance(value, type):
        return inline_call(frame, class_function(frame.state, type(value), "__call__", user_call), [fn, *args], kwargs)
    frame.fail(f"call to {_name(value)} is not supported (not a torch op, not Python code to inline)")
    raise AssertionError


#: what a builtin type may make at capture and hand out as a constant: values, not objects
_IMMUTABLE = (bool, int, float, complex, str, bytes, tuple, frozenset, range, slice, type(None), type,
              BaseException)

_STATE_QUERIES = ("is_", "get_", "_is_", "_get_", "_are_")
#: what a question about torch's state answers with, guarded by value
_ANSWERS = (bool, int, float, str, type(None), torch.dtype, torch.device)


def _asks_global_state(fn: Any, args: list[Var], kwargs: dict[str, Var]) -> bool:
    """``torch.get_default_dtype()``, ``torch.get_num_threads()``, ``torch.is_anomaly_enabled()``:
    a torch function asking about global state, with constant arguments."""
    name = getattr(fn, "__name__", "")
    return name.startswith(_STATE_QUERIES) and not kwargs and all(  # not a question about an object
        isinstance(a, ConstVar) and isinstance(a.value, _ANSWERS) for a in args)


def _global_state_query(frame: "Frame", fn: Any, args: list[Var]) -> Var:
    """The answer now, guarded: the state may change between calls (``torch.set_default_dtype``)."""
    from .sources import call_source

    values = tuple(python_value(a) for a in args)
    answer = evaluate(fn, *values)
    if not isinstance(answer, _ANSWERS):
        return frame.state.graph.call("call_function", fn, tuple(args), {})
    if _answer_at_entry(frame.state.entry_state, fn, values) == answer:
        frame.state.guards.equals(call_source(fn, values), answer)
    # else the captured code itself set this state (``with torch.set_grad_enabled(True)``): the
    # answer follows from the entry state, already guarded, and the code, not from a new guard
    return ConstVar(answer)


def _answer_at_entry(entry: Any, fn: Any, values: tuple) -> Any:
    """What ``fn(*values)`` answered in the global state the call began in."""
    now = global_state.snapshot()
    if entry is None or now == entry:
        return evaluate(fn, *values)
    entry.restore()
    try:
        return evaluate(fn, *values)
    finally:
        now.restore()


def _call_cached(frame: "Frame", fn: Any, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """A ``functools.lru_cache``/``cache`` function (HF's ``logger.warning_once``) called with
    constants is called now, through its cache: eager's first call runs it and fills the cache,
    every later one returns the cached result, so the call's result is a constant of the graph's
    code and the function runs once, as in eager. Called with tensors, it breaks the graph."""
    try:
        py_args = [python_value(a) for a in args]
        py_kwargs = {k: python_value(v) for k, v in kwargs.items()}
        hash((tuple(py_args), tuple(py_kwargs.items())))
    except (NotConstant, TypeError):
        frame.fail(f"{_name(fn)} (functools.lru_cache) called with tensors or unhashable arguments")
    result = evaluate(fn, *py_args, **py_kwargs)
    if any(isinstance(leaf, torch.Tensor) for leaf in tree_leaves(result)):
        frame.fail(f"{_name(fn)} (functools.lru_cache) returned a tensor")  # not frozen into the code
    return lift(result)


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


_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
_UNBOUND = (types.MethodDescriptorType, types.WrapperDescriptorType)  # ``dict.get``, not ``{}.get``


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
    result = evaluate(descriptor, owner.value, *call_args)  # what it raises (tuple.index's miss), as in Python
    if isinstance(result, _VIEWS):  # a live view: of a constant, its items now; of an input, its container
        if owner.source is None:
            return lift(list(result))
        return _container_view(frame, owner, descriptor, call_args)
    if owner.source is None:
        return lift(result)
    return wrap(frame.state, result, MethodCallSource(owner.source, descriptor, call_args, descriptor.__name__))


def _container_view(frame: "Frame", owner: ConstVar, descriptor: Any, call_args: tuple) -> Var:
    """``d.items()`` of a real dict read from the frame: the dict wrapped as a container (its keys
    guarded), then its own method."""
    from .builder import wrap

    container = wrap(frame.state, owner.value, owner.source)
    if isinstance(container, ConstVar):
        frame.fail(f"{descriptor.__qualname__} of a dict whose keys cannot be guarded")
    return call(frame, load_attr(frame, container, descriptor.__name__), [lift(a) for a in call_args], {})


_AUTOGRAD_CALLS = {torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad}


def _is_module_class(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, torch.nn.Module)


def _construct_module(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``nn.CrossEntropyLoss()`` or HF's ``ACT2FN[name]`` (a ``GELUActivation()``) inside captured
    code: a module with no state, built now from constant arguments (its ``__init__`` runs once,
    at capture), used as a constant. A module with parameters or buffers breaks the graph."""
    try:
        py_args = [python_value(a) for a in args]
        py_kwargs = {k: python_value(v) for k, v in kwargs.items()}
    except NotConstant:
        frame.fail(f"constructing {cls.__name__} with tensors")
    with torch.random.fork_rng(devices=[]):  # a refused module's initialisation leaves no trace
        module = evaluate(cls, *py_args, **py_kwargs)
    if any(True for _ in module.parameters()) or any(b is not None for b in module.buffers()):
        frame.fail(f"constructing {cls.__name__} (a module with parameters) inside captured code")
    return ConstVar(module)


def _builtin_handler(value: Any) -> Callable | None:
    try:
        return BUILTIN_HANDLERS.get(value) or collective_handler(value)
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
    native = native_reason(module)
    if native is not None:  # DDP / FSDP2: the wrapper runs in Python, its module compiled
        frame.fail(native)
    if cls.__call__ is not _MODULE_CALL:
        own_call = class_function(frame.state, cls, "__call__", inspect.getattr_static(cls, "__call__"))
        return inline_call(frame, own_call, [mod_var, *args], kwargs)
    forward = inspect.getattr_static(module, "forward")
    if not isinstance(forward, types.FunctionType):
        frame.fail(f"forward of {cls.__name__} is not Python code")

    def call_forward(fwd_args: list[Var], fwd_kwargs: dict[str, Var]) -> Var:
        if "forward" in module.__dict__:  # an instance attribute replaced forward
            pin(mod_var)
            return call(frame, ConstVar(forward), fwd_args, fwd_kwargs)
        # read from the class, guarded: a class patched after compiling recompiles
        return inline_call(frame, class_function(frame.state, cls, "forward", forward), [mod_var, *fwd_args],
                           fwd_kwargs)

    if has_hooks(module):
        return hooks.call_with_hooks(frame, mod_var, args, kwargs, call_forward)
    if isinstance(mod_var, InstanceVar):  # another instance must have no hooks, no own forward
        frame.state.guards.plain_module_call(mod_var.source)
    return call_forward(args, kwargs)


