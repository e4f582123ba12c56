"""Attribute access on symbolic values: tensor metadata, module parameters, object attributes.

Module parameters, buffers and submodules are read through the module's own dictionaries so
that guards and the generated entry reach them without ``nn.Module.__getattr__``. Properties
and methods written in Python are inlined; instance and class attributes are read for real and
guarded through their source.
"""
from __future__ import annotations

import inspect
import os
import types
from typing import TYPE_CHECKING, Any

import torch

from . import objects, scalar_tensors, user_objects
from .builder import wrap
from .constants import READ_ONLY_METHODS, READ_ONLY_OWNERS
from .instances import pin
from .dispatch import handles_call
from .sources import AttrSource, DictEntrySource
from .symbolic import constant_of, has_symbolic
from .torch_ops import GRAPH_BREAK_CALLS, UNSUPPORTED_TENSOR_ATTRS, UNSUPPORTED_TENSOR_METHODS, module_is_trusted
from .values import (
    BoundMethodVar, ConstVar, DictVar, FunctionVar, ListVar, SetVar, TensorVar, TupleVar, Var,
)

if TYPE_CHECKING:
    from .frame import Frame

_TENSOR_METADATA = {
    "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_cpu", "is_leaf", "layout",
    "is_sparse", "is_quantized", "is_meta", "is_mps", "is_nested", "itemsize", "nbytes",
    "is_mkldnn", "is_complex_", "names",
}
_TENSOR_VIEW_ATTRS = {"T", "mT", "H", "mH", "real", "imag"}


class TensorMethod(Var):
    """``tensor.method`` before it is called."""

    def __init__(self, tensor: TensorVar, name: str) -> None:
        self.tensor = tensor
        self.name = name


