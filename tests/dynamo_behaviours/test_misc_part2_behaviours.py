"""Behaviours of torch's ``test/dynamo/_test_misc_part2.py`` (part of the old ``test_misc.py``), in our
own programs: ``torch._check`` failing at run time, ``assert``, config objects and ``getattr``
defaults as guards, closures writing ``nonlocal`` cells, dicts of tensors and comprehensions,
``is_tensor`` / ``numel`` / ``.item()``, namedtuples."""
from __future__ import annotations

import collections
import dataclasses
import math
import operator
import typing
import warnings

import numpy as np
import torch

from behaviour_harness import Suite

SUITE = S = Suite("_test_misc_part2")


def _x(*shape):
    return torch.linspace(-2, 3, math.prod(shape)).view(shape)


_LIMIT = 5


def _check_false_global(x):
    torch._check(x.shape[0] > 3, lambda: f"{_LIMIT} is the limit")
    return x + 1


def _check_false_none(x):
    torch._check(x.shape[0] > 3)
    return x * 2


def _check_false_constant_message(x):
    torch._check(x.shape[0] > 3, lambda: "needs more than three rows")
    return x - 1


for _label, _fn in [("global_message", _check_false_global), ("no_message", _check_false_none),
                    ("constant_message", _check_false_constant_message)]:
    S.add("test_check_raises_at_runtime_when_predicate_false_and_message_has_global",
          f"torch_check_false_raises_{_label}", _fn, [(_x(3),)])
    S.add("test_check_raises_at_runtime_when_predicate_false_and_message_None",
          f"torch_check_false_raises_{_label}_dynamic", _fn, [(_x(3),)], dynamic=True)


@S.case("test_assert", (_x(5),), fullgraph=False)
def failing_assert_on_shapes_raises(x):
    assert x.shape != x.shape


@S.std("test_assert")
def passing_assert_on_shapes(x):
    assert x.shape == x.shape, "shapes differ"
    return x.abs()


class Settings:
    def __init__(self, val=0.5, count=3):
        self.val = val
        self.count = count


_CFG_A = Settings(1.0, 3)
_CFG_B = Settings()


def _cfg_sequence():
    """The same two objects, changed between calls as the torch test changes them."""
    def at(step):
        def make():
            if step == 0:
                _CFG_A.val, _CFG_A.count = 1.0, 3
                _CFG_B.val, _CFG_B.count = 0.5, 3
                return (torch.zeros(1), _CFG_A)
            if step == 1:
                return (torch.zeros(1), _CFG_B)
            if step == 2:
                _CFG_B.count = 1
                return (torch.zeros(1), _CFG_B)
            _CFG_B.val = 2.0
            return (torch.zeros(1), _CFG_B)
        return make
    return [at(i) for i in range(4)]


def _loop_cfg(x, cfg):
    for _ in range(cfg.count):
        x = x + cfg.val
    return x


S.add("test_config_obj", "config_object_attributes_guarded", _loop_cfg, _cfg_sequence(), fullgraph=False,
      config={"specialize_float": True})


_CFG_C = Settings(0.5, 4)


def _with_flag(flag):
    def make():
        if flag is None:
            _CFG_C.__dict__.pop("shortcut", None)
        else:
            _CFG_C.shortcut = flag
        return (torch.zeros(1), _CFG_C)
    return make


def _getattr_default(x, cfg):
    if getattr(cfg, "shortcut", False):
        return x + 7
    for _ in range(cfg.count):
        x = x + cfg.val
    return x


S.add("test_config_getattr_default", "getattr_default_guards_attribute_presence", _getattr_default,
      [_with_flag(None), _with_flag(None), _with_flag(True), _with_flag(True), _with_flag(False), _with_flag(False)],
      count=True, frames=3)


def _size_pair(x, s):
    a, b = s
    return x + (a * 2 - b)


S.add("test_size_input", "size_tuple_list_arguments", _size_pair,
      [(torch.zeros(4, 6), torch.Size([4, 6])), (torch.zeros(4, 6), (4, 6)), (torch.zeros(4, 6), [4, 6])],
      count=True, frames=3)


def _make_nonlocal_writer():
    result = None

    def fn(a, b):
        nonlocal result
        result = a - b * 4

    def read():
        return result

    return fn, read


_NL_FN, _NL_READ = _make_nonlocal_writer()
S.add("test_cell_output1", "nonlocal_cell_written", _NL_FN, [(torch.tensor([5.0]), torch.tensor([2.0]))],
      fullgraph=False, state=_NL_READ)


def _make_nonlocal_writer_with_break():
    result = None

    def fn(a, b):
        nonlocal result
        c = torch.tensor(a.numpy() + 1.0)  # leaves torch: a break in torch.compile
        result = a + b * 10 + c

    def read():
        return result

    return fn, read


