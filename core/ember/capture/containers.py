"""The containers that captured code builds (lists, dicts, sets, tuples, namedtuples) and the
iterators over them: their methods, attributes, iteration and truth.

``list.append``, ``dict.update``, ``set.add``... change the captured container in place (made
mutable first, see ``ops.mutable_list``); reads over constants are evaluated for real. A
namedtuple's fields are its items. ``keys()``, ``values()`` and ``items()`` are live views
(:class:`~.values.DictViewVar`): each use reads the dict as it is then.
"""
from __future__ import annotations

import collections
import types
from typing import TYPE_CHECKING, Any

from . import set_keys
from .collections_calls import COUNTER_READS, DequeVar, counter_method, deque_method, ordered_dict_method
from .constants import NotConstant, as_const, lift, python_value
from .container_dunders import (
    DUNDERS, call_dunder_method, calls_back, container_type, dict_copy, is_set_like, update_from,
)
from .container_types import base_of
from .dispatch import (
    call, each_item, handles_attr, handles_call, handles_iter, handles_len, handles_next, handles_truth, iterate,
)
from .exceptions import evaluate, throw
from .generators import stop_iteration
from .objects import ShadowVar, mapping_items
from .ops import matches, mutable_dict, mutable_list, mutable_set
from .sorting import list_sort
from .values import ConstVar, DictVar, DictViewVar, IteratorVar, ListVar, SetVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


class ContainerMethod(Var):
    """``list.append``, ``dict.items``, ``set.add`` ... on a container, before it is called."""

    def __init__(self, container: Var, name: str) -> None:
        self.container = container
        self.name = name


@handles_attr(ListVar, DictVar, SetVar)
def _container_attr(frame: "Frame", obj: Var, name: str) -> Var:
    if name == "maxlen" and isinstance(obj, DequeVar):
        return ConstVar(obj.maxlen)
    kind = obj.python_type()
    if name == "__class__":
        return ConstVar(kind)
    if name == "default_factory" and isinstance(obj, DictVar) and obj.default_factory is not None:
        return obj.default_factory
    if not hasattr(kind, name):
        throw(AttributeError(f"{kind.__name__!r} object has no attribute {name!r}"))
    if name.startswith("__") and not (isinstance(obj, (DictVar, SetVar, ListVar, TupleVar)) and name in DUNDERS):
        frame.fail(f"attribute {name} of a container")
    if name == "fromkeys":  # a class method: bound to the class
        return ConstVar(getattr(kind, name))
    return ContainerMethod(obj, name)


@handles_attr(TupleVar)
def _tuple_attr(frame: "Frame", obj: TupleVar, name: str) -> Var:
    if obj.tuple_type is tuple:
        return _container_attr(frame, obj, name)
    fields = getattr(obj.tuple_type, "_fields", None) or getattr(obj.tuple_type, "__match_args__", None)
    if fields and name in fields:
        return obj.items[fields.index(name)]
    return ContainerMethod(obj, name)


@handles_iter(TupleVar, ListVar)
def _iterate_sequence(frame: "Frame", var: TupleVar | ListVar) -> list[Var]:
    return list(var.items)


@handles_iter(DictVar)
def _iterate_dict(frame: "Frame", var: DictVar) -> list[Var]:
    return [set_keys.key_var(k) for k in var.items]


@handles_iter(SetVar)
def _iterate_set(frame: "Frame", var: SetVar) -> list[Var]:
    return [set_keys.element(v) for v in var.items]


@handles_iter(IteratorVar)
def _iterate_rest(frame: "Frame", var: IteratorVar) -> list[Var]:
    items = var.items[var.index:]
    frame.state.remember(var)
    var.index = len(var.items)
    return list(items)


@handles_next(IteratorVar)
def _iterator_next(frame: "Frame", var: IteratorVar, sent: Var | None) -> Var | None:
    if sent is not None and not (isinstance(sent, ConstVar) and sent.value is None):
        throw(AttributeError("'list_iterator' object has no attribute 'send'"))
    frame.state.remember(var)
    return var.next()


