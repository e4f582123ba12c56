"""Behaviours of torch's ``test/dynamo/_test_misc_part1.py`` (part of the old ``test_misc.py``), in our
own programs: arguments and guards, shape arithmetic, builtins on shapes, tensor attributes, user
``__setattr__`` / ``__radd__`` / ``__iter__``, ``os.environ`` and ``sys.modules``, ``torch._check``.
Tests of torch.compile's own machinery (cache entries, dispatch modes, custom-op registration,
Triton allocators) have no counterpart here."""
from __future__ import annotations

import math
import os
import sys
import typing

import torch

from behaviour_harness import Suite

SUITE = S = Suite("_test_misc_part1")


def _x(*shape):
    return torch.linspace(-2, 3, math.prod(shape)).view(shape)


def _flagged(a, b, flag):
    if flag:
        return a * b
    return b - a


S.add("test_boolarg", "bool_and_none_argument_specialise", _flagged,
      [(_x(3, 3), _x(3, 3) + 1, True), (_x(3, 3), _x(3, 3), False), (_x(3, 3), _x(3, 3), None),
       (_x(3, 3), _x(3, 3), True)], count=True, frames=3)


@S.case("test_invalid_args_builtin", (_x(4),), fullgraph=False)
def isinstance_with_bad_keyword_raises(x):
    x = x.cos()
    if isinstance(x, torch.Tensor, bogus=1):
        x = x.cos()
    return x


@S.case("test_scalar_device_movement", (4, 5, torch.tensor(0.0)))
def add_python_numbers_into_out_tensor(a, b, out):
    return torch.add(a, b, out=out)


def _unpack_three(items):
    p, q, r = items
    return p * q - r


S.add("test_callpacked", "list_then_tuple_argument_recompiles", _unpack_three,
      [([_x(3), _x(3) + 1, _x(3) * 2],), ((_x(3), _x(3), _x(3)),), ([_x(3), _x(3), _x(3)],),
       ((_x(3), _x(3), _x(3)),)], count=True, frames=2)


def _compute_then_raise(a, b, kind):
    y = a * b + 3
    raise kind(str(y.shape))


S.add("test_raises", "raise_after_tensor_work", _compute_then_raise, [(_x(3), _x(3), AssertionError)],
      fullgraph=False)
S.add("test_raises", "raise_value_error_after_tensor_work", _compute_then_raise, [(_x(3), _x(3), ValueError)],
      fullgraph=False)


@S.case("test_module_not_callable", (_x(4),), fullgraph=False)
def calling_a_module_object_raises(x):
    return torch.linalg(x)


@S.std("test_inplace")
def empty_copy_then_isub(a, b):
    out = torch.empty((10, 10))
    out.copy_(b)
    out -= a
    return out


@S.std("test_inplace_desugaring")
def inplace_ops_on_int_literals(y):
    p = 3
    p += y
    q = 5
    q *= y
    return p, q


@S.std("test_unpack4")
def unpack_size_into_empty(a, b):
    a = a[:4, :]
    b = b[:4, :]
    rows, cols = a.size()
    out = torch.empty((rows, cols))
    out.copy_(a * b)
    return out


@S.std("test_unpack5")
def unpack_shape_into_empty(a, b):
    a = a[:, 3:]
    rows, cols = a.shape
    out = torch.zeros((rows, cols))
    out.copy_(a - b[:, :cols])
    return out


@S.std("test_matmul1")
def matmul_operator(a, b):
    return b @ a


@S.std("test_int_shape_binops")
def int_ops_with_shape_on_right(x):
    y = 20 - x.shape[0]
    y = 3 + y
    y = 2 * y
    y = 7 % y
    y = 2 ** y
    y = 50 // y
    y = pow(3, y)
    y = 9 / y
    return x * y


@S.std("test_shape_int_inplace_binops")
def inplace_int_ops_on_shape(x):
    p = x.shape[1]
    p += 3
    p -= 1
    p **= 2
    p /= 4
    p *= 3
    p //= 2
    p %= 7
    return x - p


@S.std("test_int_shape_inplace_binops")
def inplace_int_ops_with_shape_operand(x):
    p = x.shape[0]
    total = 0
    for op in ("add", "sub", "pow", "div", "mul", "floordiv", "mod"):
        y = 3
        if op == "add":
            y += p
        elif op == "sub":
            y -= p
        elif op == "pow":
            y **= p
        elif op == "div":
            y /= p
        elif op == "mul":
            y *= p
        elif op == "floordiv":
            y //= p
        else:
            y %= p
        total = total + y
    return x + total