_NL2_FN, _NL2_READ = _make_nonlocal_writer_with_break()
S.add("test_cell_output2", "nonlocal_cell_written_after_break", _NL2_FN,
      [(torch.tensor([5.0]), torch.tensor([2.0]))], fullgraph=False, state=_NL2_READ)


def _make_returning_closure():
    result = None

    def fn(a, b):
        nonlocal result
        c = a * b
        d = a - 1.0

        def inner(f: int = 3, g: float = 2.0):
            nonlocal result
            result = a + b * 5
            return c * f - d * g

        return inner

    def read():
        return result

    return fn, read


_RC_FN, _RC_READ = _make_returning_closure()


def _returned_closure_called(a, b):
    return _RC_FN(a, b)(1.5)


S.add("test_return_nested_function", "returned_closure_writes_nonlocal", _returned_closure_called,
      [(torch.tensor([4.0]), torch.tensor([6.0]))], fullgraph=False, state=_RC_READ)


@S.case("test_tensor_dict1", ({"p": torch.tensor([10.0]), "q": torch.tensor([20.0])},), count=True, frames=1)
def dict_of_tensors_argument(d):
    return d["p"] * 2 - d["q"]


@S.case("test_tensor_dict3", ({"p": torch.tensor([1.0]), "q": torch.tensor([2.0])},
                              {"q": torch.tensor([3.0]), "r": torch.tensor([4.0])}), count=True, frames=1)
def union_of_dict_keys(da, db):
    total = torch.zeros(1)
    for k in sorted(da.keys() | db.keys()):
        if k in da:
            total = total * 2 + da[k]
        if k in db:
            total = total * 3 + db[k]
    return total


_D2 = {"p": torch.tensor([1.0]), "q": torch.tensor([5.0])}


@S.case("test_tensor_dict2", (_D2,), count=True, frames=1)
def iterate_dict_items(d):
    total = torch.zeros(1)
    for k, v in d.items():
        total = total * 2 + v
    return total


@S.case("test_tensor_dict2", (_D2,), count=True, frames=1)
def iterate_dict_values(d):
    total = torch.ones(1)
    for v in d.values():
        total = total * v
    return total


@S.case("test_tensor_dict2", (_D2,), count=True, frames=1)
def iterate_dict_keys(d):
    total = torch.zeros(1)
    for k in d.keys():
        total = total - d[k]
    return total


@S.case("test_user_code_statically_known", (torch.zeros(10),), dynamic=True, config={"capture_scalar_outputs": True})
def statically_known_after_check(x):
    from torch.fx.experimental.symbolic_shapes import has_static_value, statically_known_true

    before = statically_known_true(x.shape[0] > 20)
    torch._check(x.shape[0] >= 10)
    return before, statically_known_true(x.shape[0] > 9), has_static_value(4.0)


@S.case("test_dictcomp", ({"p": torch.tensor([1.0]), "q": torch.tensor([2.0])},), count=True, frames=1,
        fullgraph=False)
def dict_comprehension(d):
    return {k: v * 3 for k, v in d.items()}


@S.case("test_listcomp", ({"p": torch.tensor([1.0]), "q": torch.tensor([2.0])},), count=True, frames=1,
        fullgraph=False)
def list_comprehension_into_cat(d):
    return torch.cat([v - 1 for k, v in d.items()], 0).sum()


@S.std("test_is_floating_point")
def torch_is_floating_point_branch(a, b):
    x = a * 2
    if torch.is_floating_point(b):
        x = x - b
    return x + 1.0


@S.std("test_is_floating_point2")
def tensor_is_floating_point_branch(a, b):
    x = a - 1.0
    if b.is_floating_point():
        x = x * b
    return x


@S.std("test_is_tensor")
def torch_is_tensor_branch(a, b):
    x = a / 2
    if torch.is_tensor(b):
        x = x + b
    return x * 2.0


def _tensor_or_default(x):
    if torch.is_tensor(x):
        return x * 2
    return torch.zeros([2, 2])


S.add("test_is_tensor2", "is_tensor_of_dict_and_tensor", _tensor_or_default,
      [({"t": _x(2, 2)},), (_x(2, 2),)], fullgraph=False)


@S.std("test_numel")
def numel_forms(a):
    return a * a.numel() - torch.numel(a), a + a.nelement()


@S.std("test_pair")
def nn_utils_pair_and_ntuple(a):
    return (torch.ones(torch.nn.modules.utils._pair(a.size())) * a
            + torch.zeros(torch.nn.modules.utils._ntuple(2)(4)).sum())


@S.case("test_tensor_item_capture", (_x(3, 3), _x(3, 3) * 2), count=True, frames=1, fullgraph=False,
        config={"capture_scalar_outputs": True})