@handles_call(TensorMethod)
def _call_tensor_method(frame: "Frame", fn: TensorMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if fn.name in GRAPH_BREAK_CALLS:
        frame.fail(f"Tensor.{fn.name}() runs autograd's engine (graph break)")
    rewritten = scalar_tensors.rewrite(frame, fn.name, fn.tensor, args, kwargs)
    if rewritten is not None:
        return rewritten
    return frame.state.graph.call("call_method", fn.name, (fn.tensor, *args), kwargs)


class ContainerMethod(Var):
    """``list.append``, ``dict.items``, ``set.add`` ... on a container, before it is called."""

    def __init__(self, container: Var, name: str) -> None:
        self.container = container
        self.name = name


def load_attr(frame: "Frame", obj: Var, name: str) -> Var:
    from .supers import SuperProxy, super_attr

    if isinstance(obj, SuperProxy):
        return super_attr(frame, ConstVar(obj.cls), obj.self_var, name)
    if isinstance(obj, objects.ObjectVar):
        return objects.load_attr(frame, obj, name)
    if isinstance(obj, user_objects.UserObjectVar):
        return user_objects.load_attr(frame, obj, name)
    if isinstance(obj, TensorVar):
        return _tensor_attr(frame, obj, name)
    if isinstance(obj, (ListVar, DictVar, SetVar)) or (isinstance(obj, TupleVar) and obj.tuple_type is tuple):
        if name.startswith("__"):
            frame.fail(f"attribute {name} of a container")
        return ContainerMethod(obj, name)
    if isinstance(obj, ConstVar) and type(obj.value) in (set, frozenset) and hasattr(obj.value, name) \
            and not name.startswith("__"):
        return ContainerMethod(obj, name)
    if isinstance(obj, TupleVar):
        fields = getattr(obj.tuple_type, "_fields", None) or getattr(obj.tuple_type, "__match_args__", None)
        if fields and name in fields:
            return obj.items[fields.index(name)]
        return ContainerMethod(obj, name)
    if isinstance(obj, ConstVar):
        return _object_attr(frame, obj, name)
    if isinstance(obj, FunctionVar) and name in ("__name__", "__qualname__"):
        return ConstVar(obj.name)
    frame.fail(f"attribute {name!r} of a {type(obj).__name__} is not supported")
    raise AssertionError


def input_of(frame: "Frame", obj: Var) -> "tuple[Any, torch.Tensor] | None":
    """(source, tensor) of the graph input ``obj`` stands for (after in-place ops on it too)."""
    if not isinstance(obj, TensorVar):
        return None
    for source, node, tensor in frame.state.graph.inputs:
        if node is obj.node or node.meta.get("example_value") is obj.fake:
            return source, tensor
    return None


def _input_grad(frame: "Frame", source: Any, tensor: torch.Tensor) -> Var:
    """``p.grad`` of a tensor the graph takes as input (a parameter after ``backward``): the
    gradient is read as it is at each call, so it is an input too (or None, guarded); a
    gradient assigned earlier in the capture is read back as assigned."""
    stored = frame.state.side_effects.lookup_attr(tensor, "grad")
    if stored is not None:
        return stored
    return wrap(frame.state, tensor.grad, AttrSource(source, "grad"))


def _tensor_attr(frame: "Frame", obj: TensorVar, name: str) -> Var:
    found = input_of(frame, obj) if name == "grad" else None
    if found is not None:
        return _input_grad(frame, *found)
    if name in UNSUPPORTED_TENSOR_ATTRS:
        frame.fail(f"Tensor.{name} is not supported in captured code")
    if name in _TENSOR_METADATA:
        value = getattr(obj.fake, name)
        if name == "shape" and has_symbolic(value):  # a dynamic size: computed by the graph
            return frame.state.graph.call("call_method", "size", (obj,), {})
        if has_symbolic(value):  # nbytes of a dynamic tensor: specialised (and guarded)
            value = int(value)
        return ConstVar(constant_of(value))
    if name in _TENSOR_VIEW_ATTRS:
        import operator  # noqa: F401  (getattr node)

        return frame.state.graph.call("call_function", getattr, (obj, ConstVar(name)), {})
    if name in UNSUPPORTED_TENSOR_METHODS:
        frame.fail(f"Tensor.{name}() needs the tensor's data (graph break)")
    # Tensor.backward and friends become a TensorMethod too: the break happens at the call
    if not hasattr(torch.Tensor, name):
        frame.fail(f"Tensor has no attribute {name!r}")
    return TensorMethod(obj, name)


def _module_attr(frame: "Frame", obj: ConstVar, name: str) -> Var | None:
    module: torch.nn.Module = obj.value
    for table in ("_parameters", "_buffers", "_modules"):
        entries = module.__dict__.get(table)
        if entries is not None and name in entries:
            source = DictEntrySource(obj.source, table, name) if obj.source else None
            return wrap(frame.state, entries[name], source)
    return None


def _object_attr(frame: "Frame", obj: ConstVar, name: str) -> Var:
    from .side_effects import DELETED

    value = obj.value
    stored = frame.state.side_effects.lookup_attr(value, name)
    if stored is DELETED:
        frame.fail(f"{type(value).__name__} object has no attribute {name!r} (deleted)")
    if stored is not None:
        return stored
    if isinstance(value, types.ModuleType):
        try:
            attr = getattr(value, name)
        except AttributeError:
            frame.fail(f"module {value.__name__!r} has no attribute {name!r}")
        if module_is_trusted(value) or obj.source is None:
            return ConstVar(attr) if not isinstance(attr, torch.Tensor) else wrap(
                frame.state, attr, AttrSource(obj.source, name) if obj.source else None)
        return wrap(frame.state, attr, AttrSource(obj.source, name))
    if value is os.environ:
        return ConstVar(getattr(value, name))
    if isinstance(value, torch.nn.Module):
        found = _module_attr(frame, obj, name)
        if found is not None:
            return found
    try:
        static = inspect.getattr_static(value, name)
    except AttributeError:
        static = None
        if not hasattr(value, name):
            frame.fail(f"{type(value).__name__} object has no attribute {name!r}")
    instance_dict = getattr(value, "__dict__", None)
    is_class = isinstance(value, type)
    if name == "__dict__" and any(key[0] == id(value) for key in frame.state.side_effects.attrs):
        frame.fail(f"reading __dict__ of a {type(value).__name__} with stores not yet replayed")
    if not is_class and isinstance(instance_dict, dict) and name in instance_dict:
        return _wrap_attr(frame, obj, name, instance_dict[name])
    if isinstance(static, property) and not is_class:
        from .inline import inline_call

        return inline_call(frame, ConstVar(static.fget), [obj], {})
    if isinstance(static, types.FunctionType):
        if is_class:
            return _wrap_attr(frame, obj, name, static)
        return BoundMethodVar(ConstVar(static), obj)
    if isinstance(static, (types.MethodDescriptorType, types.WrapperDescriptorType)) \
            and static.__objclass__ in READ_ONLY_OWNERS \
            and name in READ_ONLY_METHODS and not is_class:  # ``d.get(k)`` of a real dict: on the dict
        return BoundMethodVar(ConstVar(static), obj)
    if isinstance(static, staticmethod):
        return ConstVar(static.__func__)
    if isinstance(static, classmethod):
        cls = value if is_class else type(value)
        return BoundMethodVar(ConstVar(static.__func__), ConstVar(cls))
    try:
        attr = getattr(value, name)
    except Exception as exc:
        frame.fail(f"reading attribute {name!r} raised {type(exc).__name__}: {exc}")
        raise
    if isinstance(attr, (types.BuiltinMethodType, types.MethodWrapperType)) or callable(attr) and not isinstance(
        attr, (type, torch.nn.Module, types.FunctionType)
    ) and getattr(attr, "__self__", None) is value:
        pin(obj)  # a builtin method bound to this very object
        return ConstVar(attr)
    return _wrap_attr(frame, obj, name, attr)


def _wrap_attr(frame: "Frame", obj: ConstVar, name: str, attr: Any) -> Var:
    if obj.source is None:
        if isinstance(attr, torch.Tensor):
            frame.fail(f"attribute {name!r} is a tensor of an object with no source")
        return ConstVar(attr)
    return wrap(frame.state, attr, AttrSource(obj.source, name, isinstance(obj.value, torch.nn.Module)))


def store_attr(frame: "Frame", obj: Var, name: str, value: Any, *, default: bool = False) -> None:
    """Record ``obj.name = value`` (or a deletion) to be replayed after the graph.

    A class's own Python ``__setattr__``/``__delattr__`` is inlined (its stores end in
    ``object.__setattr__``, which comes back here with ``default``: Python's own store)."""
    if not default and _inline_custom_store(frame, obj, name, value):
        return
    if isinstance(obj, user_objects.UserObjectVar):  # built by the capture: nothing to replay
        user_objects.store_attr(frame, obj, name, value)
        return
    found = input_of(frame, obj) if name == "grad" else None
    if found is not None and (isinstance(value, TensorVar) or (isinstance(value, ConstVar) and value.value is None)):
        source, tensor = found  # replayed on the input itself (zero_grad's ``p.grad = None``)
        frame.state.side_effects.store_attr(ConstVar(tensor, source), tensor, name, value)
        return
    if isinstance(obj, ConstVar) and id(obj.value) in frame.state.made:
        _store_into_made(frame, obj.value, name, value, default)
        return
    if not isinstance(obj, ConstVar) or obj.source is None:
        frame.fail(f"assignment to attribute {name!r} of a {type(obj).__name__}")
    target = obj.value
    cls = type(target)
    if isinstance(target, torch.nn.Module):
        tables = ("_parameters", "_buffers", "_modules")
        if any(name in target.__dict__.get(t, {}) for t in tables):
            frame.fail(f"assignment of module parameter/buffer/submodule {name!r}")
        if isinstance(value, ConstVar) and isinstance(value.value, torch.nn.Module):
            frame.fail(f"assignment of submodule {name!r}")
    elif isinstance(target, type) or not default and _store_hook(cls, value) is not _store_hook(object, value):
        frame.fail(f"assignment to attribute {name!r} of a {cls.__name__} (a class, or a __setattr__ not in Python)")
    if isinstance(inspect.getattr_static(target, name, None), property):
        frame.fail(f"assignment to property {name!r}")
    frame.state.side_effects.store_attr(obj, target, name, value, raw=default)


def _inline_custom_store(frame: "Frame", obj: Var, name: str, value: Any) -> bool:
    """Inline the Python ``__setattr__`` (``__delattr__`` for a deletion) of a real object's class
    (PretrainedConfig's): True when it ran, False when the class keeps Python's own."""
    from .inline import inline_call
    from .side_effects import DELETED

    if not isinstance(obj, ConstVar) or isinstance(obj.value, (type, torch.nn.Module)):
        return False
    hook = _store_hook(type(obj.value), value)
    if not isinstance(hook, types.FunctionType):
        return False
    inline_call(frame, ConstVar(hook), [obj, ConstVar(name)] + ([] if value is DELETED else [value]), {})
    return True


def _store_into_made(frame: "Frame", target: Any, name: str, value: Any, default: bool) -> None:
    """A store into an object the capture made (a deep copy): applied to it now, since every call
    of the captured code makes the same one (a value of the store must be a constant)."""
    from .constants import NotConstant, python_value
    from .exceptions import evaluate
    from .side_effects import DELETED

    if not default and _store_hook(type(target), value) is not _store_hook(object, value):
        frame.fail(f"assignment to attribute {name!r} of a {type(target).__name__} (a __setattr__ not in Python)")
    if value is DELETED:
        evaluate(object.__delattr__, target, name)
        return
    try:
        evaluate(object.__setattr__, target, name, python_value(value))
    except NotConstant:
        frame.fail(f"storing a {type(value).__name__} into a {type(target).__name__} made by a deep copy")


def _store_hook(cls: type, value: Any) -> Any:
    from .side_effects import DELETED

    return inspect.getattr_static(cls, "__delattr__" if value is DELETED else "__setattr__", None)


__all__ = ["ContainerMethod", "TensorMethod", "load_attr", "store_attr"]
