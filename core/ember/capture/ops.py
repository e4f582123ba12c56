"""Python operators over symbolic values: arithmetic, comparison, indexing, membership.

Constants are computed for real; anything touching a tensor becomes a graph node through the
``operator`` function that Python itself would call (``operator.add``, ``operator.getitem``...),
and so does arithmetic on symbolic sizes (:mod:`.symbolic`).
Containers of symbolic values are handled structurally. Iteration and truth are each kind's
own (the ``dispatch`` tables).
"""
from __future__ import annotations

import collections
import operator
import types
from typing import TYPE_CHECKING, Any

import torch

from ..errors import Unsupported
from . import environ, numpy_arrays, objects, optimizers, set_keys, unbacked
from .constants import NotConstant, as_const, kind_name, lift, python_value
from .container_types import python_method
from .dispatch import call, each_item, is_lazy, iterate, length, load_attr, operator_hook, truthy
from .exceptions import Raised, evaluate, throw
from .instances import pin
from .inline import call_dunder
from .numpy_arrays import NdarrayVar
from .objects import ShadowVar
from .symbolic import SliceVar, SymVar, is_operand, record
from .tensors import refuse_hidden_mutation
from .user_objects import UserObjectVar
from .torch_ops import BINARY_OPS, COMPARE_OPS
from .values import (
    NULL, ConstVar, DictVar, DictViewVar, EnvironVar, IteratorVar, ListVar, SetVar, TensorVar, TupleVar, UserDictVar, Var,
    contains_tensor,
)

if TYPE_CHECKING:
    from .frame import Frame

_UNARY = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}


def _fold(frame: "Frame", fn: Any, *vars: Var) -> Var:
    """``fn`` over constants, computed now; what it raises (``1 + "a"``, ``{}[k]``) is raised in the
    captured code, where the user's ``except`` may catch it, as in Python."""
    values = [python_value(v, specialize=False) for v in vars]  # a try: sizes stay symbolic
    return lift(evaluate(fn, *values))


def _sequence_items(var: Var) -> list[Var] | None:
    if isinstance(var, (TupleVar, ListVar)):
        return var.items
    if isinstance(var, ConstVar) and isinstance(var.value, (tuple, list)) and not isinstance(var.value, str):
        pin(var)  # the items of a list subclass guarded on its class only
        return [ConstVar(v) for v in var.value]
    return None


