"""Attributes of real objects (:class:`~.values.ConstVar`): modules, classes, instances, Python modules.

Module parameters, buffers and submodules are read through the module's own dictionaries so
that guards and the generated entry reach them without ``nn.Module.__getattr__``. Properties
and methods written in Python are inlined; instance and class attributes are read for real and
guarded through their source. Stores are recorded to be replayed after the graph (a class's own
Python ``__setattr__`` is inlined). Tensors' attributes are in ``tensors``, containers' methods
in ``containers``.
"""
from __future__ import annotations

import inspect
import os
import types
from typing import TYPE_CHECKING, Any

import torch

from .builder import wrap
from .constants import READ_ONLY_METHODS, READ_ONLY_OWNERS
from .container_dunders import DUNDERS
from .container_types import is_data_descriptor, python_attr, read_through_descriptor
from .containers import ContainerMethod
from . import numpy_arrays
from .dispatch import handles_attr, handles_store, load_attr
from .exceptions import throw
from .instances import ArrayVar, by_type, pin
from .sources import AttrSource, DictEntrySource, MethodCallSource, constant_source
from .torch_ops import module_is_trusted
from .values import BoundMethodVar, ConstVar, DictVar, TensorVar, Var

if TYPE_CHECKING:
    from .frame import Frame


@handles_attr(ConstVar)
def _const_attr(frame: "Frame", obj: ConstVar, name: str) -> Var:
    if isinstance(obj, ArrayVar):  # ``a.sum``, ``a.T``: traced, or (``a.tolist``) read from its elements now
        traced = numpy_arrays.frame_array_attr(frame, obj, name)
        if traced is not None:
            return traced
        obj.pin()
    if type(obj.value) in (set, frozenset) and hasattr(obj.value, name) and (not name.startswith("__")
                                                                           or name in DUNDERS):
        return ContainerMethod(obj, name)
    return _object_attr(frame, obj, name)


#: the builtin read methods of a dict subclass whose instances are objects to capture (a ModelOutput:
#: a Python __setattr__), answered from its items
_DICT_READS = ("keys", "values", "items", "get")


def _dict_items(frame: "Frame", obj: ConstVar) -> DictVar:
    """The items of such a dict read from the frame (a ModelOutput crossing a graph break, whose
    ``to_tuple`` reads ``self.keys()``): its keys guarded, each value read through
    ``dict.__getitem__`` by source. A change of the object goes through its Python hooks, which
    break the graph before any later read could see stale items."""
    pin(obj)
    frame.state.guards.container_keys(obj.source, obj.value, dict.keys)
    getter = dict.__getitem__
    return DictVar({k: wrap(frame.state, getter(obj.value, k), MethodCallSource(obj.source, getter, (k,), "__getitem__"))
                    for k in dict.keys(obj.value)})


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
    if name in _DICT_READS and isinstance(value, dict) and obj.source is not None \
            and python_attr(type(value), name) is None and all(type(k) in (str, int) for k in dict.keys(value)):
        return load_attr(frame, _dict_items(frame, obj), name)
    if isinstance(value, types.ModuleType):
        try:
            attr = getattr(value, name)
        except AttributeError:
            frame.fail(f"module {value.__name__!r} has no attribute {name!r}")
        source = AttrSource(obj.source or constant_source(value), name)
        if (module_is_trusted(value) or obj.source is None) and not _is_state(attr):
            return ConstVar(attr) if not isinstance(attr, torch.Tensor) else wrap(frame.state, attr, source)
        return wrap(frame.state, attr, source)  # a flag or a table of a library may change: guarded
    if value is os.environ:  # reached as a constant: read through the object itself
        return load_attr(frame, wrap(frame.state, value, constant_source(value)), name)
    if isinstance(value, torch.nn.Module):
        found = _module_attr(frame, obj, name)
        if found is not None:
            return found
    held = _held_dict(frame, getattr(value, "__dict__", None)) if not isinstance(value, type) else None
    if held is not None and name in held.items \
            and not read_through_descriptor(inspect.getattr_static(type(value), name, None)):
        return held.items[name]  # the code holds the object's __dict__: its attributes are read through it
    try:
        static = inspect.getattr_static(value, name)
    except AttributeError:
        static = None
        if not hasattr(value, name):
            if type(value).__module__ == "builtins" and not hasattr(value, "__dict__"):  # never gets one
                throw(AttributeError(f"{type(value).__name__!r} object has no attribute {name!r}"))
            frame.fail(f"{type(value).__name__} object has no attribute {name!r}")
    instance_dict = getattr(value, "__dict__", None)
    is_class = isinstance(value, type)
    if name == "__dict__" and not is_class and isinstance(instance_dict, dict) and obj.source is not None:
        return _instance_dict(frame, obj, instance_dict)
    if held is not None:  # not in the __dict__ the code holds
        instance_dict = {}
    if not is_class and isinstance(instance_dict, dict) and name in instance_dict \
            and not read_through_descriptor(static):
        return _wrap_attr(frame, obj, name, instance_dict[name])
    if not is_class:
        from .inline import class_member

        member = class_member(frame, obj, type(value), name, static)
        if member is not None:
            return member
    if isinstance(static, types.FunctionType):  # of a class: the function itself
        return _wrap_attr(frame, obj, name, static)
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


def _held_dict(frame: "Frame", instance_dict: Any) -> Var | None:
    """The DictVar of a real object's ``__dict__`` when the captured code read it (``obj.__dict__``)."""
    seen = frame.state.containers.get(id(instance_dict)) if isinstance(instance_dict, dict) else None
    return seen[1] if seen is not None and seen[0] is instance_dict else None


