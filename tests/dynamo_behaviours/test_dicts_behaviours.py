"""Behaviours of torch's ``test/dynamo/test_dicts.py``, in our own programs: dicts, OrderedDicts,
defaultdicts, dict subclasses and UserDicts made, read, mutated and returned inside captured code;
dicts as inputs (guards on the keys that were read, on key order, on membership); views, ``|`` and
the other methods and their errors."""
from __future__ import annotations

import collections
import enum
import math
from collections import OrderedDict, UserDict, defaultdict, namedtuple

import torch

from behaviour_harness import Suite

SUITE = S = Suite("test_dicts")


def _x(*shape):
    return torch.linspace(-1, 2, math.prod(shape)).view(shape)


def _err(call, *args):
    try:
        call(*args)
        return "ok"
    except Exception as e:  # which exception is the behaviour
        return type(e).__name__


class PlainSub(dict):
    pass


class WithMethod(dict):
    def plus_one(self, v):
        return v + 1


class BumpOnSet(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value + 1)


class Dim(str, enum.Enum):
    DATA = "data"
    MODEL = "model"


@S.case("test_dict_subclass_instantiation", (_x(4),))
def dict_subclass_from_kwargs(x):
    d = PlainSub(k=3)
    return d["k"] * x


@S.case("test_dict_subclass_local_mutation", (_x(4),))
def dict_subclass_item_rebound(x):
    d = PlainSub(k=3)
    y = d["k"] * x
    d["k"] = 7
    return y - d["k"]


@S.case("test_dict_contains_enum", (_x(3, 3),))
def str_enum_equals_string(x):
    v = x.sin()
    if Dim.DATA == "data":
        v = v + x.cos()
    if "model" == Dim.MODEL:
        v = v * 2
    return v


@S.case("test_dict_subclass_local_with_non_dict_method", (_x(4),))
def dict_subclass_extra_method_inlined(x):
    d = WithMethod(k=2)
    y = d["k"] * x
    d["k"] = 5
    return d.plus_one(y * d["k"])


_MEMBERS = {2: 5, 4: 10}


def _with_members(**changes):
    def make():
        _MEMBERS.clear()
        _MEMBERS.update({2: 5, 4: 10})
        _MEMBERS.update({int(k[1:]): v for k, v in changes.items()})
        return (_x(4),)
    return make


def _membership(x):
    return x * 2 if 1 in _MEMBERS else x * 3


S.add("test_dict_contains", "global_dict_membership_guarded", _membership,
      [_with_members(), _with_members(k1=15), _with_members(k1=15, k2=10)], count=True, frames=2)


class ShapeKeyed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = {torch.Size([4, 6]): torch.nn.Linear(4, 6), torch.Size([6, 8]): torch.nn.Linear(6, 8)}
        self.acts = {torch.Size([6]): torch.nn.ReLU(), torch.Size([8]): torch.nn.Tanh()}

    def forward(self, x):
        key = torch.Size([x.shape[1], 6])
        if key in self.layers:
            x = self.layers[key](x)
        akey = torch.Size([x.shape[1]])
        if akey in self.acts:
            x = self.acts[akey](x)
        return x


for _f in (4, 6, 3):
    S.add("test_dict_torch_size_dynamic_key", f"size_keyed_module_dict_{_f}_features", None, [(_x(2, _f),)],
          module=ShapeKeyed, fullgraph=False, around=torch.no_grad)


_SUB = PlainSub()
_SUB[2] = 5
_SUB[4] = 10
_SUB.attr = 4


def _read_subclass(x):
    for v in _SUB.values():
        x = x * v
    for k in _SUB:
        x = x + k
    for k, v in _SUB.items():
        x = x - k * v
    x = x * 2 if 1 in _SUB else x * 3
    x = x * _SUB.get(2, 0) + _SUB.get(3, 4)
    return len(_SUB) * x * _SUB.attr


def _sub_with(extra):
    def make():
        _SUB.pop(6, None)
        _SUB.update(extra)
        return (_x(4),)
    return make


S.add("test_dict_subclass_methods_fallback_readonly", "global_dict_subclass_read_methods", _read_subclass,
      [_sub_with({}), _sub_with({6: 15})], count=True, frames=2)


@S.case("test_dict_subclass_instantiation_return", (_x(4),))
def return_dict_subclass(x):
    d = PlainSub(k=5 * x)
    d["j"] = 10
    return type(d).__name__, dict(d)


def _fresh_sub():
    d = PlainSub()
    d[2] = 5
    d[4] = 10
    return d


@S.case("test_dict_subclass_methods_fallback_mutation", lambda: (_fresh_sub(), _x(4)))
def dict_subclass_argument_mutated(d, x):
    for v in d.values():
        x = x * v
    d[6] = 14
    for k in d:
        x = x + k
    for k, v in d.items():
        x = x - k * v
    x = x * 2 if 1 in d else x * 3
    x = x * d.get(2, 0) + d.get(3, 4)
    return len(d) * x


@S.case("test_dict_subclass_setitem", (_x(4),))
def dict_subclass_custom_setitem(x):
    d = BumpOnSet(k=5 * x)
    d["j"] = 10
    return type(d).__name__, dict(d)


class ReverseIter(dict):
    def __iter__(self):
        return reversed(list(self.keys()))


@S.case("test_custom_iter_dict", lambda: (_x(4), ReverseIter({"p": 1, "q": 2})), fullgraph=False,
        post=lambda out, x, d: (out, dict(d), d.sample))
def dict_subclass_with_iter_mutated(x, d):
    d.sample = 1
    d["r"] = 4
    return x * d["p"] * d["q"]


class OtherKeys(dict):
    def keys(self):
        return ["q", "p"]


@S.case("test_custom_keys_iter_dict", (_x(4), OtherKeys({"p": 1, "q": 2})), (_x(4), OtherKeys({"p": 1, "q": 2})),
        fullgraph=False, count=True)
def dict_subclass_with_keys_override(x, d):
    return x * d["p"] - d["q"]


_ORDER = {2: 4, 3: 5}


def _order_then(move):
    def make():
        _ORDER.clear()
        _ORDER.update({2: 4, 3: 5})
        if move:
            _ORDER[2] = _ORDER.pop(2)
        return (_x(4), _ORDER)
    return make


def _items_in_order(x, d):
    for k, v in d.items():
        x = x * k + v
    return x


def _keys_in_order(x, d):
    for k in d:
        x = x * k + d[k]
    return x


S.add("test_dict_guard_on_keys_order", "dict_items_order_guarded", _items_in_order,
      [_order_then(False), _order_then(False), _order_then(True)], count=True, frames=2, fullgraph=False)
S.add("test_dict_guard_on_keys_order2", "dict_keys_order_guarded", _keys_in_order,
      [_order_then(False), _order_then(False), _order_then(True)], count=True, frames=2, fullgraph=False)


def _reordered(kind):
    def make():
        d = kind()
        d[2] = 4
        d[3] = 5
        d.move_to_end(2)
        return (_x(4), d)
    return make


def _enumerate_values(x, d):
    y = 0
    for i, v in enumerate(d.values()):
        y = y + (torch.sin(x * v) if i == 0 else torch.cos(x * v))
    return y