def binary(frame: "Frame", symbol: str, a: Var, b: Var) -> Var:
    op = BINARY_OPS.get(symbol)
    if op is None:
        frame.fail(f"binary operator {symbol!r} is not supported")
    hooked = operator_hook(frame, symbol, [a, b], reflected=True)  # a class's own Python operator
    if hooked is not None:
        return hooked
    if symbol.endswith("=") and not _has_inplace_method(a, op):
        # Python's protocol: `a += b` without `type(a).__iadd__` is `a = a + b` (`total = 0; total += t`)
        return binary(frame, symbol[:-1], a, b)
    if isinstance(a, TensorVar) or isinstance(b, TensorVar):
        if symbol.endswith("="):
            refuse_hidden_mutation(frame, a, f"{symbol!r}")
        if symbol.endswith("=") and isinstance(a, (ConstVar, SymVar)) and a.python_type() in (int, float, complex):
            op = BINARY_OPS[symbol[:-1]]  # `n += t`: a number has no in-place form, Python does `n + t`
        return frame.state.graph.call("call_function", op, (a, b), {})
    if (isinstance(a, SymVar) or isinstance(b, SymVar)) and is_operand(a) and is_operand(b):
        return record(frame, op, [a, b])
    # in-place forms that mutate their left operand (seen by every alias, replayed if it has a source)
    if symbol in _SET_INPLACE and _is_set(b) and (  # with another operand, set's in-place form declines
            isinstance(a, SetVar) or isinstance(a, ConstVar) and isinstance(a.value, set)):
        target = mutable_set(frame, a)
        target.items = evaluate(op, target.items, set_keys.keys_of(frame, b) if _is_set(b) else python_value(b))
        return a
    if _is_set(a) and _is_set(b) and set_keys.has_identities([*set_keys.keys_of(frame, a), *set_keys.keys_of(frame, b)]):
        result = evaluate(op, *(set_keys.keys_of(frame, v) for v in (a, b)))
        return set_keys.make(frame, result, type(result)) if isinstance(result, (set, frozenset)) else lift(result)
    if symbol in ("+=", "*=") and isinstance(a, ListVar):
        items = mutable_list(frame, a).items
        if symbol == "+=":
            items.extend(iterate(frame, b))
        else:
            items[:] = evaluate(operator.mul, items, as_const(frame, b, "a list repeat count"))
        return a
    if symbol.endswith("=") and isinstance(a, ConstVar):  # ``arr += b``: C code would change it now, once
        frame.fail(f"in-place operator {symbol!r} on a {type(a.value).__name__} (changed at capture, not per call)")
    try:
        result = _fold(frame, op, a, b)
    except NotConstant:
        pass
    else:  # set operators make a new set
        return SetVar(result.value) if _is_set(a) and _is_set(b) and type(result.value) is set else result
    # containers holding tensors: + and *, structurally
    left, right = _sequence_items(a), _sequence_items(b)
    base = symbol.rstrip("=")
    if base == "+" and left is not None and right is not None:
        return (ListVar if isinstance(a, ListVar) else TupleVar)(list(left) + list(right))
    if base == "*" and left is not None and isinstance(b, ConstVar) and isinstance(b.value, int):
        return (ListVar if isinstance(a, ListVar) else TupleVar)(list(left) * b.value)
    if isinstance(a, SymVar) or isinstance(b, SymVar):  # `"v%d" % n`, `[0] * n`: n's value is needed
        try:
            return _fold(frame, op, *(ConstVar(python_value(v)) if isinstance(v, SymVar) else v for v in (a, b)))
        except NotConstant:
            pass
    frame.fail(f"operator {symbol!r} on {kind_name(a)} and {kind_name(b)} is not supported")
    raise AssertionError


_SET_INPLACE = {"|=", "&=", "-=", "^="}


def _has_inplace_method(var: Var, op: Any) -> bool:
    """Whether ``var``'s type defines the in-place method of ``op`` (``__iadd__`` for
    ``operator.iadd``); a tensor always does."""
    if isinstance(var, TensorVar):
        return True
    try:
        kind = var.python_type()
    except NotImplementedError:  # a capture-only value (a bound method, a context): as it is
        return True
    return hasattr(kind, f"__{op.__name__}__")


def _is_set(var: Var) -> bool:
    return isinstance(var, SetVar) or isinstance(var, ConstVar) and isinstance(var.value, (set, frozenset))


def unary(frame: "Frame", name: str, a: Var) -> Var:
    op = _UNARY[name]
    if isinstance(a, NdarrayVar) or (isinstance(a, ConstVar) and numpy_arrays.traced_candidate(a)):
        return numpy_arrays.unary(frame, name, a)
    if isinstance(a, TensorVar):
        return frame.state.graph.call("call_function", op, (a,), {})
    if isinstance(a, SymVar):
        return record(frame, op, [a])
    try:
        return _fold(frame, op, a)
    except NotConstant:
        frame.fail(f"unary {name} on a {kind_name(a)} is not supported")
        raise