@handles_truth(IteratorVar)
def _iterator_truth(frame: "Frame", var: IteratorVar) -> bool:
    return True


_ITERATOR_METHODS = ("__iter__", "__next__", "__length_hint__")


@handles_attr(IteratorVar)
def _iterator_attr(frame: "Frame", var: IteratorVar, name: str) -> Var:
    if name not in _ITERATOR_METHODS or name == "__length_hint__" and not var.sized:
        frame.fail(f"attribute {name!r} of an iterator over a captured container")
    return ContainerMethod(var, name)


def _iterator_method(frame: "Frame", var: IteratorVar, name: str, args: list[Var]) -> Var:
    """``it.__iter__()`` (itself), ``it.__next__()``, ``it.__length_hint__()`` (the items left, of an
    iterator over a builtin container)."""
    if args:
        throw(TypeError(f"{name}() takes no arguments ({len(args)} given)"))
    if name == "__iter__":
        return var
    if name == "__length_hint__":
        return ConstVar(max(len(var.items) - var.index, 0))
    item = _iterator_next(frame, var, None)
    if item is None:
        stop_iteration(frame, var)
    return item


def view_pairs(frame: "Frame", view: DictViewVar) -> list[tuple[Any, Var]]:
    """The (key, value) pairs of the view's mapping, as they are now."""
    mapping = view.mapping
    if isinstance(mapping, DictVar):
        return list(mapping.items.items())
    if isinstance(mapping, ShadowVar):
        return mapping_items(frame, mapping)
    frame.fail(f"a view of a {type(mapping).__name__}")
    raise AssertionError


@handles_iter(DictViewVar)
def _iterate_view(frame: "Frame", view: DictViewVar) -> list[Var]:
    pairs = view_pairs(frame, view)
    if view.kind == "keys":
        return [set_keys.element(k) for k, _ in pairs]
    if view.kind == "values":
        return [v for _, v in pairs]
    return [TupleVar([set_keys.element(k), v]) for k, v in pairs]


@handles_len(DictViewVar)
def _view_len(frame: "Frame", view: DictViewVar) -> Var:
    return ConstVar(len(view_pairs(frame, view)))


@handles_truth(DictViewVar)
def _view_truth(frame: "Frame", view: DictViewVar) -> bool:
    return len(view_pairs(frame, view)) > 0


@handles_len(TupleVar, ListVar, DictVar, SetVar)
def _container_len(frame: "Frame", var: Var) -> Var:
    return ConstVar(len(var.items))


@handles_truth(TupleVar, ListVar, DictVar, SetVar)
def _container_truth(frame: "Frame", var: Var) -> bool:
    return len(var.items) > 0