class ODKeys(OrderedDict):
    def keys(self):
        return super().keys()


S.add("test_ordered_dict_reordered_keys", "ordered_dict_move_to_end_order", _enumerate_values,
      [_reordered(OrderedDict)], fullgraph=False, count=True)
S.add("test_ordered_dict_subclass_reordered_keys", "ordered_dict_subclass_move_to_end_order", _enumerate_values,
      [_reordered(ODKeys)], fullgraph=False, count=True)

_LAZY = {"a": 2, "b": 3, "c": 5}


def _lazy_then(change):
    def make():
        _LAZY.clear()
        _LAZY.update({"a": 2, "b": 3, "c": 5})
        if change:
            _LAZY.pop("c")
            _LAZY["d"] = 10
        return (_x(4),)
    return make


@S.case("test_lazy_key_guarding", _lazy_then(False), _lazy_then(True), count=True, frames=1)
def unread_keys_do_not_guard(x):
    return x * _LAZY["a"]


_LAZY_TYPES = {list: 2, dict: 3, OrderedDict: 5, namedtuple: 7}


def _lazy_types_then(change):
    def make():
        _LAZY_TYPES.clear()
        _LAZY_TYPES.update({list: 2, dict: 3, OrderedDict: 5, namedtuple: 7})
        if change:
            _LAZY_TYPES.pop(dict)
            _LAZY_TYPES[defaultdict] = 10
        return (_x(4),)
    return make


@S.case("test_lazy_key_non_const_guarding", _lazy_types_then(False), _lazy_types_then(True), count=True, frames=1)
def unread_type_keys_do_not_guard(x):
    return x * _LAZY_TYPES[list]


@S.case("test_dict_mutation_side_effect", lambda: ({"a": _x(3), "b": _x(3) * 2},), count=True, frames=1,
        fullgraph=False, post=lambda out, d: out is d)
def dict_argument_mutated_and_returned(d):
    d["c"] = d["a"] * d.pop("b")
    return d


@S.case("test_dict_copy_alias", lambda: (torch.zeros(1), {}))
def copy_of_argument_dict_is_separate(x, d0):
    d1 = d0.copy()
    d1[0] = 1
    return x + 1, d1


class DotDict(dict):
    __getattr__ = dict.get
    __setattr__ = dict.__setitem__
    __delattr__ = dict.__delitem__


_DOT = DotDict({"a": 3, "b": 2})


@S.case("test_dict_subclass_get_method", (_x(2),))
def dict_subclass_with_builtin_attr_methods(x):
    return x * _DOT.get("a", 5) + _DOT.b


def _sum_values(d):
    c = 0
    for v in d.values():
        c = c * 2 + v
    return c


_A, _B = _x(3), _x(3) * 3
S.add("test_dict_order_keys", "dict_key_order_recompiles", _sum_values,
      [lambda: ({"a": _A, "b": _B},), lambda: ({"b": _B, "a": _A},), lambda: ({"b": _B, "a": _A},)],
      count=True, frames=2, fullgraph=False)

def _namedtuple_key(d):
    return d[3] * 2 if namedtuple in d else d[3] * 3


S.add("test_dict_namedtuple", "function_as_dict_key_membership", _namedtuple_key,
      [lambda: ({namedtuple: None, 3: _x(3)},), lambda: ({2: None, 3: _x(3)},)], count=True, frames=2)

_KT, _VT, _ZT = _x(3), _x(3) * 2, _x(3) * 3


def _lookup_by_tensor(d, k):
    return d[k] + 3


S.add("test_dict_order_keys_tensors", "tensor_keyed_dict_order_recompiles", _lookup_by_tensor,
      [lambda: ({_KT: _VT, 3: _ZT}, _KT), lambda: ({_KT: _VT, 3: _ZT}, _KT), lambda: ({3: _ZT, _KT: _VT}, _KT)],
      count=True, frames=2)

torch.manual_seed(0)
_MK, _MV, _MZ = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)


def _lookup_module(d, k):
    return d[k](torch.ones(2, 2))


S.add("test_dict_order_keys_modules", "module_keyed_dict_order_recompiles", _lookup_module,
      [lambda: ({_MK: _MV, 3: _MZ}, _MK), lambda: ({_MK: _MV, 3: _MZ}, _MK), lambda: ({3: _MZ, _MK: _MV}, _MK)],
      count=True, frames=2, fullgraph=False)


class DictProbe:
    def __init__(self):
        self.a = 3
        self.b = 5

    def run(self, x):
        if "a" in self.__dict__:
            x = x * self.a
        if "b" in self.__dict__:
            x = x + self.b
        self.c = 7
        if "c" in self.__dict__:
            x = x - self.c
        return x * self.__dict__.get("a") * self.__dict__.get("z", 2)

    def drop_a(self, x):
        del self.a
        return x * len(self.__dict__)

    def write_dict(self, x):
        self.__dict__["w"] = 10
        return x * self.w + self.__dict__["w"]


@S.case("test_contains_dunder_dict", lambda: (_x(4), DictProbe()), post=lambda out, x, o: (out, dict(o.__dict__)))
def membership_in_instance_dict(x, obj):
    return obj.run(x)


@S.case("test_len_dunder_dict_after_delete", lambda: (torch.ones(2), DictProbe()),
        post=lambda out, x, o: (out, dict(o.__dict__)))
def len_of_instance_dict_after_del(x, obj):
    return obj.drop_a(x)


@S.case("test_update_dunder_dict", lambda: (_x(4), DictProbe()), post=lambda out, x, o: (out, dict(o.__dict__)))
def write_through_instance_dict(x, obj):
    return obj.write_dict(x)


class DictModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.foo = 1
        self.bar = 2
        self.baz = 3

    def forward(self, x):
        if "foo" in self.__dict__:
            return x * self.bar
        return x * self.baz


class WritesDict(torch.nn.Module):
    def forward(self, x):
        self.__dict__["w"] = 10
        return x * self.w + self.__dict__["w"]


S.add("test_contains_module_dunder_dict", "membership_in_module_instance_dict", None, [(_x(5),)], module=DictModule)
S.add("test_update_module_dunder_dict", "write_through_module_instance_dict", None, [(_x(5),)], module=WritesDict)


@S.case("test_dict_reconstruct_keeps_original_order", (), fullgraph=False,
        post=lambda out: ([(k, type(v).__name__) for k, v in out[0].items()], list(out[1].keys())))
def ordered_dict_and_module_dict_updated(*_):
    mods = OrderedDict([("act", torch.nn.ReLU())])
    md = torch.nn.ModuleDict(mods)
    more = {"fc": torch.nn.Linear(2, 3), "act2": torch.nn.Sigmoid()}
    mods.update(more.items())
    md.update(more)
    return mods, md


@S.case("test_dict_update_no_args", (_x(4),))
def dict_update_without_arguments(x):
    d = {"a": x}
    r = d.update()
    return d["a"], r is None, len(d)


class KeysAndItems:
    def __init__(self, x):
        self.d = {"a": x, "b": x + 1}

    def keys(self):
        return self.d.keys()

    def __getitem__(self, key):
        return self.d[key]