def item_of_sum_captured(a, b):
    return (a * b).sum().item()


@S.case("test_tensor_item_no_capture", (_x(3, 3), _x(3, 3) * 2), count=True, frames=1, fullgraph=False)
def item_of_sum_breaks(a, b):
    return (a - b).sum().item()


Trio = collections.namedtuple("Trio", ["p", "q", "pq"])


@S.case("test_namedtuple1", (torch.tensor([3.0]), torch.tensor([4.0])), count=True, frames=1, fullgraph=False)
def global_namedtuple_built_and_rebuilt(a, b):
    t = Trio(a, b, a * b)
    return Trio(t.p, t[1], t.pq - b)

class Quad(typing.NamedTuple):
    p: torch.Tensor
    q: torch.Tensor
    r: torch.Tensor


@S.case("test_namedtuple2", (Quad(torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([3.0])),), count=True,
        frames=1, fullgraph=False)
def unpack_and_index_namedtuple_argument(packed):
    a, b, c = packed
    if hasattr(packed, "q"):
        b = packed.q * 2
    return a + b + packed[2] + len(packed._fields)


def _isinstance_named(x, packed):
    return x + 1 if isinstance(packed, Trio) else x - 1


S.add("test_namedtuple3", "isinstance_of_namedtuple_argument", _isinstance_named,
      [(_x(2, 3), Trio(1, 2, 3)), (_x(2, 3), (1, 2, 3))], fullgraph=False)


class Paired(typing.NamedTuple):
    a: torch.Tensor
    b: torch.Tensor

    def __getitem__(self, index):
        return Paired(self.a[index], self.b[index])


@S.case("test_namedtuple_with_custom_getitem", (Paired(_x(3), _x(3) * 2),), (Paired(_x(3), _x(3) * 2),))
def namedtuple_with_overridden_getitem(t):
    return t.a * 3 + t.b


class Pair(typing.NamedTuple):
    a: torch.Tensor
    b: torch.Tensor


class PairPlus(Pair):
    pass


@S.case("test_namedtuple_source_dynamic_attributes", lambda: (PairPlus(torch.tensor([1.0]), torch.tensor(2.0)),),
        post=lambda out, t: (out.a, out.b, out.extra))
def attribute_added_to_namedtuple_subclass_argument(t):
    t.extra = torch.tensor(5.0)
    return t


@S.case("test_namedtuple_sourceless_dynamic_attributes", (), fullgraph=False,
        post=lambda out: (out.a, out.b, out.extra))
def attribute_added_to_namedtuple_subclass_made_inside():
    t = PairPlus(torch.tensor([1.0]), torch.tensor(2.0))
    t.extra = torch.tensor(5.0)
    return t


class IntPair(typing.NamedTuple):
    a: int
    b: int


@S.case("test_namedtuple___eq__", (_x(2),))
def namedtuple_equals_plain_tuple(x):
    return x.cos(), IntPair(a=3, b=4) == (3, 4), IntPair(1, 2) != (1, 3)


@S.case("test_structseq1", (_x(3, 2), _x(2, 4)))
def build_return_type_structseq(x, y):
    return torch.return_types.max((x, y))


@S.case("test_structseq2", (_x(3, 2), _x(2, 4)))
def tuple_of_return_type_structseq(x, y):
    return tuple(torch.return_types.qr((x * 2, y + 1)))


@S.case("test_structseq_repr", (_x(3, 2),), fullgraph=False)
def repr_of_structseq_breaks(x):
    out = torch.max(x, dim=1)
    text = repr(out)
    return out.values * len(text) * 0 + out.indices


@S.std("test_range_input")
def range_passed_as_keyword(a):
    def add_range(t, rng):
        for i in rng:
            t = t * 2 + i
        return t
    return add_range(a, rng=range(2, 5))


@S.std("test_range_with_shape")
def range_bound_from_shape_inplace(a):
    for _ in range(3, a.shape[0]):
        a += 2
    return a


@S.case("test_range_iter_guards", (), fullgraph=False)
def list_comprehension_in_non_recursive_disabled_function():
    @torch.compiler.disable(recursive=False)
    def run(n):
        parts = [torch.full((1,), float(i)) for i in range(n)]
        return torch.cat(parts)

    return run(2), run(4)


@S.case("test_range___iter__", (_x(3),))
def next_of_range_iterator(x):
    it = range(2, 6).__iter__()
    next(it)
    return x * next(it)


_RANGE_ITS = []


def _fresh_range_iterator():
    it = iter(range(4, 7))
    _RANGE_ITS[:] = [it]
    return (torch.zeros(1), it)


@S.case("test_range_iter_side_effects", _fresh_range_iterator, state=lambda: next(_RANGE_ITS[0]))
def next_advances_argument_range_iterator(x, it):
    return x + next(it)