def _instance_dict(frame: "Frame", obj: ConstVar, instance_dict: dict) -> Var:
    """``obj.__dict__`` of an object read from the frame: its dict, read through its source (its
    changes replayed as a dict's); the attribute stores the code made before move into it, so
    that it holds them, and later reads and stores go through it (``_held_dict``)."""
    from .ops import mutable_dict
    from .side_effects import DELETED

    table = wrap(frame.state, instance_dict, AttrSource(obj.source, "__dict__"))
    effects = frame.state.side_effects
    pending = [key for key in effects.attrs if key[0] == id(obj.value)]
    if not pending:
        return table
    if not isinstance(table, DictVar) or any(
            is_data_descriptor(inspect.getattr_static(type(obj.value), key[1], None)) for key in pending):
        frame.fail(f"reading __dict__ of a {type(obj.value).__name__} with stores not yet replayed")
    items = mutable_dict(frame, table).items
    for key in pending:
        _, name, value = effects.attrs.pop(key)
        effects.raw.discard(key)
        if value is DELETED:
            items.pop(name, None)
        else:
            items[name] = value
    return table


#: values of a module's attributes that are state, not code: read through a guard
_STATE = (bool, int, float, str, bytes, type(None), list, dict, set)


def _is_state(value: Any) -> bool:
    """A flag (``torch.backends.cudnn.enabled``), a setting or a mutable table (``sys.argv``) of a
    library module, or ``os.environ``, as opposed to its functions, classes and constants."""
    return isinstance(value, _STATE) or value is os.environ


def _wrap_attr(frame: "Frame", obj: ConstVar, name: str, attr: Any) -> Var:
    if obj.source is None:
        if isinstance(attr, torch.Tensor):
            frame.fail(f"attribute {name!r} is a tensor of an object with no source")
        if _is_state(attr) and by_type(obj.value):  # a setting of a library's object: read through it
            return wrap(frame.state, attr, AttrSource(constant_source(obj.value), name))
        return ConstVar(attr)
    plain = not isinstance(obj.value, (torch.nn.Module, type, types.ModuleType))
    return wrap(frame.state, attr, AttrSource(obj.source, name), object_attr=plain)


@handles_store(ConstVar)
def _store_const_attr(frame: "Frame", obj: ConstVar, name: str, value: Any, default: bool) -> None:
    """Record ``obj.name = value`` (or a deletion) to be replayed after the graph.

    A class's own Python ``__setattr__``/``__delattr__`` is inlined (its stores end in
    ``object.__setattr__``, which comes back here with ``default``: Python's own store)."""
    if not default and _inline_custom_store(frame, obj, name, value):
        return
    if id(obj.value) in frame.state.made:
        _store_into_made(frame, obj.value, name, value, default)
        return
    if obj.source is None:
        frame.fail(f"assignment to attribute {name!r} of a {type(obj).__name__}")
    target = obj.value
    cls = type(target)
    if isinstance(target, torch.nn.Module):
        if name in target.__dict__.get("_parameters", {}):
            frame.fail(f"assignment of module parameter {name!r}")
        buffer_value = isinstance(value, TensorVar) or isinstance(value, ConstVar) and value.value is None
        if name in target.__dict__.get("_buffers", {}) and not (buffer_value and not default):
            frame.fail(f"assignment of a {type(value).__name__} to buffer {name!r}")
        module_value = isinstance(value, ConstVar) and isinstance(value.value, torch.nn.Module)
        if name in target.__dict__.get("_modules", {}) and not module_value:
            frame.fail(f"assignment of a {type(value).__name__} to submodule {name!r}")
        if module_value and default:
            frame.fail(f"object.__setattr__ of submodule {name!r}")
        # a submodule (``self.attn = self.block_attn``, big_bird's set_attention_type) or a buffer
        # (ctrl's ``self.pos_encoding = self.pos_encoding.to(dtype)``): replayed by
        # Module.__setattr__ after the graph, read back from the store until then
    elif isinstance(target, type) or not default and _store_hook(cls, value) is not _store_hook(object, value):
        frame.fail(f"assignment to attribute {name!r} of a {cls.__name__} (a class, or a __setattr__ not in Python)")
    if isinstance(inspect.getattr_static(target, name, None), property):
        frame.fail(f"assignment to property {name!r}")
    if _inline_descriptor_store(frame, obj, inspect.getattr_static(cls, name, None), value):
        return
    held = _held_dict(frame, getattr(target, "__dict__", None))
    if held is not None and not is_data_descriptor(inspect.getattr_static(cls, name, None)):
        _store_into_held(frame, held, name, value)  # the code holds its __dict__: stored there
        return
    frame.state.side_effects.store_attr(obj, target, name, value, raw=default)


def _inline_descriptor_store(frame: "Frame", obj: ConstVar, descriptor: Any, value: Any) -> bool:
    """``obj.name = value`` where the class's ``name`` is a descriptor whose ``__set__`` (or
    ``__delete__``) is Python code: that code runs, inlined, as Python runs it; recording the
    value instead made later reads return it (a ``__set__`` that doubles what it is given)."""
    from .inline import inline_call
    from .side_effects import DELETED

    hook = inspect.getattr_static(type(descriptor), "__delete__" if value is DELETED else "__set__", None)
    if not isinstance(hook, types.FunctionType):
        return False  # none, or C code (``__slots__`` members): the store is Python's own
    args = [ConstVar(descriptor), obj] + ([] if value is DELETED else [value])
    inline_call(frame, ConstVar(hook), args, {})
    return True


def _store_into_held(frame: "Frame", held: Var, name: str, value: Any) -> None:
    from .ops import mutable_dict
    from .side_effects import DELETED

    items = mutable_dict(frame, held).items
    if value is not DELETED:
        items[name] = value
    elif name in items:
        del items[name]
    else:
        throw(AttributeError(name))


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