def compare(frame: "Frame", symbol: str, a: Var, b: Var) -> Var:
    op = COMPARE_OPS[symbol]
    hooked = operator_hook(frame, symbol, [a, b], reflected=True)
    if hooked is not None:
        return hooked
    if isinstance(a, TensorVar) or isinstance(b, TensorVar):
        return frame.state.graph.call("call_function", op, (a, b), {})
    if (isinstance(a, SymVar) or isinstance(b, SymVar)) and is_operand(a) and is_operand(b):
        return record(frame, op, [a, b])
    try:
        return _fold(frame, op, a, b)
    except NotConstant:
        pass
    left, right = _sequence_items(a), _sequence_items(b)
    if left is not None and right is not None and _has_sym(left + right):  # `x.shape == y.shape`
        if symbol in ("==", "!="):  # item by item: each relation between sizes is guarded
            equal = len(left) == len(right) and all(
                truthy(frame, compare(frame, "==", p, q)) for p, q in zip(left, right))
            return ConstVar(equal == (symbol == "=="))
        return _fold(frame, op, *(lift(python_value(v)) for v in (a, b)))  # sizes specialised
    if symbol in ("==", "!="):
        if a is b:
            return ConstVar(symbol == "==")
        real = [_real_operand(v) for v in (a, b)]
        if all(r is not _NO_VALUE for r in real):  # an object built in capture and a constant
            return lift(evaluate(op, *real))
        if any(isinstance(v, ConstVar) and v.value is None for v in (a, b)) or any(
                isinstance(v, UserObjectVar) and v.python_type().__eq__ is object.__eq__ for v in (a, b)):
            return ConstVar(is_same(frame, a, b) == (symbol == "=="))  # no __eq__ of Python (hooked above)
        if any(isinstance(v, ConstVar) and isinstance(v.value, _SCALARS) for v in (a, b)) \
                and any(isinstance(v, _CONTAINERS) for v in (a, b)):
            return ConstVar(symbol == "!=")  # a builtin container never equals a number or a string
    if _set_view(a) and _set_view(b) and DictViewVar in (type(a), type(b)):
        return ConstVar(_view_compare(frame, symbol, a, b))
    frame.fail(f"comparison {symbol!r} between {kind_name(a)} and {kind_name(b)} is not supported")
    raise AssertionError


def _set_view(var: Var) -> bool:
    return isinstance(var, DictViewVar) and var.kind in ("keys", "items") or type(var) is SetVar


def _view_compare(frame: "Frame", symbol: str, a: Var, b: Var) -> bool:
    """A dict's keys or items view compared with another or with a set, as CPython compares them:
    the sizes, then whether every element of one is in the other (a value found by its key
    compared with ``==``, which may run Python code or raise)."""
    n, m = (python_value(length(frame, v)) for v in (a, b))
    if symbol in ("==", "!="):
        return (n == m and _all_in(frame, a, b)) == (symbol == "==")
    if symbol in ("<", "<="):
        return (n < m if symbol == "<" else n <= m) and _all_in(frame, a, b)
    return (n > m if symbol == ">" else n >= m) and _all_in(frame, b, a)


def _all_in(frame: "Frame", inner: Var, outer: Var) -> bool:
    return all(contains(frame, outer, item) for item in iterate(frame, inner))


_NO_VALUE = object()
_SCALARS = (bool, int, float, complex, str, bytes)
_CONTAINERS = (ListVar, TupleVar, DictVar, SetVar)


def _real_operand(var: Var) -> Any:
    """The Python value a comparison may read now: a constant's, or that of an object built in
    capture holding no tensor (``dataclasses.field(default_factory=list)``'s list); else _NO_VALUE."""
    if isinstance(var, ShadowVar):
        return var.value if not _holds_tensor(var.value) else _NO_VALUE
    try:
        return python_value(var)
    except NotConstant:
        return _NO_VALUE


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in (*value.keys(), *value.values()))
    return not isinstance(value, (*_SCALARS, type(None)))  # another object: its __eq__ may read anything


def _has_sym(items: list[Var]) -> bool:
    return any(isinstance(v, SymVar) or isinstance(v, (TupleVar, ListVar)) and _has_sym(v.items) for v in items)