@S.case("test_dict_update_from_mapping_like", (_x(4),))
def dict_update_from_object_with_keys_and_getitem(x):
    d = {"a": x - 1}
    r = d.update(KeysAndItems(x))
    return d["a"], d["b"], r is None


@S.case("test_dict_update_from_mapping_proxy", (_x(4),))
def dict_update_from_mapping_proxy(x):
    import types

    d = {"a": x - 1}
    d.update(types.MappingProxyType({"a": x, "b": x * 2}))
    return d["a"], d["b"]


@S.case("test_dict_update_rejects_bad_sequence_element_length", (_x(2),))
def dict_update_with_triple_raises(x):
    try:
        {}.update([(1, 2, 3)])
    except ValueError as e:
        return x, "length 3; 2 is required" in str(e)
    return x, False


@S.case("test_dict_update_rejects_too_many_args", (_x(2),))
def dict_update_with_two_positionals_raises(x):
    try:
        {}.update({}, {})
    except TypeError:
        return x + 1, True
    return x, False


def _custom_init_dict(base):
    class Custom(base):
        def __new__(cls, *args, **kwargs):
            return super().__new__(cls, *args, **kwargs)

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)

    def fn(x):
        c = Custom()
        c["key"] = x
        assert "key" in c
        return c["key"] + 1
    return fn


for _base in (OrderedDict, dict):
    S.add("test_dict_subclass_initialization_in_graph", f"{_base.__name__.lower()}_subclass_with_new_and_init",
          _custom_init_dict(_base), [(_x(4),)])


def _shapes_of(args):
    return [a[1].shape for a in args]


@S.case("test_dict_list_values", lambda: ({"args": [torch.ones(2, 2), torch.ones(2, 3)]},),
        lambda: ({"args": [torch.ones(2, 2)]},), fullgraph=False)
def zip_count_with_list_in_dict(tensors):
    import itertools

    return _shapes_of(zip(itertools.count(), tensors["args"]))


class IterDict(torch.nn.Module):
    def forward(self, x):
        z = {"p": 1, "q": 2, "r": 3, "s": 4}
        tot = 0
        for k in z:
            tot += z[k]
        return x + tot


S.add("test_dict_iter", "iterate_local_dict_in_forward", None, [(torch.tensor([0]),)], module=IterDict)


class Instantier(OrderedDict):
    pass


def _two_flags(x, d):
    if "key1" in d:
        x = x + 2
    if "key2" in d:
        x = x + 4
    return x + 8


S.add("test_dict_subclass_contains", "ordered_dict_subclass_membership", _two_flags,
      [(torch.ones(3), Instantier({"key1": torch.ones(3)})), (torch.ones(3), Instantier({"key2": torch.ones(3)}))])


class Scalar:
    def __init__(self):
        self.scalar = 10


_TAG_OBJ = Scalar()
_TAGGED = {"a": 2, "b": 3, "c": _TAG_OBJ}


def _tag_state(a, scalar):
    def make():
        _TAGGED["a"] = a
        _TAG_OBJ.scalar = scalar
        return (_TAGGED, _x(3, 3))
    return make


def _tag_read(d, x):
    return d["a"] * d["b"] * d["c"].scalar * x


S.add("test_dict_tag_guard", "dict_value_and_nested_attribute_guarded", _tag_read,
      [_tag_state(2, 10), _tag_state(4, 10), _tag_state(4, 12)], fullgraph=False, count=True)


def _truthy(d, x):
    return torch.cos(x) if d else torch.sin(x)


S.add("test_empty_dict_recompilation", "empty_and_nonempty_dict_truthiness", _truthy,
      [({}, _x(4)), ({"a": 1}, _x(4))])


class MarkedDict(dict):
    pass


def _dict_new(x, klass):
    x = x * 2
    d = dict.__new__(klass)
    d["x"] = x
    if isinstance(d, MarkedDict):
        d.attr = 3
    return type(d).__name__, dict(d), getattr(d, "attr", None)


S.add("test_udf_dict_reconstruction", "dict_new_of_subclass", _dict_new, [(_x(4), MarkedDict)])
S.add("test_udf_dict_reconstruction", "dict_new_of_dict", _dict_new, [(_x(4), dict)])

import weakref  # noqa: E402

_MOD1, _MOD2 = torch.nn.Module(), torch.nn.Module()
_WEAK = weakref.WeakKeyDictionary()
_WEAK[_MOD1] = 2
_WEAK[_MOD2] = 3


@S.case("test_weakref_dict", (_x(4),))
def weak_key_dictionary_membership(x):
    if _MOD1 in _WEAK:
        x = torch.sin(x)
    if _MOD2 in _WEAK:
        x = torch.cos(x)
    return x


class MyUserDict(UserDict):
    pass


@S.case("test_construct_user_dict_and_return", (_x(4),))
def return_user_dict(x):
    return MyUserDict({"a": x * 2})


@S.case("test_mapping_proxy_for_local", (_x(4),))
def mapping_proxy_of_local_dict(x):
    import types

    d = {"a": 2, "b": 3, "c": 5 * x}
    mp = types.MappingProxyType(d)
    y = torch.sin(x * mp["a"])
    for v in mp.values():
        y = y + torch.cos(x * v)
    return mp, y


_PROXIED = {"a": 2, "b": 3, "c": 5}


def _reset_proxied():
    _PROXIED.clear()
    _PROXIED.update({"a": 2, "b": 3, "c": 5})


@S.case("test_mapping_proxy_for_nonlocal", (_x(4),), setup=_reset_proxied, state=lambda: dict(_PROXIED))
def mapping_proxy_of_global_dict_sees_writes(x):
    import types

    mp = types.MappingProxyType(_PROXIED)
    y = torch.sin(x * mp["a"])
    for v in mp.values():
        y = y + torch.cos(x * v)
    _PROXIED["d"] = 4
    return y, mp["d"], len(mp)


def _proxy_arg(change):
    def make():
        import types

        _reset_proxied()
        change(_PROXIED)
        return (_x(4), types.MappingProxyType(_PROXIED))
    return make


def _use_proxy(x, mp):
    import types

    y = torch.sin(x * mp["a"])
    for v in mp.values():
        y = y + torch.cos(x * v)
    if isinstance(mp, types.MappingProxyType):
        y = y * 2
    return y


S.add("test_mapping_proxy_existing", "mapping_proxy_argument_follows_its_dict", _use_proxy,
      [_proxy_arg(lambda d: None), _proxy_arg(lambda d: d.__setitem__("a", 3)), _proxy_arg(lambda d: d.pop("b"))])


@S.case("test_dict_construction_from_mapping_proxy", _proxy_arg(lambda d: None))
def dict_from_mapping_proxy_argument(x, mp):
    return torch.sin(x * dict(mp)["a"])


_PROXY_GLOBAL = __import__("types").MappingProxyType(_PROXIED)


@S.case("test_mapping_proxy_existing_mutation", (_x(4),), fullgraph=False, setup=_reset_proxied,
        state=lambda: sorted(_PROXY_GLOBAL.keys()))
def write_dict_read_through_its_global_proxy(x):
    _PROXIED["d"] = 4
    return torch.sin(x * _PROXY_GLOBAL["d"])