@S.std("test_int_int_comparisons")
def constant_int_comparisons(x):
    if 3 != 3:
        k = 0
    elif 3 < 2 or 2 > 3 or 2 >= 3 or 3 <= 2:
        k = 0
    elif 3 == 3:
        k = 5
    else:
        k = 0
    return x * k


@S.std("test_shape_int_comparisons")
def shape_compared_with_int_on_right(x):
    n = x.shape[1]
    if n != 10 or n < 3 or n > 11 or n >= 11 or n <= 3:
        k = 0
    elif n == 10:
        k = 4
    else:
        k = 1
    return x - k


@S.std("test_int_shape_comparisons")
def shape_compared_with_int_on_left(x):
    n = x.shape[0]
    if 10 != n or 11 < n or 3 > n or 3 >= n or 11 <= n:
        k = 0
    elif 10 == n:
        k = 4
    else:
        k = 1
    return x + k


class ParamShapeArith(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(12))

    def forward(self, x):
        p = self.w.shape[0]
        y = p - x.shape[0]
        y = p + y
        y = p * y
        y = p % y
        y = p ** y
        y = p // y
        y = pow(p, y)
        y = p / y
        return x * y


S.add("test_param_shape_binops", "parameter_shape_arithmetic", None, [(_x(4),)], module=ParamShapeArith,
      count=True, frames=1)


class RightAdder:
    def __init__(self, v):
        self.v = v

    def __radd__(self, other):
        return other * 10 + self.v


@S.case("test_user_defined_binop", (_x(3), RightAdder(2)), count=True, frames=1, fullgraph=False)
def int_plus_user_object_radd(x, c):
    return x + (x.shape[0] + c)


class Bag:
    def __init__(self, n):
        self.items = [torch.full((2,), float(i)) for i in range(n)]

    def __iter__(self):
        return iter(self.items)


_BAG = Bag(2)


def _bag_of(n):
    def make():
        _BAG.items = [torch.full((2,), float(i)) for i in range(n)]
        return (_BAG,)
    return make


@S.case("test_user_defined_iter", _bag_of(2), _bag_of(2), _bag_of(3), _bag_of(3), count=True, frames=2)
def iterate_user_object_guards_length(bag):
    out = []
    for t in bag:
        out.append(t * 2)
    return out


def _shapes_compare(to, negate):
    def fn(a, b):
        p = to(a.unsqueeze(0).shape)
        q = to(b.unsqueeze(0).shape)
        same = p != q if negate else p == q
        return a * 2 if same else a - 2
    return fn


for _kind, _to, _torch_test in [("list", list, "test_compare_shapes_{}"), ("size", lambda s: s, "test_compare_shapes_{}"),
                                ("tuple", tuple, "test_compare_shapes_tuple_{}")]:
    for _neg in (False, True):
        _word = "neq" if _neg else "eq"
        S.std(_torch_test.format(_word), name=f"compare_shapes_as_{_kind}_{_word}")(_shapes_compare(_to, _neg))


@S.case("test_compare_shapes_with_constant", (_x(3, 4),), (_x(4, 3),), count=True, frames=2)
def shape_guard_recompiles_on_other_size(a):
    if a.shape[0] != 3:
        return a * 5
    return a * 2


def _abs_both(x, y):
    return abs(x) + abs(y)


S.add("test_builtin_abs", "abs_of_tensors", _abs_both, [(_x(3, 3), -_x(3, 3))])
S.add("test_builtin_abs", "abs_of_int_and_int_tensor", _abs_both, [(-7, torch.arange(-3, 3))])
S.add("test_builtin_abs", "abs_of_float_and_tensor", _abs_both, [(-0.25, _x(5))])


@S.std("test_builtin_isinstance")
def isinstance_of_many_kinds(x):
    made = torch.arange(2, 5)
    return [isinstance(x, torch.Tensor), isinstance(made, torch.Tensor), isinstance(x, float),
            isinstance(4, int), isinstance((1,), tuple), isinstance({"k": 1}, dict), isinstance(x, (int, torch.Tensor))]


_ENV = "EMBER_BEHAVIOUR_ENV_FLAG"


def _env_then(value):
    def make():
        os.environ[_ENV] = value
        return (torch.ones(2, 3),)
    return make


@S.case("test_os_environ_get", _env_then("1"), _env_then("0"), count=True, frames=2)
def branch_on_environment_variable(x):
    if os.environ.get(_ENV) == "1":
        return x * 3
    return x - 3


@S.case("test_os_environ_set_graph_break", (torch.ones(2, 3),), fullgraph=False,
        setup=lambda: os.environ.__setitem__(_ENV + "_SET", "before"), state=lambda: os.environ.get(_ENV + "_SET"))
def setting_environment_variable_breaks(x):
    x = x * 2
    os.environ[_ENV + "_SET"] = "after"
    return torch.cos(x)