def is_same(frame: "Frame", a: Var, b: Var) -> bool:
    if a is b:
        return True
    if isinstance(a, ConstVar) and isinstance(b, ConstVar):
        if a.value is not None and b.value is not None:
            pin(a, b)
        return a.value is b.value
    if isinstance(a, ShadowVar) and isinstance(b, ConstVar) or isinstance(b, ShadowVar) and isinstance(a, ConstVar):
        pin(a, b)  # a real object inside a built one (a dataclass's Field)
        return a.value is b.value
    if isinstance(a, ConstVar) or isinstance(b, ConstVar):
        # a constant is never the same object as a tensor/container built or read by the capture,
        # except when the constant itself is such a container (read twice from one source)
        const, other = (a, b) if isinstance(a, ConstVar) else (b, a)
        if isinstance(const.value, (tuple, list, dict, torch.Tensor)) and other.source is not None:
            frame.fail("identity test between a constant container and a captured value")
        return False
    if isinstance(a, TensorVar) and isinstance(b, TensorVar):
        if a.node is b.node:
            return True
        if a.node.op == "placeholder" and b.node.op == "placeholder":
            frame.state.guards.distinct([a.source, b.source])  # they must stay different objects
        return False
    if a.source is not None and b.source is not None:  # two containers read from the frame
        frame.state.guards.distinct([a.source, b.source])
    return False


def contains(frame: "Frame", container: Var, item: Var) -> bool:
    hooked = operator_hook(frame, "in", [container, item])
    if hooked is not None:
        return truthy(frame, hooked)
    if isinstance(container, DictVar):
        return set_keys.dict_key(frame, item) in container.items
    if isinstance(container, DictViewVar) and container.kind == "keys" and isinstance(container.mapping, DictVar):
        return set_keys.dict_key(frame, item) in container.mapping.items
    if isinstance(container, DictViewVar) and container.kind == "items" and isinstance(container.mapping, DictVar):
        pair = _sequence_items(item) if isinstance(item, TupleVar) or isinstance(item, ConstVar) \
            and type(item.value) is tuple else None
        if pair is None or len(pair) != 2:  # only a 2-tuple can be an item
            return False
        found = container.mapping.items.get(set_keys.dict_key(frame, pair[0]), _NO_VALUE)
        return found is not _NO_VALUE and matches(frame, found, pair[1])
    if isinstance(container, DictViewVar) and container.kind == "keys":  # the dict's keys now
        return set_keys.dict_key(frame, item) in {python_value(k) for k in iterate(frame, container)}
    if isinstance(container, ShadowVar):
        return objects.contains(frame, container, item)
    if isinstance(container, EnvironVar):
        return environ.contains(frame, container, as_const(frame, item, "an environment variable's name"))
    if isinstance(container, SetVar):
        return evaluate(operator.contains, container.items, set_keys.lookup(frame, item))
    if isinstance(item, TensorVar) or isinstance(container, TensorVar):
        frame.fail("`in` test involving a tensor depends on tensor data")
    if isinstance(container, ConstVar) and _changed(frame, container):
        written = call_dunder(frame, container, "__contains__", [item])  # Python code: inlined, to read
        if written is not None:  # what the captured code changed in the object
            return truthy(frame, written)
        if python_method(type(container.value), "__iter__") is not None:
            return any(is_same(frame, item, v) or truthy(frame, compare(frame, "==", v, item))
                       for v in iterate(frame, container))
    if not (is_lazy(container) or isinstance(container, IteratorVar)):
        try:
            return python_value(item) in python_value(container)
        except NotConstant:
            pass
    # an iterator is read only up to the item found, as Python reads it
    return any(matches(frame, v, item) for v in each_item(frame, container))


def matches(frame: "Frame", element: Var, target: Var) -> bool:
    """``element == target`` as a search of a sequence asks it (``in``, ``index``, ``remove``):
    identity first, then the element's ``__eq__`` (inlined where it is Python; a tensor's equality
    breaks the graph where its data decides)."""
    return is_same(frame, element, target) or truthy(frame, compare(frame, "==", element, target))