@handles_call(ContainerMethod)
def container_method(frame: "Frame", fn: ContainerMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    obj, name = fn.container, fn.name
    if name.startswith("__") and name in DUNDERS and (isinstance(obj, (DictVar, SetVar, ListVar, TupleVar))
                                                      or is_set_like(obj)):
        return call_dunder_method(frame, obj, name, args, kwargs)
    if isinstance(obj, IteratorVar):
        return _iterator_method(frame, obj, name, args)
    if isinstance(obj, DequeVar):
        result = deque_method(frame, obj, name, args)
        if result is not None:
            return result
    if isinstance(obj, ListVar) and name == "sort" and not isinstance(obj, DequeVar):
        return list_sort(frame, mutable_list(frame, obj).items, args, kwargs)
    if isinstance(obj, ListVar):
        if kwargs:
            frame.fail(f"list.{name} with keyword arguments")
        return _list_method(frame, obj, name, args)
    if isinstance(obj, DictVar):
        calls_back(frame, obj, name)
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
            return _search(frame, obj.items, name, args, "tuple")
    frame.fail(f"method {name!r} of a {type(obj).__name__} is not supported")
    raise AssertionError


#: how many positional arguments a list method takes (at least, at most)
_LIST_ARITY = {"append": (1, 1), "extend": (1, 1), "insert": (2, 2), "pop": (0, 1), "reverse": (0, 0),
               "clear": (0, 0), "copy": (0, 0), "count": (1, 1), "index": (1, 3), "remove": (1, 1)}


def _list_method(frame: "Frame", obj: ListVar, name: str, args: list[Var]) -> Var:
    low, high = _LIST_ARITY.get(name, (0, len(args)))
    if not low <= len(args) <= high:
        throw(TypeError(f"list.{name}() takes {low if low == high else f'{low} to {high}'} arguments "
                        f"({len(args)} given)"))
    if name in ("index", "count", "copy", "__len__"):
        if name == "copy" and isinstance(obj, DequeVar):
            made = DequeVar(list(obj.items))
            made.maxlen = obj.maxlen
            return made
        if name == "copy":
            return ListVar(list(obj.items))
        try:
            values = [python_value(v) for v in obj.items]
            if isinstance(obj, DequeVar):  # its own messages (``'z' is not in deque``)
                values = collections.deque(values)
            return lift(evaluate(getattr(values, name), *[python_value(a) for a in args]))
        except NotConstant:
            return _search(frame, obj.items, name, args, "deque" if isinstance(obj, DequeVar) else "list")
    items = mutable_list(frame, obj).items
    if name == "append":
        items.append(args[0])
    elif name == "extend":  # one item at a time: a generator reading the list sees it grow
        for item in each_item(frame, args[0]):
            items.append(item)
    elif name == "insert":
        items.insert(python_value(args[0]), args[1])
    elif name == "pop":
        return evaluate(items.pop, *(python_value(a) for a in args))
    elif name == "reverse":
        items.reverse()
    elif name == "clear":
        items.clear()
    elif name == "remove":
        _remove(frame, items, args[0])
    else:
        frame.fail(f"list.{name} is not supported")
    return ConstVar(None)


def _remove(frame: "Frame", items: list[Var], target: Var) -> None:
    """``list.remove``: the first item that is ``target`` or equals it, as Python compares them."""
    i = 0
    while i < len(items):  # an __eq__ of Python may change the list, as in CPython
        if matches(frame, items[i], target):
            del items[i]
            return
        i += 1
    throw(ValueError("list.remove(x): x not in list"))


def _search(frame: "Frame", items: list[Var], name: str, args: list[Var], kind: str) -> Var:
    """``index``/``count`` over items not all constants: compared one by one, as Python does."""
    target = args[0]
    if name == "count":
        return ConstVar(sum(matches(frame, item, target) for item in list(items)))
    bounds = [python_value(a) for a in args[1:3]]
    if not all(isinstance(b, int) for b in bounds):
        throw(TypeError("slice indices must be integers or have an __index__ method"))
    i, stop, _ = slice(*bounds).indices(len(items)) if bounds else (0, len(items), 1)
    while i < min(stop, len(items)):
        if matches(frame, items[i], target):
            return ConstVar(i)
        i += 1
    shown = repr(as_const(frame, target, f"the {kind}.index message"))
    throw(ValueError(f"{kind}.index(x): x not in tuple" if kind == "tuple" else f"{shown} is not in {kind}"))
    raise AssertionError


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
    if name == "popitem" and not issubclass(obj.dict_type, collections.OrderedDict) and (args or kwargs):
        throw(TypeError(f"dict.popitem() takes no arguments ({len(args) + len(kwargs)} given)"))
    if name in ("move_to_end", "popitem"):
        return ordered_dict_method(frame, mutable_dict(frame, obj).items, name, args, kwargs)
    if kwargs and name != "update":
        frame.fail(f"dict.{name} with keyword arguments")
    if name in COUNTER_READS and issubclass(obj.dict_type, collections.Counter):
        return counter_method(frame, obj, name, args, kwargs)
    if name in ("items", "keys", "values"):
        if args:
            throw(TypeError(f"dict.{name}() takes no arguments ({len(args)} given)"))
        return DictViewVar(obj, name)
    if name == "get":
        if not 1 <= len(args) <= 2:
            throw(TypeError(f"get expected 1 or 2 arguments, got {len(args)}"))
        key = set_keys.dict_key(frame, args[0])
        return items.get(key, args[1] if len(args) > 1 else ConstVar(None))
    if name == "copy":
        if args:
            throw(TypeError(f"dict.copy() takes no arguments ({len(args)} given)"))
        return dict_copy(frame, obj)
    if name == "__contains__":
        return ConstVar(set_keys.dict_key(frame, args[0]) in items)
    table = mutable_dict(frame, obj).items
    if name == "update":
        if len(args) > 1:
            throw(TypeError(f"update expected at most 1 argument, got {len(args)}"))
        if args:
            update_from(frame, table, args[0])
        table.update(kwargs)
        return ConstVar(None)
    if name == "pop":
        if not 1 <= len(args) <= 2:
            throw(TypeError(f"pop expected 1 or 2 arguments, got {len(args)}"))
        key = set_keys.dict_key(frame, args[0])
        if key in table:
            return table.pop(key)
        if len(args) > 1:
            return args[1]
        throw(KeyError(key))
    if name == "setdefault":
        if not 1 <= len(args) <= 2:
            throw(TypeError(f"setdefault expected 1 or 2 arguments, got {len(args)}"))
        return table.setdefault(set_keys.dict_key(frame, args[0]), args[1] if len(args) > 1 else ConstVar(None))
    if name == "clear":
        if args:
            throw(TypeError(f"dict.clear() takes no arguments ({len(args)} given)"))
        table.clear()
        return ConstVar(None)
    frame.fail(f"dict.{name} is not supported")
    raise AssertionError


_SET_READS = {"union", "intersection", "difference", "symmetric_difference", "copy", "issubset", "issuperset",
              "isdisjoint"}
_SET_WRITES = {"add", "discard", "remove", "pop", "clear", "update", "intersection_update", "difference_update",
               "symmetric_difference_update"}


def _set_method(frame: "Frame", obj: Var, name: str, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """A method of a set (a SetVar, or a set or frozenset from outside): evaluated on its elements
    (tensors and objects by identity, ``set_keys``); a subclass's instance as its builtin set."""
    set_type = base_of(obj.set_type if isinstance(obj, SetVar) else type(obj.value))
    if name in _SET_WRITES and set_type is frozenset:
        throw(AttributeError(f"'frozenset' object has no attribute {name!r}"))
    if kwargs or name not in _SET_READS | _SET_WRITES:
        frame.fail(f"{set_type.__name__}.{name} is not supported")
    if name in _STOPS_EARLY and len(args) == 1 and _lazy_iterable(args[0]):
        keys = set_keys.keys_of(frame, obj)
        for item in each_item(frame, args[0]):  # Python stops at the first shared (missing) element
            if (set_keys.key(frame, item) in keys) == (name == "isdisjoint"):
                return ConstVar(False)
        return ConstVar(True)
    if name == "add":
        values = [set_keys.key(frame, a) for a in args]
    elif name in ("discard", "remove"):
        values = [set_keys.lookup(frame, a) for a in args]
    else:
        values = [_set_argument(frame, a) for a in args]
    if name in _SET_WRITES:
        items = mutable_set(frame, obj).items
        result = evaluate(getattr(items, name), *values)
        set_keys.keep_distinct(frame, items)
        return set_keys.element(result) if name == "pop" else lift(result)
    result = evaluate(getattr(set_type(set_keys.keys_of(frame, obj)), name), *values)
    return set_keys.make(frame, result, type(result)) if isinstance(result, (set, frozenset)) else lift(result)


#: the set methods that read an iterable argument only up to the answer
_STOPS_EARLY = ("isdisjoint", "issuperset")


def _lazy_iterable(var: Var) -> bool:
    """An argument whose elements are read one by one (a generator, an iterator), not a set or a constant."""
    if isinstance(var, SetVar) or isinstance(var, ConstVar) and isinstance(var.value, (set, frozenset)):
        return False
    try:
        python_value(var)
    except NotConstant:
        return True
    return False


def _set_argument(frame: "Frame", var: Var) -> Any:
    """What a set method is given: a set (its keys), or any iterable (its elements' keys)."""
    if isinstance(var, SetVar) or isinstance(var, ConstVar) and isinstance(var.value, (set, frozenset)):
        return set_keys.keys_of(frame, var)
    try:
        return python_value(var)
    except NotConstant:
        return [set_keys.key(frame, v) for v in iterate(frame, var)]


_OWNERS = (dict, collections.OrderedDict, collections.defaultdict, set, frozenset)
_DESCRIPTORS = (types.MethodDescriptorType, types.WrapperDescriptorType)


def is_unbound_method(value: Any) -> bool:
    """``set.add``, ``dict.__eq__``: a builtin container's method read from its class."""
    return isinstance(value, _DESCRIPTORS) and value.__objclass__ in _OWNERS


def call_unbound(frame: "Frame", descriptor: Any, args: list[Var], kwargs: dict[str, Var]) -> Var | None:
    """``set.add(s, x)``: the builtin's method on a container the capture holds (a subclass's
    instance too, its overrides left out); None for another first argument."""
    owner, name = descriptor.__objclass__, descriptor.__name__
    if not args:
        throw(TypeError(f"unbound method {owner.__name__}.{name}() needs an argument"))
    obj = args[0]
    if not (isinstance(obj, (DictVar, SetVar)) or is_set_like(obj)):
        return None
    kind = container_type(obj)
    if not issubclass(kind, owner):
        throw(TypeError(f"descriptor {name!r} for {owner.__name__!r} objects doesn't apply to a "
                        f"{kind.__name__!r} object"))
    return container_method(frame, ContainerMethod(obj, name), list(args[1:]), kwargs)


def is_fromkeys(value: Any) -> bool:
    """``dict.fromkeys``, ``OrderedDict.fromkeys``, ``Sub.fromkeys``: bound to the class."""
    return isinstance(value, types.BuiltinMethodType) and value.__name__ == "fromkeys" \
        and isinstance(value.__self__, type) and issubclass(value.__self__, dict)


def from_keys(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``cls.fromkeys(iterable, value=None)``: a dict or OrderedDict built here; any other class is
    called and filled item by item, so that its own code runs as in Python."""
    owner = next(k for k in cls.__mro__ if "fromkeys" in k.__dict__)
    if owner is collections.OrderedDict and set(kwargs) == {"value"} and len(args) == 1:  # its value has a name
        args = [*args, kwargs.pop("value")]
    if kwargs:
        throw(TypeError(f"{owner.__name__}.fromkeys() takes no keyword arguments"))
    if not 1 <= len(args) <= 2:
        throw(TypeError(f"fromkeys expected {'at least 1' if not args else 'at most 2'} arguments, got {len(args)}"))
    value = args[1] if len(args) > 1 else ConstVar(None)
    if cls in (dict, collections.OrderedDict):
        keys = [set_keys.dict_key(frame, k) for k in iterate(frame, args[0])]
        return DictVar(dict.fromkeys(keys, value), dict_type=cls)
    from .ops import setitem

    made = call(frame, ConstVar(cls), [], {})
    for key in iterate(frame, args[0]):
        setitem(frame, made, key, value)
    return made


__all__ = ["ContainerMethod", "call_unbound", "container_method", "from_keys", "is_fromkeys", "is_unbound_method"]