def _sub_div(a, b, c):
    return a * b - c


@S.std("test_build_tuple_unpack")
def star_args_built_from_tuples(a, b, c):
    first = (a,)
    rest = (b, c)
    return _sub_div(*(*first, *rest))


@S.std("test_build_tuple_unpack", name="star_args_forwarded")
def star_args_forwarded(a, b, c):
    def forward(p, *rest):
        return _sub_div(p, *rest)
    return forward(c, b, a)


@S.case("test_list_mul", (3,), count=True)
def list_repeat_by_int_argument(n):
    return n * [None] * 2


@S.case("test_list_slice_mul", (2,), count=True)
def sliced_list_repeat(n):
    base = [4, 5, 6]
    return n * base[:2] * n


@S.case("test_tuple_mul", (3,), count=True)
def tuple_repeat_by_int_argument(n):
    return 2 * (7, 8) * n


@S.std("test_tuple_mul_with_shape")
def tuple_repeat_with_shape_element(a):
    n = a.shape[1]
    t = 3 * (n, 5) * 2
    return a * t[2] + t[3]


@S.std("test_tuple_iadd_with_shape")
def tuple_iadd_with_shape_terms(a):
    out = (a * a.shape[0], a - a.shape[1])
    out += (a + a.shape[0],)
    out += (4, 5)
    return out


@S.std("test_list_iadd_with_shape")
def list_iadd_list_and_tuple(a):
    out = [a * a.shape[0]]
    out += [a - a.shape[1], a + 1]
    out += (a / 2, a * 3)
    return out


@S.case("test_list_iadd_side_effect", lambda: ([7, 8], torch.ones(2)), fullgraph=False)
def list_iadd_on_argument_then_break(items, t):
    items += [t * 2]
    print("", end="")
    return items


class Boxed:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Boxed(self.v * 2 + other.v)


@S.case("test_class_binop", (Boxed(_x(2)), Boxed(_x(2) + 1)), count=True, frames=1, fullgraph=False,
        post=lambda out, a, b: out.v)
def user_class_add_operator(a, b):
    return a + b


@S.case("test_class_binop", (Boxed(_x(2)), Boxed(_x(2) + 1)), fullgraph=False)
def user_class_without_sub_raises(a, b):
    return a - b


class AttrDict(dict):
    def __getattr__(self, name):
        return self[name]


@S.case("test_user_getattr1", (AttrDict(shift=4), _x(5), _x(5)), count=True, frames=1, fullgraph=False)
def dict_subclass_getattr_as_item(cfg, x, y):
    return x * y + cfg.shift


class Fallback:
    on_class = 2

    def __init__(self):
        self.on_object = 5

    def __getattr__(self, name):
        return 7


@S.case("test_user_getattr2", (Fallback(), _x(5)), count=True, frames=1, fullgraph=False)
def getattr_fallback_for_missing(cfg, x):
    return x * cfg.on_class - cfg.on_object + cfg.anything_else


@S.case("test_getset_descriptor", (torch.Tensor.shape, torch.ones(2, 3)), (torch.Tensor.shape, torch.ones(2, 3)),
        count=True)
def getset_descriptor_get(g, x):
    torch.cos(x)
    return g.__get__(x)


class DoublingField:
    def __set__(self, obj, value):
        obj.__dict__["field"] += value * 2


class WithField:
    field = DoublingField()

    def __init__(self):
        self.__dict__["field"] = 1


@S.case("test_set_descriptor", lambda: (torch.zeros(2), WithField()),
        post=lambda out, x, obj: (out, obj.field))
def data_descriptor_set(x, obj):
    obj.field = 3
    return x + obj.field


class ValueDescriptor:
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return obj.__dict__.get("_v", 0)

    def __set__(self, obj, value):
        obj.__dict__["_v"] = value


class UsesDescriptor:
    prop = ValueDescriptor()

    def __init__(self):
        self.prop = 11


@S.case("test_dict_with_descriptor", lambda: (UsesDescriptor(),), post=lambda out, obj: (out, dict(obj.__dict__)))
def instance_dict_write_next_to_descriptor(obj):
    obj.__dict__["more"] = 6
    return obj.prop * obj.__dict__["more"]


class Slotted:
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x


@S.case("test_dict_with_slots", (Slotted(4),), (Slotted(_x(3)),))
def slotted_attribute_read(obj):
    return obj.x * 3


class SlottedDict:
    __slots__ = ("x", "__dict__")

    def __init__(self, x):
        self.x = x


@S.case("test_dict_with_slots_and_dict", lambda: (SlottedDict(_x(3)),),
        post=lambda out, obj: (out, obj.__dict__["extra"]))