def _changed(frame: "Frame", var: ConstVar) -> bool:
    """Whether the captured code changed an object passed in (an attribute, or a container read
    through it) in ways replayed only after the graph: asked for real, it would answer stale."""
    effects = frame.state.side_effects
    if any(key[0] == id(var.value) for key in effects.attrs):
        return True
    for changed in effects.containers.values():
        source = changed.source
        while source is not None and var.source is not None:
            if source == var.source:
                return True
            source = getattr(source, "base", None)
    return False


def make_slice(frame: "Frame", start: Var, stop: Var, step: Var) -> Var:
    if any(isinstance(v, SymVar) for v in (start, stop, step)):
        return SliceVar(start, stop, step)
    parts = [as_const(frame, v, "a slice bound") for v in (start, stop, step)]
    return ConstVar(slice(*parts))


def _index_arg(frame: "Frame", index: Var) -> Var:
    return index


def _by_tensors(frame: "Frame", obj: TensorVar, index: Var) -> Var | None:
    """``obj[index]`` as ``aten.index(obj, [indices])`` where the graph asks for it
    (:attr:`GraphBuilder.index_by_tensors`) and every index is a tensor or an int, else None."""
    graph = frame.state.graph
    items = index.items if isinstance(index, TupleVar) else [index]
    if not graph.index_by_tensors or not all(
            isinstance(i, TensorVar) or (isinstance(i, ConstVar) and type(i.value) is int) for i in items):
        return None
    device = ConstVar(obj.fake.device)
    indices = [i if isinstance(i, TensorVar) else
               graph.call("call_function", torch.tensor, (i,), {"dtype": ConstVar(torch.int64), "device": device})
               for i in items]
    return graph.call("call_function", torch.ops.aten.index.Tensor, (obj, ListVar(indices)), {})


def _builds_type(value: Any) -> bool:
    """Subscription that builds a type hint (``list[int]``, ``Callable[[Any], bool]``, through
    ``__class_getitem__`` or typing's aliases): a pure function of the subscripted object (guarded
    where it was read) and the key, not a read of a container."""
    if isinstance(value, type):
        return not hasattr(type(value), "__getitem__")  # no metaclass __getitem__ (an Enum's)
    return isinstance(value, types.GenericAlias) or type(value).__module__ == "typing"


def getitem(frame: "Frame", obj: Var, index: Var) -> Var:
    if isinstance(obj, TensorVar) and unbacked.is_unbacked(index) and index.python_type() is int:
        # ``x[i]`` with ``i`` read from data: torch's indexing takes no symbol, ``select`` does
        return frame.state.graph.call("call_function", torch.select, (obj, ConstVar(0), index), {})
    if isinstance(obj, TensorVar):
        indexed = _by_tensors(frame, obj, index)
        if indexed is not None:
            return indexed
        return frame.state.graph.call("call_function", operator.getitem, (obj, _index_arg(frame, index)), {})
    if isinstance(obj, (TupleVar, ListVar)):
        key = as_const(frame, index, "a sequence index")
        if isinstance(key, slice):
            items = obj.items[key]
            return ListVar(items) if isinstance(obj, ListVar) else TupleVar(items, tuple_type=_slice_type(obj))
        try:
            return obj.items[key]
        except (IndexError, TypeError):  # raise what Python raises for a sequence of this type
            return evaluate(operator.getitem, obj.items if isinstance(obj, ListVar) else tuple(obj.items), key)
    hooked = operator_hook(frame, "[]", [obj, index])
    if hooked is not None:
        return hooked
    if isinstance(obj, DictVar):
        return dict_getitem(frame, obj, set_keys.dict_key(frame, index))
    if isinstance(obj, UserObjectVar):
        result = call_dunder(frame, obj, "__getitem__", [index])
        if result is None:
            frame.fail(f"{obj.cls.__name__} object is not subscriptable")
        return result
    if isinstance(obj, ShadowVar):
        return objects.getitem(frame, obj, index)
    if isinstance(obj, EnvironVar):
        return environ.getitem(frame, obj, as_const(frame, index, "an environment variable's name"))
    if isinstance(obj, ConstVar):
        if isinstance(index, TensorVar) and isinstance(obj.value, dict):  # an optimizer's state[param]
            return optimizers.item_by_tensor(frame, obj, index)
        if isinstance(obj.value, (torch.nn.ModuleList, torch.nn.Sequential)) and obj.source is not None:
            key = as_const(frame, index, "a module index")
            if isinstance(key, slice):  # a slice of a module list: the modules themselves, in a list
                from .builder import wrap
                from .sources import DictEntrySource

                names = list(obj.value._modules)[key]
                return ListVar([wrap(frame.state, obj.value._modules[n], DictEntrySource(obj.source, "_modules", n))
                                for n in names])
        result = call_dunder(frame, obj, "__getitem__", [index])
        if result is not None:
            return result
        if obj.source is not None and not _builds_type(obj.value):  # read from a real container: guard it
            from .builder import wrap
            from .sources import ItemSource

            key = as_const(frame, index, "an index")
            try:
                item = obj.value[key]
            except Exception as exc:
                frame.fail(f"indexing raised {type(exc).__name__}: {exc}")
            return wrap(frame.state, item, ItemSource(obj.source, key))
        return _fold(frame, operator.getitem, obj, index)
    frame.fail(f"indexing a {kind_name(obj)} is not supported")
    raise AssertionError