@S.std("test_sys_modules")
def sys_modules_lookups(x, y):
    assert sys.modules.get("no_such_module_here") is None
    assert "another_missing_module" not in sys.modules
    assert "math" in sys.modules
    op = sys.modules["operator"]
    blt = sys.modules.get("builtins")
    op2 = sys.modules.get("missing_again", op)
    return op.mul(x, y), op2.sub(blt.abs(x), y)


@S.std("test_fold")
def math_function_of_constant(a):
    return a * math.sqrt(17) + math.log(3)


@S.case("test_getattr_dict", (_x(5),))
def import_module_table_inside(x):
    from torch.masked.maskedtensor._ops_refs import _MASKEDTENSOR_FUNCTION_TABLE

    return x + len(_MASKEDTENSOR_FUNCTION_TABLE)


def _tagged(t):
    t.tag_for_test = None
    return t


def _hasattr_tag(x):
    if hasattr(x, "tag_for_test"):
        return x * 2
    return x - 2


S.add("test_tensor_hasattr", "hasattr_custom_attribute_absent", _hasattr_tag, [(torch.ones(2, 2),)])
S.add("test_tensor_hasattr", "hasattr_custom_attribute_present", _hasattr_tag,
      [lambda: (_tagged(torch.ones(2, 2)),)])


@S.case("test_tensor_call_obj_hasattr_view", (_x(6),))
def getattr_with_default_then_call(x):
    return getattr(x, "reshape", None)(2, 3)


@S.case("test_mro_type_tensor_no_source", (torch.ones(2),))
def mro_names_of_tensor_type(x):
    kind = type(torch.zeros(1))
    return x + 1, kind, [c.__name__ for c in kind.__mro__]


def _plus_three(t):
    return t + 3


_PARAM_WITH_FN = torch.nn.Parameter(torch.ones(1))
_PARAM_WITH_FN.plus_three = _plus_three


@S.case("test_tensor_dynamic_method", (torch.ones(1),))
def function_stored_on_a_parameter(x):
    return _PARAM_WITH_FN.plus_three(_PARAM_WITH_FN) * x


@S.case("test_known_tensor_methods_traced", (_x(4),), count=True, frames=1)
def chained_tensor_methods(x):
    return x.exp().sin()


def _patched_method(self):
    return self * 4


def _patch_tensor():
    torch.Tensor._ember_behaviour_times_four = _patched_method


@S.case("test_tensor_subclass_method_traced", (_x(4),), setup=_patch_tensor, fullgraph=False)
def method_added_to_tensor_class(x):
    return x._ember_behaviour_times_four() + 1


@S.case("test_unknown_tensor_method_graph_break", (_x(4),), fullgraph=False)
def unknown_tensor_method_raises(x):
    return x._no_such_method_anywhere() + 1


@S.case("test_shape_unpack", (_x(3, 5),))
def unpack_size_of_input(x):
    rows, cols = x.size()
    return x * cols - rows


_TV = typing.TypeVar("_TV")


@S.case("test_typing_dict", ({_TV: _x(3)},))
def typevar_as_dict_key(d):
    return d[_TV] * 2


@S.std("test_tensor__iter__")
def explicit_dunder_iter_of_tensor(x):
    rows = x.__iter__()
    for r in rows:
        r.mul_(2.0)
    return r


@S.std("test_tensor_iter")
def for_loop_over_tensor_rows(x):
    for r in x:
        r.sub_(1.0)
    return r


class SharedBuffers(torch.nn.Module):
    def forward(self, x):
        h = torch.zeros(2, x.size(0), 3).share_memory_()
        c = torch.ones(2, x.size(0), 3)
        return x + h.sum() + c.sum()


S.add("test_tensor_share_memory", "share_memory_of_new_tensor", None, [(_x(4, 5),)], module=SharedBuffers,
      fullgraph=False)


def _empty_checks(x, items):
    if len(items) == 0 and not items and items is not None:
        return x * 2
    return None


S.add("test_empty_list", "empty_list_and_tuple_truthiness", _empty_checks, [(_x(3), []), (_x(3), ())])


def _min_max_forms(func):
    def fn(a, b):
        vals = [a.shape[0] - 1, 4, a.shape[1] + 2]
        return b + (func(vals) + func(iter(vals)) + func(tuple(vals)) + func(*vals))
    return fn


S.std("test_min_max_over_iterable", name="min_over_list_iter_tuple_varargs")(_min_max_forms(min))
S.std("test_min_max_over_iterable", name="max_over_list_iter_tuple_varargs")(_min_max_forms(max))

_SCALARS = {"capture_scalar_outputs": True}