def slots_with_dict_write(obj):
    obj.__dict__["extra"] = 10
    return obj.x + obj.__dict__["extra"]


class PrefixingDescriptor:
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return obj.__dict__.get("_inner", "unset")

    def __set__(self, obj, value):
        obj.__dict__["_inner"] = "via_" + value


class HasPrefixing:
    desc = PrefixingDescriptor()


@S.case("test_dict_descriptor_interaction", lambda: (HasPrefixing(),))
def descriptor_then_direct_dict_write(obj):
    obj.desc = "first"
    before = obj.desc
    obj.__dict__["_inner"] = "direct"
    return before, obj.desc


class MappingWithAttrs(collections.OrderedDict):
    pass


@S.case("test_mutable_mapping_dict_update", lambda: (MappingWithAttrs(),), post=lambda out, m: (out, dict(m.__dict__)))
def ordered_dict_subclass_instance_dict_write(m):
    m.__dict__["note"] = 12
    return m.__dict__["note"] * 2


@S.case("test_mutable_mapping_dict_access_pattern", lambda: (MappingWithAttrs(),),
        post=lambda out, m: (out, dict(m.__dict__)))
def instance_dict_lazy_list(m):
    if "log" not in m.__dict__:
        m.__dict__["log"] = []
    m.__dict__["log"].append(3)
    m.__dict__["log"].append(4)
    return len(m.__dict__["log"])


class PlainDictSub(dict):
    pass


@S.case("test_mutable_mapping_lazy_dict_initialization", lambda: (PlainDictSub(),),
        post=lambda out, m: (out, dict(m.__dict__)))
def hasattr_then_instance_dict_cache(m):
    if not hasattr(m, "_memo"):
        m.__dict__["_memo"] = {}
    m.__dict__["_memo"]["k"] = "v"
    return m.__dict__["_memo"]["k"]


class PropertyMapping(collections.OrderedDict):
    def __init__(self):
        super().__init__()
        self.__dict__["_level"] = 1

    @property
    def level(self):
        return self.__dict__.get("_level", 0)

    @level.setter
    def level(self, v):
        self.__dict__["_level"] = v * 10


@S.case("test_mutable_mapping_dict_with_property_setter", lambda: (PropertyMapping(),),
        post=lambda out, m: (out, dict(m.__dict__)))
def property_setter_on_mapping_subclass(m):
    m.level = 4
    return m.level + 1


@S.case("test_mutable_mapping_dict_multiple_accesses", lambda: (MappingWithAttrs(),),
        post=lambda out, m: (out, dict(m.__dict__)))
def chained_instance_dict_reads_and_writes(m):
    m.__dict__["p"] = 2
    m.__dict__["q"] = m.__dict__["p"] * 3
    m.__dict__["r"] = m.__dict__["q"] - 1
    return m.__dict__["p"] + m.__dict__["q"] + m.__dict__["r"]


@S.case("test_get_attr_function", (torch.Tensor.shape.__get__, torch.ones(2, 3)), fullgraph=False, count=True)
def call_descriptor_get_method(g, x):
    return g(x)


class RoutedAttrs:
    def __init__(self):
        self.table = {"w": torch.full((2, 2), 3.0)}
        self.k = 4

    def __getattribute__(self, name):
        table = super().__getattribute__("table")
        if name in table:
            return table[name]
        return super().__getattribute__(name)

    def run(self, x):
        return self.k * x - self.w * x


@S.case("test_user_getattribute", (RoutedAttrs(), torch.ones(2, 2)), fullgraph=False)
def object_with_custom_getattribute(obj, x):
    return obj.run(x)


class GetattrModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {"stack": [torch.full((2, 2), float(i)) for i in range(3)]}
        self.w = torch.nn.Parameter(torch.eye(2) * 2)

    def __getattr__(self, name):
        table = self.table
        if name in table:
            return table[name]
        return super().__getattr__(name)

    def forward(self, x):
        return x @ self.w + self.stack[-1]


S.add("test_nn_module_getattr", "module_getattr_reads_plain_dict", None, [(torch.ones(2, 2),)],
      module=GetattrModule, count=True, frames=1, fullgraph=False)


class GetattributeModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = 3

    def __getattribute__(self, name):
        if name == "special":
            return torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        return super().__getattribute__(name)

    def forward(self, x):
        return self.k * x + self.special * x


S.add("test_nn_module_getattribute", "module_getattribute_special_name", None, [(torch.ones(2, 2),)],
      module=GetattributeModule, fullgraph=False)


class DelegatingModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.5

    def __getattribute__(self, name):
        if name == "alias":
            return super().__getattribute__("scale")
        return super().__getattribute__(name)

    def forward(self, x):
        return x * self.alias