def dict_getitem(frame: "Frame", obj: DictVar, key: Any) -> Var:
    """``dict.__getitem__``: the item, else what ``__missing__`` gives (a defaultdict's factory, a
    Counter's 0), else KeyError."""
    if key not in obj.items:
        factory = obj.default_factory
        if factory is not None and not (isinstance(factory, ConstVar) and factory.value is None):
            value = call(frame, factory, [], {})  # defaultdict.__missing__
            mutable_dict(frame, obj).items[key] = value
            return value
        if issubclass(obj.dict_type, collections.Counter):  # Counter.__missing__: 0, nothing stored
            return ConstVar(0)
        if hasattr(obj.dict_type, "__missing__") and factory is None:
            frame.fail(f"{obj.dict_type.__name__}[{key!r}] would call __missing__")
        throw(KeyError(key))
    return obj.items[key]


def _slice_type(obj: TupleVar) -> type:
    return torch.Size if obj.tuple_type is torch.Size else tuple


def setitem(frame: "Frame", obj: Var, index: Var, value: Var) -> None:
    if operator_hook(frame, "[]=", [obj, index, value]) is not None:
        return
    if isinstance(obj, TensorVar):
        frame.state.graph.call("call_function", operator.setitem, (obj, index, value), {})
        return
    if isinstance(obj, ListVar):
        key = as_const(frame, index, "a list index")
        if isinstance(key, slice):
            try:
                value = iterate(frame, value)
            except Raised as raised:
                if not isinstance(raised.value.value, TypeError):
                    raise
                throw(TypeError("can only assign an iterable" if key.step in (None, 1) else
                                "must assign iterable to extended slice"))
        evaluate(operator.setitem, mutable_list(frame, obj).items, key, value)
        return
    if isinstance(obj, DictVar):
        mutable_dict(frame, obj).items[set_keys.dict_key(frame, index)] = value
        return
    if isinstance(obj, ShadowVar):
        objects.setitem(frame, obj, index, value)
        return
    frame.fail(f"item assignment on a {kind_name(obj)} is not supported")


def delitem(frame: "Frame", obj: Var, index: Var) -> None:
    if operator_hook(frame, "del []", [obj, index]) is not None:
        return
    if isinstance(obj, ListVar):
        evaluate(operator.delitem, mutable_list(frame, obj).items, as_const(frame, index, "a list index"))
    elif isinstance(obj, DictVar):
        evaluate(operator.delitem, mutable_dict(frame, obj).items, set_keys.dict_key(frame, index))
    elif isinstance(obj, ShadowVar):
        objects.delitem(frame, obj, index)
    else:
        frame.fail(f"item deletion on a {kind_name(obj)} is not supported")