@S.case("test_bound_shape_checks", (torch.tensor(3), torch.ones(8)), config=_SCALARS)
def item_checked_then_used_as_slice_bound(x, y):
    n = x.item()
    torch._check(n >= 0)
    torch._check(n < y.shape[0])
    return y[:n]


@S.case("test_bound_shape_checks", (torch.arange(9).view(3, 3), torch.tensor(2)), config=_SCALARS)
def item_checked_then_used_as_index(x, idx):
    i = idx.item()
    torch._check(i >= 0)
    torch._check(i < x.size(0))
    return x[i]


@S.case("test_arange_length_with_float32_dtype", (torch.tensor([40]),), config=_SCALARS)
def arange_of_item_float32(x):
    n = x.item()
    r = torch.arange(n, dtype=torch.float32)
    if r.size(0) == n:
        return r * 2
    return r


@S.case("test_torch_check", (torch.tensor([3]),), (torch.tensor([5]),), config=_SCALARS, count=True, frames=1)
def item_checked_nonnegative_one_graph(x):
    n = x.item()
    torch._check(n >= 0)
    return torch.arange(0, n)


@S.case("test_torch_check_symbolic_shape_rel", (torch.tensor([3]),), (torch.tensor([4]),), config=_SCALARS,
        count=True, frames=1)
def checks_on_static_shape_relations(x):
    n = x.item()
    torch._check(x.shape[0] == 1)
    torch._check(x.shape[0] != 2)
    torch._check(x.shape[0] > 0)
    torch._check(x.shape[0] <= 3)
    return torch.arange(0, n)


def _check_lambda_message(x):
    torch._check(x.shape[0] > 2, lambda: "too small")
    return x * 2


def _check_no_message(x):
    torch._check(x.shape[0] > 2)
    return x - 2


_GLOBAL_LIMIT = 2


def _check_global_in_message(x):
    torch._check(x.shape[0] > _GLOBAL_LIMIT, lambda: f"{_GLOBAL_LIMIT} is the limit")
    return x + 2


for _label, _fn in [("lambda_message", _check_lambda_message), ("no_message", _check_no_message),
                    ("global_in_message", _check_global_in_message)]:
    S.add("test_check_compiles_when_predicate_true_and_message_has_no_closure", f"torch_check_true_{_label}",
          _fn, [(_x(4),)])
    S.add("test_check_compiles_when_predicate_true_and_message_None", f"torch_check_true_{_label}_dynamic",
          _fn, [(_x(4),)], dynamic=True)


class PrefixedAttrs:
    def __setattr__(self, name, value):
        super().__setattr__("p_" + name, value)

    def __getattr__(self, name):
        return self.__dict__["p_" + name]


def _prefixed_with_x():
    obj = PrefixedAttrs()
    obj.x = _x(4)
    return (obj,)


@S.case("test_user_defined_setattr1", _prefixed_with_x,
        post=lambda out, obj: (sorted(vars(obj)), obj.y))
def custom_setattr_on_argument(obj):
    obj.y = obj.x * 2


@S.case("test_user_defined_setattr2", (_x(4),), post=lambda out, x: (sorted(vars(out)), out.x, out.y))
def custom_setattr_on_new_object(x):
    obj = PrefixedAttrs()
    obj.x = x
    obj.y = obj.x - 1
    return obj


@S.case("test_tensor_setattr_getset_descriptor", lambda: (torch.ones(3, dtype=torch.cfloat),), fullgraph=False)
def assign_real_part_of_complex(x):
    x.real = 4
    return x * 2


@S.case("test_newly_constructed_tensor_attr_mutation", (torch.ones(3),),
        post=lambda out, x: (out, out.grad, out.note))
def attributes_set_on_new_tensor(x):
    y = x * 5
    y.grad = x
    y.note = 17
    return y


@S.case("test_input_tensor_custom_attr_mutation", lambda: (torch.ones(3), True),
        post=lambda out, x, flag: (out, x.offload_me))
def attribute_set_on_input_tensor(x, flag):
    x.offload_me = flag
    return x - 1


@S.case("test_intermediate_tensor_custom_attr_mutation", (torch.ones(3), False),
        post=lambda out, x, flag: (out, out.offload_me))
def attribute_set_on_intermediate(x, flag):
    y = x * 3
    y.offload_me = flag
    return y


def closure_adder(v):
    def add(t):
        return t + v
    return add


def _apply_closure(x, f):
    return f(x * 2) - 1


S.add("test_closure_recompiles", "closures_with_int_then_tensor_cells", _apply_closure,
      [(_x(4), closure_adder(5)), (_x(4), closure_adder(5)), (_x(4), closure_adder(_x(4))),
       (_x(4), closure_adder(_x(4) + 1))], count=True, frames=2)

test_behaviour = S.pytest_function()