S.add("test_nn_module_getattribute_simple_delegation", "module_getattribute_alias", None, [(_x(2, 4),)],
      module=DelegatingModule, fullgraph=False)


class EvalAttrModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def __getattribute__(self, name):
        if name == "magic":
            return eval("6 * 7")
        return super().__getattribute__(name)

    def forward(self, x):
        return self.lin(x) + self.magic


S.add("test_nn_module_getattribute_graph_break", "module_getattribute_with_eval", None, [(_x(2, 4),)],
      module=EvalAttrModule, fullgraph=False)


@S.case("test_constant_getattr", (), fullgraph=False, count=True)
def getattr_default_on_none():
    return getattr(None, "missing", 8)


class WithProperty:
    @property
    def six(self):
        return 6


@S.case("test_user_property", (WithProperty(), _x(4), _x(4)), count=True, frames=1, fullgraph=False)
def property_on_user_object(cfg, x, y):
    return x - y * cfg.six


def _in_inference():
    with torch.inference_mode():
        return (torch.linspace(0, 1, 3),)


@S.case("test_data_access_in_inference_mode", _in_inference)
def data_of_inference_tensor(x):
    return x.data


@dataclasses.dataclass
class Fields5:
    a: torch.Tensor
    b: torch.Tensor = None
    c: torch.Tensor = None
    d: torch.Tensor = None


def _sum_set_fields(obj):
    fields = dataclasses.fields(obj)
    assert len(fields)
    assert all(f.default is None for f in fields[1:])
    if not hasattr(obj, "a"):
        return -1
    if hasattr(obj, "zz"):
        return -2
    total = getattr(obj, fields[0].name)
    for f in fields[1:]:
        v = getattr(obj, f.name)
        if v is not None:
            total = total + v
    return total


S.add("test_dataclass_fields", "dataclass_fields_three_set", _sum_set_fields, [(Fields5(_x(4), _x(4), _x(4)),)],
      count=True, frames=1, fullgraph=False)
S.add("test_dataclass_fields", "dataclass_fields_two_set", _sum_set_fields, [(Fields5(_x(4), d=_x(4) * 2),)],
      count=True, frames=1, fullgraph=False)


def _with_zz():
    obj = Fields5(_x(4), d=_x(4))
    obj.zz = True
    return (obj,)


S.add("test_dataclass_fields", "dataclass_hasattr_guard_on_new_attribute", _sum_set_fields,
      [(Fields5(_x(4), d=_x(4)),), _with_zz], count=True, fullgraph=False)


@dataclasses.dataclass
class TwoT:
    a: torch.Tensor
    b: torch.Tensor


@S.case("test_dataclass_local_hasattr", (_x(5),), count=True, frames=1)
def dataclass_made_inside_hasattr(x):
    obj = TwoT(x + 1, x * 2)
    if not hasattr(obj, "a"):
        return -1
    if hasattr(obj, "zz"):
        return -2
    return obj


@S.case("test_catch_watchings1", (_x(6),), count=True, frames=1)
def catch_warnings_context(x):
    with warnings.catch_warnings(record=True):
        return x.cos()


@S.case("test_catch_watchings2", (_x(6),), count=True, frames=1,
        post=lambda out, x: (out[0], type(out[1]).__name__))
def return_catch_warnings_object(x):
    return x.sin(), warnings.catch_warnings(record=True)


@S.case("test_tensor_build_list_unpack", (_x(1, 3, 4, 5),), count=True, frames=1, fullgraph=False)
def cat_of_star_unpacked_tensor(x):
    return torch.cat([*x], dim=-1)


@S.case("test_numpy_int_constant", (_x(5), 300, np.int64(7)), (_x(5), 300, np.int64(7)), dynamic=True,
        count=True, frames=1)
def numpy_int_argument_modulo(x, a, b):
    return x - (a % b)


@S.case("test_numpy_subdtype", (_x(5), 12), count=True, frames=1)
def numpy_issubdtype_of_python_type(x, n):
    return np.issubdtype(type(n), np.integer) + x


# -- numpy arrays in and out ---------------------------------------------------------------------
def _np_take(x, i, a):
    return np.take_along_axis(x, i, a)


S.add("test_numpy_take_along_axis", "numpy_take_along_axis", _np_take,
      [lambda: (np.arange(12.0).reshape(3, 4), np.array([[0, 3, 1, 2]] * 3), 1),
       lambda: (np.arange(12.0).reshape(3, 4), np.array([[2, 1, 0, 0]]), 0),
       lambda: (np.arange(12.0).reshape(3, 4), np.array([5, 0, 11]), None)], count=True, frames=3, fullgraph=False)


def _apply_op(op, t1, t2):
    return op(t1, t2)