@S.case("test_mapping_proxy_existing_local_mutation", (_x(4),), setup=_reset_proxied)
def new_local_dict_beside_global_proxy(x):
    other = {}
    other["d"] = 4
    return torch.sin(x * _PROXY_GLOBAL["c"]) + other["d"]


@S.case("test_dict_view_mapping", (_x(4),))
def dict_view_mapping_attribute(x):
    proxy_type = type(type.__dict__)
    d = {"a": 1, "b": 2}
    views = (d.keys().mapping, d.values().mapping, d.items().mapping)
    y = torch.sin(x)
    for m in views:
        if isinstance(m, proxy_type) and m == d:
            y = y + 1
    return y, [dict(m) for m in views]


@S.case("test_dict_view_mapping_reflects_mutation", (_x(4),))
def dict_view_mapping_is_live(x):
    d = {}
    m = d.keys().mapping
    d["foo"] = "bar"
    return torch.sin(x), isinstance(m, type(type.__dict__)), dict(m)


@S.case("test_move_to_end", (_x(4),))
def ordered_dict_move_to_end_both_ends(x):
    d = OrderedDict({"a": torch.cos(x), "b": 3, "c": 5})
    d.move_to_end("a")
    d.move_to_end("c", last=False)
    return d


@S.case("test_mapping_proxy_ban_muation_on_dict_realization", (_x(4),), fullgraph=False,
        post=lambda out, x: (out[0].bar, out[1]))
def class_dict_copied_then_class_mutated(x):
    class Local:
        b = 4

    d = dict(Local.__dict__)
    y = torch.sin(x) * d["b"]
    Local.bar = 3
    return Local, y * Local.__dict__["bar"]


class CountingGets(dict):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def __getitem__(self, key):
        self.calls += 1
        return super().__getitem__(key) + 1


@S.case("test_overridden_get_item", lambda: (_x(4), CountingGets({"a": 2, "b": 3, "c": 5})),
        post=lambda out, x, d: (out, d.calls, dict(d)))
def dict_subclass_overriding_getitem(x, d):
    d["d"] = 4
    return x * d["a"] + d["b"] + d["c"] + d["d"]


@S.case("test_items_type", (), post=lambda out: (type(out).__name__, list(out)))
def return_dict_items_view():
    return dict({"a": 1, "b": "2", "c": torch.tensor(3)}).items()


def _or_with(b):
    a = {"one": torch.ones(1)}
    return a | b


for _label, _b in [("int", 1), ("float", 1.0), ("str", "a"), ("tuple", (1, 2)), ("list", [1, 2])]:
    S.add("test_builtin_or_with_invalid_types", f"dict_or_{_label}_raises", _or_with, [(_b,)], fullgraph=False)


@S.case("test_builtin_or_with_diff_keys", ())
def dict_union_disjoint_keys():
    a = {"one": torch.ones(1)}
    b = {"two": torch.ones(2)}
    return a, b, a | b, b | a, a.__or__(b), b.__or__(a)


@S.case("test_builtin_or_with_same_keys", ())
def dict_union_overlapping_keys():
    a = {"one": torch.ones(1), "two": torch.ones(2)}
    b = {"one": torch.zeros(1), "three": torch.ones(3)}
    return a, b, a | b, b | a, a.__or__(b), b.__or__(a)


@S.case("test_builtin_ior_", ())
def dict_inplace_union():
    a = {"one": torch.ones(1)}
    b = {"two": torch.ones(2)}
    a |= b
    return a, b


@S.case("test_defaultdict_inplace_union_preserves_factory", ())
def defaultdict_inplace_union_keeps_factory():
    d = defaultdict(int, {1: 1, 2: 2})
    d |= [(0, "zero"), (1, "one")]
    r = d.__ior__({3: "three"})
    return r is d, d.default_factory is int, type(d) is defaultdict, dict(d), list(d), d[4]


@S.case("test_defaultdict_shallow_copy_preserves_factory", ())
def defaultdict_copies_keep_factory():
    import copy

    d = defaultdict(list, {1: 1, 2: 2})
    c1, c2, c3 = d.copy(), d.__copy__(), copy.copy(d)
    return (c1.default_factory is list, c2.default_factory is list, c3.default_factory is list, dict(c1),
            dict(c2), dict(c3), c1 == d, c3 == d, c1[5])


@S.case("test_newly_constructed_default_dict", (torch.ones(2),))
def return_new_defaultdict(x):
    d = defaultdict(list)
    d[0] = [42]
    return x + 1, d


def _no_factory(make):
    def fn(x):
        d = make()
        try:
            d[1] += 42
        except KeyError:
            d[1] = 1
        try:
            d[2] += 24
        except KeyError:
            d[2] = 1
        return x + 1, dict(d), d.default_factory
    return fn


for _label, _make in [("no_args", lambda: defaultdict()), ("none", lambda: defaultdict(None)),
                      ("none_with_items", lambda: defaultdict(None, {1: 10}))]:
    S.add("test_newly_constructed_default_dict_no_default_factory", f"defaultdict_without_factory_{_label}",
          _no_factory(_make), [(torch.ones(2),)])


@S.case("test_newly_constructed_default_dict_with_dict", (torch.ones(2),))
def defaultdict_from_dict_and_kwargs(x):
    d = dict([("a", 1), ("b", 2)], c=3)
    dd = defaultdict(list, d, d=4, e=5)
    dd["x"].append(42)
    return x + 1, d, dict(dd)


@S.case("test_iter_default_dict", (torch.ones(2),))
def iterate_and_update_defaultdict(x):
    d = defaultdict(list)
    d[0] = 42
    for k in d:
        d[k] += 1
    return x + 1, dict(d)


@S.case("test_dict_new_ignores_extra_args", (torch.ones(2),))
def ordered_dict_from_kwargs_read(x):
    return x + OrderedDict(a=3, b=2)["a"]


@S.case("test_ordered_dict_repr", (torch.ones(2),))
def repr_of_ordered_dict(x):
    r = repr(OrderedDict(a=1, b=2))
    return x + (1 if isinstance(r, str) else 0), r


def _pair_gen(t):
    yield 1, t + 1
    yield 2, t * 2


@S.case("test_c_new_init_args_ignored_for_dict", (_x(2),))
def ordered_dict_from_generator(t):
    return OrderedDict(_pair_gen(t))


@S.case("test_ordered_dict_as_python_constant_preserves_type", (torch.ones(2),))
def enum_built_from_ordered_dict(x):
    E = enum.Enum("E", OrderedDict(p=1, q=2))
    return x + E.q.value


@S.case("test_default_dict_as_python_constant_preserves_type", (torch.ones(2),))
def isinstance_of_defaultdict(x):
    dd = defaultdict(int, a=1, b=2)
    assert isinstance(dd, defaultdict)
    return x + dd["a"] + dd["zz"]


def _keys_binop(op):
    def fn():
        a = {"one": torch.ones(1), "two": torch.ones(2)}
        b = {"one": torch.ones(1), "three": torch.ones(3)}
        return sorted(op(a.keys(), b.keys())), sorted(op(b.keys(), a.keys()))
    return fn


import operator  # noqa: E402

for _op in ("or_", "and_", "xor", "sub"):
    S.add("test_dict_keys_binop", f"dict_keys_{_op.strip('_')}", _keys_binop(getattr(operator, _op)), [()])