def mutable_list(frame: "Frame", var: Var) -> ListVar:
    if not isinstance(var, ListVar):
        frame.fail(f"expected a list, got a {kind_name(var)}")
    frame.state.remember(var)
    if var.source is not None:
        frame.state.side_effects.mutated(var)
    return var


def mutable_set(frame: "Frame", var: Var) -> SetVar:
    if not isinstance(var, SetVar):
        frame.fail("mutating a set that exists outside the captured code (a graph break runs it in Python)")
    frame.state.remember(var)
    if var.source is not None:  # an input (a set subclass's instance): replayed after the graph
        frame.state.side_effects.mutated(var)
    return var


def mutable_dict(frame: "Frame", var: Var) -> DictVar:
    if not isinstance(var, DictVar):
        frame.fail(f"expected a dict, got a {kind_name(var)}")
    frame.state.remember(var)
    if var.source is not None:
        frame.state.side_effects.mutated(var)
    return var


def dict_items(frame: "Frame", var: Var) -> list[tuple[Any, Var]]:
    """The (key, value) pairs of a mapping, as ``dict.update`` reads them: a dict's own items (also a
    dict subclass's, unless it writes ``__iter__``), else ``keys()`` and ``[]`` (a class's Python code)."""
    python_keys = isinstance(var, UserObjectVar) and python_method(var.cls, "keys") is not None
    if python_keys or isinstance(var, UserDictVar) and python_method(var.dict_type, "__iter__") is not None:
        keys = iterate(frame, call(frame, load_attr(frame, var, "keys"), [], {}))
        return [(set_keys.dict_key(frame, k), getitem(frame, var, k)) for k in keys]
    if isinstance(var, DictVar):
        return list(var.items.items())
    if isinstance(var, ConstVar) and isinstance(var.value, dict):
        pin(var)
        return [(k, lift(v)) for k, v in var.value.items()]
    if isinstance(var, EnvironVar):
        return environ.pairs(frame, var)
    if isinstance(var, ShadowVar) and isinstance(var.value, dict):  # a ModelOutput built in the call
        cls = type(var.value)
        if python_method(cls, "keys") is None and python_method(cls, "__getitem__") is None:
            return objects.mapping_items(frame, var)
        keys = iterate(frame, call(frame, load_attr(frame, var, "keys"), [], {}))
        return [(set_keys.dict_key(frame, k), getitem(frame, var, k)) for k in keys]
    frame.fail(f"expected a mapping, got a {kind_name(var)}")
    raise AssertionError


def get_iter(frame: "Frame", var: Var) -> Var:
    """``iter(var)``: an iterator is itself; anything else is read now into an IteratorVar."""
    if isinstance(var, UserObjectVar) and var.lazy:  # a Python iterator class: its __iter__ says
        made = call_dunder(frame, var, "__iter__", [])
        return var if made is None or made is var else get_iter(frame, made)
    if isinstance(var, IteratorVar) or is_lazy(var):
        return var
    sized = type(var) in (ListVar, TupleVar, SetVar, DictVar, DictViewVar) or \
        isinstance(var, ConstVar) and type(var.value) in _SIZED
    return IteratorVar(iterate(frame, var), sized=sized)


_SIZED = (list, tuple, set, frozenset, dict, str, bytes, range)


__all__ = [
    "NULL", "as_const", "binary", "call_dunder", "compare", "contains", "contains_tensor", "delitem",
    "dict_getitem", "dict_items", "get_iter", "getitem", "is_same", "iterate", "lift", "make_slice",
    "mutable_dict", "mutable_list", "mutable_set", "python_value", "setitem", "truthy", "unary",
]