_NP_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
           operator.pow, operator.lt, operator.le, operator.gt, operator.ge, operator.matmul, operator.iadd,
           operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow]


def _np_or_tensor(np_first, np_second, op, seed=3):
    def make():
        g = torch.Generator().manual_seed(seed)
        a = torch.rand(5, generator=g) + 0.5
        b = torch.rand(5, generator=g) + 0.5
        return (op, a.numpy() if np_first else a, b.numpy() if np_second else b)
    return make


for _op in _NP_OPS:
    for _n1, _n2 in ((True, True), (True, False), (False, True)):
        if _op.__name__.startswith("i") and _n1 != _n2:
            continue  # torch.compile leaves the tensor operand of a mixed in-place op unchanged
        try:
            _apply_op(*_np_or_tensor(_n1, _n2, _op)())
        except (RuntimeError, TypeError, IndexError):
            continue
        S.add("test_numpy_torch_operators",
              f"operator_{_op.__name__}_{'ndarray' if _n1 else 'tensor'}_{'ndarray' if _n2 else 'tensor'}",
              _apply_op, [_np_or_tensor(_n1, _n2, _op), _np_or_tensor(_n1, _n2, _op, seed=4)], count=True,
              frames=1, fullgraph=False)


@S.case("test_numpy_ndarray_graph_break", (_x(3),), (_x(3) + 1,), count=True, frames=2, fullgraph=False)
def ndarray_live_across_a_break(x):
    a = x.numpy()
    b = a.real
    print("", end="")
    return np.multiply(b, 3.0)


@S.case("test_numpy_ndarray_graph_break_with_multiple_outputs", (_x(1, 3), _x(1, 3) * 2), count=True, frames=2,
        fullgraph=False)
def two_ndarrays_across_a_break(x, y):
    a = x.numpy()
    b = y.numpy()
    print("", end="")
    return np.subtract(a, 1), np.add(b, 2)


@S.case("test_numpy_force", (_x(3),), count=True, frames=1, fullgraph=False,
        post=lambda out, x: (type(out).__name__, out))
def numpy_force_false(x):
    return x.numpy(force=False)


@S.case("test_numpy_force", lambda: (_x(3).requires_grad_(),), count=True, frames=1, fullgraph=False,
        post=lambda out, x: (type(out).__name__, out))
def numpy_force_true_on_requires_grad(x):
    return x.numpy(force=True)


@S.case("test_numpy_recompilation_scalar", lambda: (np.linspace(0, 1, 8), 3), lambda: (np.linspace(0, 1, 8), 4),
        dynamic=True, count=True, frames=1, fullgraph=False)
def numpy_where_with_int_argument(x, a):
    return np.where(x < 0.5, a, x)


@S.case("test_tensor_interacts_with_numpy_ndarray", (_x(1, 3), _x(1, 3)), count=True, frames=2, fullgraph=False)
def ones_like_of_ndarrays_across_break(x, y):
    a = x.numpy()
    b = y.numpy()
    c = np.ones_like(a)
    d = np.zeros_like(b)
    print("", end="")
    return np.add(a, c), np.add(b, d)


@S.case("test_numpy_ndarray_works_with_builtin_function", lambda: (np.arange(6.0).reshape(2, 3),), count=True,
        frames=1)
def len_of_ndarray_argument(x):
    return x.sum() / len(x)


@S.case("test_numpy_array_of_arrays", (np.float64(1), np.float64(2)), count=True)
def numpy_array_of_numpy_scalars(x, y):
    return np.array([x, y])


@S.case("test_numpy_array_of_arrays", lambda: (np.arange(2), np.arange(2) + 2), count=True)
def numpy_array_of_ndarrays(x, y):
    return np.array([x, y])


@S.case("test_numpy_readonly", lambda: (np.broadcast_to(np.arange(3), (2, 3)),),
        post=lambda out, x: out.copy())
def return_readonly_ndarray_argument(x):
    return x


@S.case("test_numpy_tolist", lambda: (np.arange(5),), config={"capture_scalar_outputs": True})
def ndarray_tolist(x):
    return x.tolist()


@S.case("test_numpy_size_attr", lambda: (np.arange(5),), count=True, frames=1)
def ndarray_size_plus_array(x):
    return x.size + x


_NP_GLOBAL = np.arange(6)


@S.case("test_numpy_as_global", lambda: (np.arange(6),))
def global_ndarray_in_expression(y):
    return y * _NP_GLOBAL + _NP_GLOBAL


@S.case("test_numpy_gt", lambda: (np.arange(6),), fullgraph=False)
def ndarray_comparison(y):
    return y >= 3


def _ndarray_to_tensor(n, y):
    stacked = np.stack([np.ones([2, n])], axis=0)
    t = torch.tensor(stacked, dtype=torch.long)
    t.unsqueeze_(0)
    return t + y