def _two_way(make_left, make_right, op):
    def fn(t):
        a, b = make_left(), make_right()
        return t * 2, op(a, b), op(make_right(), make_left())
    return fn


def _keys_a():
    return {"one": torch.ones(1), "two": torch.ones(2)}.keys()


def _keys_b():
    return {"one": torch.ones(1), "three": torch.ones(3)}.keys()


def _items_a():
    return {"one": 1, "two": 2}.items()


def _items_b():
    return {"one": 1, "three": 3}.items()


class UserSet(set):
    pass


_T1 = (torch.ones(2),)
for _op in ("ior", "iand", "ixor", "isub"):
    S.add("test_dict_keys_inplace_binop", f"dict_keys_{_op}", _two_way(_keys_a, _keys_b, getattr(operator, _op)), [_T1])
    S.add("test_dict_items_inplace_binop", f"dict_items_{_op}", _two_way(_items_a, _items_b, getattr(operator, _op)),
          [_T1])
for _op in ("or_", "and_", "xor", "sub"):
    S.add("test_dict_items_binop", f"dict_items_{_op.strip('_')}", _two_way(_items_a, _items_b, getattr(operator, _op)),
          [_T1])

_CROSS = {
    "test_cross_type_set_binop_dict_keys_vs_set": (lambda: {"one": 1, "two": 2, "three": 3}.keys(),
                                                    lambda: {"one", "four"}),
    "test_cross_type_set_binop_dict_items_vs_set": (lambda: {"one": 1, "two": 2}.items(),
                                                     lambda: {("one", 1), ("three", 3)}),
    "test_cross_type_set_binop_dict_keys_vs_dict_items": (lambda: {"one": 1, "two": 2}.keys(),
                                                           lambda: {"three": 3, "four": 4}.items()),
    "test_cross_type_set_binop_dict_keys_vs_user_defined_set": (lambda: {"one": 1, "two": 2, "three": 3}.keys(),
                                                                 lambda: UserSet({"one", "four"})),
    "test_cross_type_set_binop_dict_items_vs_user_defined_set": (lambda: {"one": 1, "two": 2, "three": 3}.items(),
                                                                  lambda: UserSet({"one", "four"})),
    "test_cross_type_set_binop_set_vs_user_defined_set": (lambda: {"one", "two", "three"},
                                                           lambda: UserSet({"one", "four"})),
}
for _test, (_l, _r) in _CROSS.items():
    for _op in ("or_", "and_", "xor", "sub", "iand", "ior", "ixor", "isub"):
        S.add(_test, f"{_test[16:]}_{_op.strip('_')}", _two_way(_l, _r, getattr(operator, _op)), [_T1])

_CMP = {
    "test_cross_type_cmp_dict_keys_vs_set": (lambda: {"one": 1, "two": 2}.keys(), lambda: {"one", "two", "three"}),
    "test_cross_type_cmp_dict_items_vs_set": (lambda: {"one": 1, "two": 2}.items(),
                                              lambda: {("one", 1), ("two", 2), ("three", 3)}),
    "test_cross_type_cmp_dict_keys_vs_dict_items": (lambda: {"one": 1, "two": 2}.keys(),
                                                    lambda: {"one": 1, "two": 2}.items()),
    "test_cross_type_cmp_set_vs_user_defined_set": (lambda: {"one", "two"}, lambda: UserSet({"one", "two", "three"})),
    "test_cross_type_cmp_dict_keys_vs_user_defined_set": (lambda: {"one": 1, "two": 2}.keys(),
                                                          lambda: UserSet({"one", "two", "three"})),
    "test_cross_type_cmp_dict_items_vs_user_defined_set": (lambda: {"one": 1, "two": 2}.items(),
                                                           lambda: UserSet({("one", 1), ("two", 2), ("three", 3)})),
}
for _test, (_l, _r) in _CMP.items():
    for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
        S.add(_test, f"{_test[16:]}_{_op}", _two_way(_l, _r, getattr(operator, _op)), [_T1])


@S.case("test_dict_view_iand_rebinds_variable", ())
def inplace_and_on_views_rebinds_to_set():
    d = {"one": 1, "two": 2, "three": 3}
    k = d.keys()
    k &= {"one", "four"}
    e = {"one": 1, "two": 2}
    i = e.items()
    i &= {("one", 1), ("three", 3)}
    return k, d, i, e


@S.case("test_dict_union_result_type", ())
def dict_union_result_types():
    dd = defaultdict(int, {1: 1, 2: 2})
    od = OrderedDict({3: 3, 4: 4})
    bd = {5: 5, 6: 6}
    return [type(r).__name__ for r in (dd | od, dd | bd, bd | dd, od | dd, bd | od, bd | bd)]


def _keyed(keys):
    def fn(x):
        d = {k: x * (i + 2) for i, k in enumerate(keys())}
        return sum(d[k] for k in keys())
    return fn


import dataclasses  # noqa: E402
import typing  # noqa: E402

import numpy as np  # noqa: E402


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


for _test, _keys in [("test_range_as_dict_key", lambda: [range(5), range(10, 15)]),
                     ("test_tuple_as_dict_key", lambda: [(1, 2), (3, 4, 5)]),
                     ("test_enum_as_dict_key", lambda: [Color.RED, Color.GREEN]),
                     ("test_intenum_as_dict_key", lambda: [Level.LOW, Level.HIGH]),
                     ("test_frozenset_as_dict_key", lambda: [frozenset([1, 2]), frozenset([3, 4, 5])]),
                     ("test_typing_union_as_dict_key", lambda: [typing.Union[int, str], typing.Union[float, bool]]),
                     ("test_numpy_dtype_as_dict_key", lambda: [np.float32, np.int64, np.bool_]),
                     ("test_method_wrapper_as_dict_key", lambda: [list.__add__, list.__mul__]),
                     ("test_torch_builtin_function_as_dict_key", lambda: [torch.add, torch.mul, torch.sub]),
                     ("test_frozen_dataclass_as_dict_key", lambda: [Point(1, 2), Point(3, 4)])]:
    S.add(_test, f"{_test[5:]}", _keyed(_keys), [(_x(4),)])


@S.case("test_list_as_dict_key_raises_typeerror", (_x(4),), fullgraph=False)
def list_as_dict_key_raises(x):
    d = {[1, 2]: x}
    return d


class DictBacked:
    def __init__(self, x):
        self.__dict__["x"] = x

    @property
    def x(self):
        return self.__dict__["x"]

    @x.setter
    def x(self, value):
        self.__dict__["x"] = value


@S.case("test_property_backed_by_dunder_dict", (DictBacked(3),))
def property_reading_instance_dict(obj):
    return obj.x


@S.case("test_property_backed_by_dunder_dict_mutated", lambda: (DictBacked(3),), post=lambda out, o: (out, o.x))
def property_setter_writing_instance_dict(obj):
    a = obj.x
    obj.x = a + 1
    return obj.x


@S.case("test_property_backed_by_dunder_dict_pending_side_effects", lambda: (DictBacked(3),),
        post=lambda out, o: (out, o.x))
def instance_dict_write_then_read(obj):
    a = obj.__dict__["x"]
    obj.__dict__["x"] = a + 1
    return obj.__dict__["x"]


class ShadowedByProperty:
    def __init__(self):
        self.__dict__["x"] = 3

    @property
    def x(self):
        return 999


_SHADOW = ShadowedByProperty()


def _shadow_value(v):
    def make():
        _SHADOW.__dict__["x"] = v
        return (_SHADOW, torch.tensor(0.0))
    return make


@S.case("test_dunder_dict_getitem_guard_recompiles", _shadow_value(3), _shadow_value(5), count=True, frames=2)
def instance_dict_item_guarded(obj, t):
    return t + obj.__dict__["x"]


@S.case("test_dunder_dict_get_with_property", (DictBacked(3),))
def instance_dict_get(obj):
    return obj.__dict__.get("x"), obj.__dict__.get("missing", 7)


@S.case("test_dunder_dict_getitem_tensor", (DictBacked(torch.tensor(3.0)),))
def property_returning_tensor_from_instance_dict(obj):
    return obj.x + 1


@S.case("test_get_default_nowrap_functions_as_dict_key", (_x(4),))
def frozenset_of_function_set_as_key(x):
    funcs = torch.overrides.get_default_nowrap_functions()
    d = {frozenset(funcs): x * 2}
    if torch.Tensor.grad.__get__ in funcs:
        return d[frozenset(funcs)] + x
    return x


class Truthy:
    def __init__(self, result):
        self._result = result

    def __bool__(self):
        return self._result


def _custom_bool(t, d, negate):
    if negate:
        return t.sin(), bool(not d)
    return t.sin(), bool(d)


for _v in (True, False):
    for _neg in (False, True):
        S.add("test_custom_bool", f"user_bool_{str(_v).lower()}_{'negated' if _neg else 'plain'}", _custom_bool,
              [(_x(4), Truthy(_v), _neg)])


# -- dicts as inputs: guards (DictGuardTests) ------------------------------------------------------
_POP_D = {}


def _pop_state(last):
    def make():
        _POP_D.clear()
        _POP_D.update({1: 2, 3: last})
        return (torch.tensor(1.0),)
    return make


@S.case("test_popitem", _pop_state(4), _pop_state(5), setup=lambda: None, count=True, frames=2,
        state=lambda: dict(_POP_D))
def popitem_of_global_dict_guarded(x):
    k, v = _POP_D.popitem()
    return x.sin() if k == 3 and v == 4 else x.cos()


def _dicts_equal(x, d1, d2):
    return x.sin() if d1 == d2 else x.cos()


def _dicts_or(x, d1, d2):
    d = d1 | d2
    return x.sin() if d.get(5, False) else x.cos()


def _dicts_ior(x, d1, d2):
    d2 |= d1
    return x.sin() if d2.get(3, False) else x.cos()


_DA = {1: 2, 3: 4}
_DB = {1: 2, 5: 6}
S.add("test_cmp_eq", "dict_arguments_equality_guarded", _dicts_equal,
      [lambda: (torch.tensor(1.0), _DA, _DB), lambda: (torch.tensor(1.0), _DA, _DA)], count=True, frames=2)
S.add("test_cmp_or", "dict_arguments_union_guarded", _dicts_or,
      [lambda: (torch.tensor(1.0), _DA, _DB), lambda: (torch.tensor(1.0), _DA, _DA)], count=True, frames=2)
S.add("test_cmp_ior", "dict_arguments_inplace_union_guarded", _dicts_ior,
      [lambda: (torch.tensor(1.0), dict(_DA), dict(_DB)), lambda: (torch.tensor(1.0), dict(_DB), dict(_DB))],
      count=True, frames=2)


# -- methods per kind (DictMethodsTests, subclass and OrderedDict variants) ----------------------
class BadCmpError(Exception):
    pass


class BadCmp:
    def __eq__(self, other):
        raise BadCmpError

    def __hash__(self):
        return 1


def _items_cmp_raises(K):
    d1, d2 = K({1: BadCmp()}), K({1: BadCmp()})
    out = [_err(op, d1.items(), d2.items()) for op in (operator.eq, operator.ne, operator.le, operator.ge)]
    d3 = K({1: BadCmp(), 2: BadCmp()})
    return out + [_err(operator.lt, d1.items(), d3.items()), _err(operator.gt, d3.items(), d1.items())]


def _items_cmp_values(K):
    d1, d2, d3 = K({"a": 1, "b": 2}), K({"a": 1, "b": 2, "c": 3}), K({"a": 1, "b": 99})
    return [d1.items() == d2.items(), d1.items() <= d2.items(), d1.items() < d2.items(), d1.items() == d3.items(),
            d1.items() <= d3.items(), d2.items() >= d1.items()]


def _cmp_eq_key_raises(K):
    return [_err(operator.eq, K({BadCmp(): 1}), K({1: 1}))]


def _m_cmp_eq(K):
    d1, d2, d3 = K({"a": 1, "b": 2}), K({"a": 1, "b": 2}), K({"a": 1, "b": 3})
    return [d1 == d2, d1 == d3, d1.__eq__(d2), d1.__eq__(d3), dict.__eq__(d1, d2), K.__eq__(d1, d3)]


def _m_cmp_ne(K):
    d1, d2, d3 = K({"a": 1, "b": 2}), K({"a": 1, "b": 2}), K({"a": 1, "b": 3})
    return [d1 != d3, d1 != d2, d1.__ne__(d3), d1.__ne__(d2), dict.__ne__(d1, d3), K.__ne__(d1, d2)]


def _m_or(K):
    d1, d2 = K({"a": 1, "b": 2}), K({"b": 3, "c": 4})
    return [dict(d1 | d2), dict(d2 | d1), dict(d1.__or__(d2)), dict(d2.__or__(d1)), dict(dict.__or__(d1, d2)),
            dict(K.__or__(d2, d1)), _err(lambda: d1 | 1)]


def _m_ior(K):
    d1, d2 = K({"a": 1, "b": 2}), K({"b": 3, "c": 4})
    d3, d4 = d1.copy(), d2.copy()
    d3 |= d2
    d4 |= d1
    out = [dict(d3), dict(d4)]
    d3, d4 = d1.copy(), d2.copy()
    out += [dict(dict.__ior__(d3, d2)), dict(K.__ior__(d4, d1)), _err(dict.__ior__, d1, 1)]
    return out


def _m_ior_iterable(K):
    d1, d2 = K({"a": 1, "b": 2}), K({"b": 3, "c": 4})
    d3, d4 = d1.copy(), d2.copy()

    def gen(d):
        yield from d.items()

    return [dict(d3.__ior__(d2.items())), dict(d4.__ior__(gen(d1)))]


def _m_clear(K):
    d = K({"a": 1, "b": 2})
    r = d.clear()
    e = K({"a": 1})
    dict.clear(e)
    f = K({"a": 1})
    K.clear(f)
    return [dict(d), r is None, dict(e), dict(f), _err(d.clear, 1)]


def _m_copy(K):
    d = K({"a": 1, "b": 2})
    c = d.copy()
    return [c == d, c is not d, dict.copy(d) == c, K.copy(d) == c, _err(d.copy, 1), type(c).__name__]