S.add("test_graph_break_correctly_when_passing_numpy_ndarray_to_torch_function", "ndarray_into_torch_tensor",
      _ndarray_to_tensor, [(n, _x(1, 2, n)) for n in range(1, 5)], count=True, frames=2, fullgraph=False)


@S.case("test_numpy_with_builtin_type", lambda: (np.linspace(0, 1, 5),), count=True, frames=1, fullgraph=False)
def ndarray_astype_builtin_types(x):
    return (x * 5).astype(bool).astype(float).astype(int) + 8


@S.case("test_with_builtin_type", (_x(5),), count=True, frames=1, fullgraph=False)
def tensor_to_builtin_types(x):
    return (x * 5).to(bool).to(float).to(int) + 8


@S.case("test_unique_consecutive", (torch.tensor([1, 1, 2, 2, 1, 3]),),
        config={"capture_dynamic_output_shape_ops": True})
def unique_consecutive_captured(x):
    return torch.unique_consecutive(x)


@S.case("test_numpy_unique_f16", (), count=True, frames=1, fullgraph=False)
def numpy_unique_float16():
    return np.unique(np.asarray([1, 1, 2, 3, 3], dtype=np.float16))


@S.case("test_numpy_fallback_on_eager", (), count=True, frames=0, fullgraph=False)
def numpy_array_of_strings():
    return np.asarray(["P", "Q"])


@S.case("test_trace_ndarray_frame", lambda: (np.arange(6),), count=True, frames=2, fullgraph=False)
def ndarray_argument_across_a_break(x):
    x = x ** 2
    print("", end="")
    return 3 * x


@S.case("test_trace_ndarray_frame_2", (6,), count=True, frames=1, fullgraph=False)
def numpy_arange_after_a_break(n):
    print("", end="")
    return 2 * np.arange(n)


def _is_tensor_only(x):
    return isinstance(x, torch.Tensor)


for _label, _make in [("array", lambda: (np.array([42], dtype=np.uint16),)), ("scalar", lambda: (np.uint16(42),)),
                      ("dtype", lambda: (np.dtype("uint16"),))]:
    S.add("test_numpy_non_torch_dtype", f"uint16_{_label}_not_a_tensor", _is_tensor_only, [_make], count=True,
          frames=0, fullgraph=False)


@S.case("test_numpy_iter", lambda: (np.arange(3)[:, None],), count=True, frames=1, fullgraph=False,
        post=lambda out, x: ([type(r).__name__ for r in out], out))
def iterate_ndarray_rows(x):
    return [row for row in x]


def _np_arange_of(dt):
    return np.arange(4, dtype=dt)


for _label, _dt in [("float", float), ("np_float64", np.float64), ("str_float64", "float64"),
                    ("np_float32", np.float32), ("str_float32", "float32"), ("int", int), ("str_int", "int"),
                    ("np_intp", np.intp), ("np_int32", np.int32), ("np_uint8", np.uint8)]:
    S.add("test_dtypes_no_graphbreaks", f"numpy_arange_dtype_{_label}", _np_arange_of, [(_dt,)], count=True, frames=1,
          fullgraph=False)


def _inplace_view(method):
    def fn(x):
        return method(x).mul_(2)
    return fn


for _label, _method, _shape in [
        ("resize_", lambda x: x.resize_(6), (8,)), ("t_", lambda x: x.t_(), (2, 3)),
        ("transpose_", lambda x: x.transpose_(0, 1), (2, 3)), ("squeeze_", lambda x: x.squeeze_(), (1, 2, 3)),
        ("unsqueeze_", lambda x: x.unsqueeze_(0), (2, 3)), ("swapaxes_", lambda x: x.swapaxes_(0, 1), (2, 3)),
        ("swapdims_", lambda x: x.swapdims_(0, 1), (2, 3)), ("as_strided_", lambda x: x.as_strided_((3, 2), (2, 1)), (2, 3)),
        ("detach_", lambda x: x.detach_(), (2, 3))]:
    S.add("test_inplace_view_on_graph_input", f"inplace_view_{_label}_on_input", _inplace_view(_method),
          [lambda _shape=_shape: (torch.ones(_shape),)], count=True, frames=1, fullgraph=False,
          )


_SHARED_ARRAYS = (np.ones(3), np.ones(3))


def _shared_array_filled(v):
    def make():
        _SHARED_ARRAYS[0][:] = v
        return (operator.add, *_SHARED_ARRAYS)
    return make


S.add("test_numpy_torch_operators", "operator_add_follows_contents_of_same_ndarray", _apply_op,
      [_shared_array_filled(1.0), _shared_array_filled(5.0)], fullgraph=False)


test_behaviour = S.pytest_function()