def _m_fromkeys(K):
    return [dict(K.fromkeys(["a", "b"], 1)), dict(K.fromkeys(["a", "b"], None)), dict(K.fromkeys("cd", 2)),
            _err(K.fromkeys), _err(K.fromkeys, 1, 2)]


def _m_get(K):
    d = K({"a": 1, "b": 2})
    return [d.get("a"), d.get("c", 3), d.get("c"), dict.get(d, "b"), K.get(d, "b"), _err(d.get)]


def _m_items(K):
    d = K({"a": 1, "b": 2})
    return [set(d.items()), set(dict.items(d)), set(K.items(d)), _err(d.items, 1)]


def _m_keys(K):
    d = K({"a": 1, "b": 2})
    return [set(d.keys()), set(dict.keys(d)), set(K.keys(d)), _err(d.keys, 1)]


def _m_values(K):
    d = K({"a": 1, "b": 2})
    return [set(d.values()), set(dict.values(d)), set(K.values(d)), _err(d.values, 1)]


def _m_pop(K):
    d = K({"a": 1, "b": 2})
    out = [d.pop("a"), dict(d), d.pop("c", None)]
    e = K({"a": 1, "b": 2})
    return out + [dict.pop(e, "b"), K.pop(e, "a"), _err(e.pop, "c"), _err(e.pop)]


def _m_popitem(K):
    d = K({"a": 1})
    k, v = d.popitem()
    e = K()
    e["a"] = 1
    e["b"] = 2
    out = [k, v, len(d), e.popitem(), dict.popitem(K({"a": 1})), K.popitem(K({"z": 3}))]
    if K is not OrderedDict:
        out.append(_err(K({"q": 1}).popitem, 1))
    return out


def _m_setdefault(K):
    d = K({"a": 1, "b": 2})
    out = [d.setdefault("a", 3), d.setdefault("c", 3), d.setdefault("d"), dict(d), dict.setdefault(d, "f", 5),
           K.setdefault(d, "e", 5)]
    return out + [_err(d.setdefault), _err(d.setdefault, [[]])]


def _m_update(K):
    d = K({"a": 1, "b": 2})
    d.update({"b": 3, "c": 4})
    d.update(K({"d": 5}))
    dict.update(d, K({"e": 6}))
    K.update(d, K({"f": 7}))
    d.update(f=70, g=8)
    K.update(d, h=9)
    return [dict(d), list(d), _err(d.update, 1)]


def _m_keys_contains(K):
    d = K({"a": 1, "b": 2})
    k = d.keys()
    return ["a" in k, "c" in k, "a" in dict.keys(d), "b" in K.keys(d)]


def _m_items_contains(K):
    d = K({"a": 1, "b": 2})
    i = d.items()
    return [("a", 1) in i, ("a", 2) in i, ("c", 1) in i, ("a", 1) in dict.items(d), ("b", 2) in K.items(d)]


def _m_values_contains(K):
    d = K({"a": 1, "b": 2})
    v = d.values()
    return [1 in v, 3 in v, 1 in dict.values(d), 2 in K.values(d)]


def _m_type(K):
    d = K({"a": 1})
    return [isinstance(d, K), type(d) is K]


def _m_type_comparison(K):
    out = [K == K, K is K]
    for other in (dict, OrderedDict, defaultdict):
        if K == other:
            continue
        out += [K != other, K is not other]
    return out


def _m_iter(K):
    it = K({1: 2, 3: 4}).__iter__()
    return [next(it), next(it)]


def _m_bool(K):
    p, q = K(), K({"a": 1})
    return [bool(p), bool(q), not p, not q]


DICT_PROBES = {"test_dict_items_cmp_value_eq_raises": _items_cmp_raises,
               "test_dict_items_cmp_value_present_absent": _items_cmp_values,
               "test_cmp_eq_key_raises": _cmp_eq_key_raises, "test_cmp_eq": _m_cmp_eq, "test_cmp_ne": _m_cmp_ne,
               "test_binop_or": _m_or, "test_binop_ior": _m_ior, "test_binop_ior_iterable": _m_ior_iterable,
               "test_clear": _m_clear, "test_copy": _m_copy, "test_fromkeys": _m_fromkeys, "test_get": _m_get,
               "test_items": _m_items, "test_keys": _m_keys, "test_values": _m_values, "test_pop": _m_pop,
               "test_popitem": _m_popitem, "test_setdefault": _m_setdefault, "test_update": _m_update,
               "test_keys_contains": _m_keys_contains, "test_items_contains": _m_items_contains,
               "test_values_contains": _m_values_contains, "test_type": _m_type,
               "test_dict_type_comparison": _m_type_comparison, "test_dict___iter__": _m_iter, "test_bool": _m_bool}


def _run_probe(probe, kind):
    def fn(t):
        return t * 2, probe(kind)
    return fn


# dict.clear / dict.update / dict.__ior__ called on an OrderedDict bypass its linked list (CPython then raises
# KeyError on later use): those three probes run on dict and a dict subclass only.
_PLAIN_ONLY = {"test_clear", "test_update", "test_binop_ior"}
for _test, _probe in DICT_PROBES.items():
    for _label, _kind in [("dict", dict), ("dict_subclass", PlainSub), ("ordered_dict", OrderedDict)]:
        if _kind is OrderedDict and _test in _PLAIN_ONLY:
            continue
        S.add(_test, f"{_test[5:]}_{_label}", _run_probe(_probe, _kind), [(_x(2),)])


def _od_move_to_end(K):
    d = K.fromkeys("abcde")
    out = ["".join(d)]
    d.move_to_end("b")
    out.append("".join(d))
    K.move_to_end(d, "a")
    out.append("".join(d))
    K.move_to_end(d, "a", last=False)
    return out + ["".join(d), _err(d.move_to_end, "f")]


def _od_eq_order(K):
    return [K.fromkeys("abc") == K.fromkeys("bca"), dict.fromkeys("abc") == K.fromkeys("bca")]


def _od_or_type(K):
    d1, d2 = K({"a": 1, "b": 2}), K({"b": 3, "c": 4})
    return [type(d1 | d2).__name__, type(dict(d1) | d2).__name__, type(d1 | dict(d2)).__name__]


def _od_ior_type(K):
    d1, d2 = K({"a": 1, "b": 2}), K({"b": 3, "c": 4})
    d3, d4 = d1.copy(), d2.copy()
    out = [type(d3.__ior__(d2)).__name__, type(dict.__ior__(d4, d2)).__name__, type(K.__ior__(d4, d2)).__name__]
    d3, d4 = d1.copy(), d2.copy()
    return out + [type(dict.__ior__(d3, dict(d2))).__name__, type(dict.__ior__(dict(d3), d2)).__name__,
                  type(dict(d4).__ior__(d2)).__name__]


def _od_popitem_kwarg(K):
    d = K.fromkeys("abcdf")
    return [d.popitem(last=True), list(d), d.popitem(last=False), list(d), d.popitem(False), d.popitem(True), list(d)]


for _test, _probe in {"test_move_to_end": _od_move_to_end, "test_cmp_eq_order": _od_eq_order,
                      "test_binop_or_return_type": _od_or_type, "test_binop_ior_return_type": _od_ior_type,
                      "test_popitem_kwarg": _od_popitem_kwarg}.items():
    S.add(_test, f"ordered_dict_{_test[5:]}", _run_probe(_probe, OrderedDict), [(_x(2),)])


class ODOverloads(OrderedDict):
    def get(self, key, default=None, /):
        return default

    def move_to_end(self, key, last=True, /):
        self.pop(key)


@S.case("test_move_to_end", (_x(2),))
def ordered_dict_subclass_overriding_move_to_end(t):
    p = ODOverloads({"a": 1, "b": 2, "c": 3})
    p.move_to_end("a")
    return t + 1, list(p.keys()), p.get("b", 9)


def _gn(x, y):
    return x + y


@S.case("test_functools_partial_key", (_x(4),))
def partial_as_dict_key(x):
    import functools

    d = {}
    p = functools.partial(_gn, x=1)
    d[p] = 5
    return x * d[p]


class Holder(typing.NamedTuple):
    fn: object
    const: int


@S.case("test_namedtuple_functools", (_x(4),))
def namedtuple_holding_partial_as_key(x):
    import functools

    d = {}
    p = functools.partial(_gn, x=1)
    d[Holder(p, 4)] = 5
    return x * d[Holder(p, 4)]


class ValueKey:
    def __init__(self, value, name):
        self.value = value
        self.name = name

    def __hash__(self):
        return hash((self.value, self.name))

    def __eq__(self, other):
        return (self.value, self.name) == (other.value, other.name)


@S.case("test_custom_object_as_dict_key", (_x(4),))
def equal_user_keys_share_an_entry(x):
    d = {}
    k1 = ValueKey(42, "t")
    d[k1] = x * 2
    k2 = ValueKey(42, "t")
    d[k2] = x * 3
    return d[k1] * d[k2], len(d)


_REF = {}


class Registered:
    def __init__(self):
        self.x = {}
        _REF[self] = {}


@S.case("test_user_defined_object", lambda: (Registered(), _x(4)), post=lambda out, a, x: (out, list(_REF[a])))
def user_object_as_global_dict_key(a, x):
    _REF[a]["foo"] = x
    return x + 1


# -- instance __dict__ views and order (DunderDictVariableTests) -----------------------------------
class Attrs:
    def __init__(self):
        self.a = 1
        self.b = 2


def _attrs_probe(body):
    def fn(obj):
        return body(obj), sorted(obj.__dict__.items())
    return fn


for _test, _body in {
    "test_dunder_dict_items_includes_mutations": lambda o: (setattr(o, "c", 3), sorted(o.__dict__.items()))[1],
    "test_dunder_dict_keys_includes_mutations": lambda o: (setattr(o, "c", 3), setattr(o, "d", 4),
                                                           sorted(o.__dict__.keys()))[2],
    "test_dunder_dict_values_includes_mutations": lambda o: (setattr(o, "c", 3), sorted(o.__dict__.values()))[1],
    "test_dunder_dict_copy_does_not_alias_instance_dict": lambda o: (o.__dict__.copy().__setitem__("x", 4),
                                                                     "x" in o.__dict__)[1],
    "test_dunder_dict_multiple_mutations": lambda o: (setattr(o, "y", 2), setattr(o, "z", 3), setattr(o, "y", 20),
                                                      set(o.__dict__.keys()))[3],
    "test_dunder_dict_items_iteration": lambda o: (setattr(o, "c", 3), sorted(kv for kv in o.__dict__.items()))[1],
}.items():
    S.add(_test, f"instance_{_test[5:]}", _attrs_probe(_body), [lambda: (Attrs(),)])


class Scheduler:
    def __init__(self):
        self.base_lrs = [0.1]
        self.last_epoch = 0

    def state_dict(self):
        return dict(self.__dict__.items())


@S.case("test_dunder_dict_comprehension_with_mutations", lambda: (Scheduler(),))
def state_dict_from_instance_dict_after_writes(s):
    s.last_epoch = 5
    s.new_attr = "test"
    return sorted(s.state_dict().items())


class Empty:
    pass


@S.case("test_dunder_dict_pop_reinsert_order", (_x(2),))
def instance_dict_pop_then_reinsert_goes_last(t):
    obj = Empty()
    obj.x, obj.y, obj.z = 1, 2, 3
    d = obj.__dict__
    d.pop("y")
    d["y"] = 42
    return t, list(d), d["y"]


@S.case("test_dunder_dict_pop_reinsert_order_with_other_mutations", (_x(2),))
def instance_dict_order_after_mixed_writes(t):
    obj = Empty()
    obj.a, obj.b, obj.c = 1, 2, 3
    d = obj.__dict__
    d.pop("b")
    d["c"] = 30
    d["e"] = 5
    d["b"] = 20
    return t, list(d), dict(d)


@S.case("test_dunder_dict_pop_missing_raises_keyerror", (_x(2),))
def instance_dict_pop_missing(t):
    obj = Empty()
    obj.x = 1
    d = obj.__dict__
    d.pop("x")
    try:
        d.pop("x")
        raised = False
    except KeyError:
        raised = True
    return t, list(d), raised


@S.case("test_dunder_dict_pop_default", (_x(2),))
def instance_dict_pop_with_default(t):
    obj = Empty()
    obj.x = 1
    d = obj.__dict__
    return t, d.pop("missing", "fallback"), d.pop("x"), list(d)


class HasMethod:
    def bar(self):
        return 42


@S.case("test_method_dict_direct_fullgraph", (_x(2),))
def dict_of_bound_method(t):
    return t, HasMethod().bar.__dict__


@S.case("test_dunder_dict_non_str_key_setitem", (_x(2),))
def instance_dict_with_non_str_key(t):
    f = Empty()
    f.__dict__[1] = 1
    f.a = "a"
    return t, dict(f.__dict__), list(f.__dict__)


@S.case("test_dunder_dict_non_str_key_roundtrip", (_x(2),))
def instance_dict_non_str_keys_read_and_delete(t):
    f = Empty()
    d = f.__dict__
    d[1] = 10
    d[2.5] = 20
    d[(3, 4)] = 30
    got = (d[1], d[2.5], d[(3, 4)])
    del d[2.5]
    return t, got, dict(d)


S.torch_differs(
    "torch 2.13 falls short of the test file's torch here (or departs from eager)",
    "dict_subclass_with_builtin_attr_methods", "dict_view_mapping_attribute", "dict_view_mapping_is_live",
    "defaultdict_copies_keep_factory", "set_binop_set_vs_user_defined_set_iand",
    "set_binop_set_vs_user_defined_set_ior", "set_binop_set_vs_user_defined_set_ixor",
    "set_binop_set_vs_user_defined_set_isub", "method_wrapper_as_dict_key", "dict_items_cmp_value_eq_raises_dict",
    "dict_items_cmp_value_eq_raises_dict_subclass", "dict_items_cmp_value_eq_raises_ordered_dict",
    "cmp_eq_key_raises_dict", "cmp_eq_key_raises_dict_subclass", "cmp_eq_key_raises_ordered_dict",
    "equal_user_keys_share_an_entry", "instance_dict_pop_then_reinsert_goes_last",
    "instance_dict_order_after_mixed_writes", "instance_dict_with_non_str_key",
    "instance_dict_non_str_keys_read_and_delete")

test_behaviour = S.pytest_function()
