"""Behaviours of torch's ``test/dynamo/test_functions.py``, in our own programs: Python functions,
builtins, containers and standard-library helpers inlined into one graph (most torch tests here are
``make_test``: fullgraph, random 10x10 inputs, graph count compared with torch.compile's)."""
from __future__ import annotations

import collections
import functools
import itertools
import math
import operator
import typing

import numpy as np
import torch
import torch.nn.functional as F

from behaviour_harness import Suite, fresh

SUITE = S = Suite("test_functions")

ONES = torch.ones(10, 10)
LINEAR = torch.nn.Linear(10, 10)
FLAG_ON = True
COUNTER = [0]


def offset_diff(p, q):
    return p - q + (2.0 * 1.5)


def subtract_when(p, q, enabled=True):
    if enabled:
        return p - q
    return q - p


class Holder:
    value = 1


# -- jit annotations and caches inlined ----------------------------------------------------------
@torch.jit.script_if_tracing
def _shift_traced(x):
    return x + 0.5


@torch.jit.ignore
def _shift_ignored(x):
    return x - 1.5


@torch.jit.unused
def _shift_unused(x):
    return x * 2.5


@S.std("test_inline_jit_annotations")
def jit_decorated_helpers_inline(x):
    return _shift_unused(_shift_ignored(_shift_traced(x)))


@torch.jit.script_if_tracing
def _cos_scaled(p, q, bias=0.25):
    return torch.cos(p * q) + bias


@S.std("test_inline_script_if_tracing_fn_with_default_args")
def script_if_tracing_default_argument(a, b):
    return _cos_scaled(a, b)


@functools.lru_cache
def _cached_sin(p, k, _unused=None):
    return torch.sin(p * k)


@S.std("test_inline_lru_cache_fn_with_default_args")
def lru_cache_wrapped_function_inlines(a, b):
    return _cached_sin(a, 3, b)


# -- arithmetic and in-place methods -------------------------------------------------------------
@S.std("test_add")
def binary_plus(x, y):
    return y + x


@S.std("test_add_")
def inplace_add_alpha_on_copy(a, b):
    c = a.clone()
    return c.add_(b, alpha=2.5)


@S.std("test_addcdiv")
def addcdiv_with_value_kwarg(a, b, c):
    return torch.addcdiv(a, b, c.abs() + 1, value=0.5)


@S.std("test_addcdiv_")
def addcdiv_inplace_with_value(a, b, c):
    d = a.clone()
    return d.addcdiv_(b, c.abs() + 1, value=-3.0)


@S.std("test_is_not_null")
def is_not_none_checks(a, b):
    if a is not None and b is not None:
        return a * b
    return None


@S.case("test_foreach_lerp_", lambda: ([torch.full((2, 2), 3.0), torch.full((2, 2), 1.5)],
                                       [torch.ones(2, 2), torch.zeros(2, 2)], torch.tensor(0.25)),
        count=True, frames=1)
def foreach_lerp_inplace_tensor_weight(xs, ys, w):
    return torch._foreach_lerp_(xs, ys, w)


@S.case("test_broadcast_foreach_pow", (torch.tensor(0.5), [torch.tensor(2.0), torch.tensor(-1.5)]),
        count=True, frames=1)
def foreach_pow_scalar_tensor_base(base, exps):
    return torch._foreach_pow(base, exps)


@S.case("test_addcmul_", (torch.ones(2, 2), torch.ones(2, 2) * 3, torch.arange(4.0).view(2, 2), torch.tensor(0.7)),
        count=True, frames=1)
def addcmul_inplace_tensor_value(x, y, z, s):
    return x.addcmul_(y, z, value=s)


# -- functools / itertools -----------------------------------------------------------------------
_clamp_unit = functools.partial(torch.clamp, min=-0.5, max=0.5)


@S.std("test_functools_partial")
def module_level_partial_of_torch_fn(a, b):
    return _clamp_unit(a * b)


@S.std("test_itertools_product")
def product_of_tensors_and_ints(a, b):
    acc = b
    for t, k in itertools.product([a, b], [2, 3]):
        acc = acc - t * k
    return acc


@S.std("test_itertools_chain")
def chain_of_tensors_and_ints(a, b):
    acc = a * 0
    for v in itertools.chain([b, a], [4, 5]):
        acc = acc + v
    return acc


@S.std("test_itertools_chain_from_iterable")
def chain_from_iterable_mixed(a, b):
    acc = b
    for v in itertools.chain.from_iterable([[a], [b, 7]]):
        acc = acc * 0.5 + v
    return acc


@S.std("test_itertools_combinations")
def combinations_build_shapes(a, b):
    out = []
    for pair in itertools.combinations((2, 3, 1), 2):
        out.append(torch.zeros(pair) + 1)
    return out


@S.std("test_zip_longest")
def zip_longest_with_fillvalue(x):
    nums = [1, 2, 3]
    words = ["p", "q"]
    flags = [False, True, True, False]
    return x.cos() - 1, list(itertools.zip_longest(nums, words, flags, fillvalue=-1))


@S.std("test_islice_chain")
def islice_over_chain(a, b):
    first = [a * 2, a * 3]
    second = [b + 1, b + 2]
    p, q = list(itertools.islice(itertools.chain(first, second), 1, 3))
    r = next(itertools.islice(second, 1, None))
    return p + q * r


# -- comparisons of objects and classes ----------------------------------------------------------
@S.std("test_obj_eq")
def instance_equality_default(a, b):
    v = a * b
    if Holder() == None:  # noqa: E711
        return v - 100
    if Holder() != None:  # noqa: E711
        v = v.cos()
    if Holder() == Holder():
        return v - 200
    if Holder() != Holder():
        return v * 2
    return v


@S.std("test_cls_eq")
def class_equality(a, b):
    v = a - b
    if Holder == None:  # noqa: E711
        return v - 100
    if Holder != Holder:
        return v - 200
    if Holder == Holder:
        return v.exp()
    return v


@S.std("test_obj_is")
def instance_identity(a, b):
    v = a + 2 * b
    if Holder() is None:
        return v
    if Holder() is Holder():
        return v - 1
    if Holder() is not Holder():
        return v.tanh()
    return v + 3


@S.std("test_cls_is")
def class_identity(a, b):
    v = a / (b.abs() + 1)
    if Holder is None:
        return v
    if Holder is not Holder:
        return v - 5
    if Holder is Holder:
        return v.sigmoid()
    return v


@S.std("test_cls_hasattr")
def hasattr_on_class(x, y):
    if hasattr(Holder, "value"):
        x = x * 3
    if hasattr(Holder, "missing"):
        x = x * 5
    return x + y


# -- numpy / dtype information -------------------------------------------------------------------
@S.std("test_np_iinfo")
def numpy_iinfo_constant(a):
    return a - np.iinfo(np.int8).min


@S.std("test_np_finfo")
def numpy_finfo_constant(a):
    return a * np.finfo(np.float16).eps


@S.std("test_finfo")
def torch_finfo_and_iinfo(a, b):
    if torch.iinfo(torch.int16).bits == 16:
        return b + torch.finfo(a.dtype).eps
    return b


# -- constants -----------------------------------------------------------------------------------
@S.std("test_constant1")
def float_constant_in_expression(a, b, c):
    return a * b - c + 2.5


@S.std("test_constant2")
def int_constant_in_expression(a, b, c):
    return (a - b) * c - 7


@S.std("test_constant3")
def folded_local_constants(a):
    p, q, r = 4, 6, 2
    return a + (p * q - r)


@S.std("test_constant4")
def constant_branch(a, b):
    lo, hi = 3, 9
    if lo > hi:
        return a * b
    return a / (b.abs() + 1)


# -- calls: globals, methods, indirection, *args -------------------------------------------------
from torch import mul as _global_mul  # noqa: E402


@S.std("test_globalfn")
def imported_torch_function(a, b):
    return _global_mul(a, b)


@S.std("test_viatorch")
def torch_namespace_function(a, b):
    return torch.mul(b, a)


@S.std("test_viamethod")
def tensor_method(a, b):
    return b.mul(a)


@S.std("test_indirect1")
def bound_method_in_local(a, b):
    m = b.div
    return m(a.abs() + 1)


@S.std("test_indirect2")
def bound_method_star_args(a, b):
    m = a.add
    extra = (b,)
    return m(*extra)


@S.std("test_indirect3")
def bound_method_star_args_and_kwargs(a, b):
    m = a.add
    extra = (b,)
    named = {"alpha": 3}
    return m(*extra, **named)


@S.std("test_methodcall1")
def call_module_function(a, b, c):
    return offset_diff(b, c) + a


@S.std("test_methodcall2")
def call_module_function_kwargs_only(a, b):
    return offset_diff(q=a, p=b) * 2


@S.std("test_methodcall3")
def call_module_function_mixed_args(a, b):
    return offset_diff(b, q=2.0) - a


@S.std("test_inline_with_default")
def call_with_default_argument(a, b, c):
    return subtract_when(a, b) + c


@S.std("test_tuple1")
def star_call_from_tuple(a, b):
    pair = (b, a)
    return _global_mul(*pair)


@S.std("test_tuple2")
def star_call_from_list(a, b):
    pair = [a, b]
    return torch.sub(*pair)


@S.std("test_inner_function")
def nested_function_def(x):
    def twice(v):
        return torch.mul(v, 2)

    return twice(x) + 1


@S.std("test_globalvar")
def global_tensor_read(a, b):
    return a * ONES - b


@S.std("test_globalmodule")
def global_module_call(x):
    return LINEAR(x).relu()


@S.std("test_load_global_bool")
def global_bool_branch(x):
    if FLAG_ON:
        return x.abs()
    return x


@S.std("test_fn_with_self_set")
def functional_with_builtin_self(a, b):
    return F.max_pool2d(torch.unsqueeze(a, 0) + torch.unsqueeze(b, 0), kernel_size=3, padding=1)


@S.std("test_import1")
def import_inside_function(x, y):
    import torch as tt
    from torch import add as plus

    return plus(tt.mul(x, y), x)


@S.std("test_module_constant")
def loop_bound_from_module_attribute(x, y):
    out = x
    for _ in range(torch._dynamo.testing.three):
        out = out * y
    return out


# -- number methods ------------------------------------------------------------------------------
def _scale_if_integral(t, m):
    return t * 3 if m.is_integer() else t - 1


for _m in (2.0, 2.25):
    S.add("test_is_integer", f"float_is_integer_{str(_m).replace('.', '_')}", _scale_if_integral,
          [(torch.tensor([2.0]), _m)])


def _number_method_case(method):
    def fn(t, m):
        return t * 2 if getattr(m, method)() else t + 1
    return fn


for _method, _kind in [("as_integer_ratio", int), ("bit_length", int), ("conjugate", int),
                       ("as_integer_ratio", float), ("conjugate", float), ("hex", float), ("is_integer", float)]:
    for _v in (0, 1, 2.5):
        S.add("test_number_method", f"number_method_{_method}_{_kind.__name__}_{str(_v).replace('.', '_')}",
              _number_method_case(_method), [(torch.tensor([3]), _kind(_v))])


# -- tensors: devices, slices, shapes ------------------------------------------------------------
@S.std("test_device_constant")
def tensor_on_explicit_device(a):
    return a - torch.zeros(1, device=torch.device("cpu")) + 1


@S.std("test_is_in_onnx_export")
def onnx_export_flag_false(x, y):
    if torch.onnx.is_in_onnx_export():
        return x * 0
    return y * 2


@S.std("test_is_fx_tracing")
def fx_tracing_flag_false(x, y):
    if torch.fx._symbolic_trace.is_fx_tracing():
        return x * 0
    return y - 2


@S.std("test_listarg1")
def cat_list(a, b):
    return torch.cat([b, a, b])


@S.std("test_listarg2")
def cat_tuple_dim_kwarg(a, b):
    return torch.cat((a, b), dim=1)


@S.std("test_listarg3")
def cat_all_kwargs_from_dict(a, b):
    named = {"tensors": [a, b], "dim": 1}
    return torch.cat(**named)


@S.std("test_listarg4")
def cat_keyword_tensors(a, b):
    return torch.cat(tensors=(b, a), dim=1)


@S.std("test_listarg5")
def cat_star_args_and_kwargs(a, b):
    pos = [[a, b]]
    named = {"dim": -1}
    return torch.cat(*pos, **named)


class _Keeper:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items = self.items[-2:]
        self.items.append(x)
        return torch.cos(x)


@S.case("test_list_slice", lambda: (_Keeper(), torch.ones(3)), fullgraph=False)
def method_rebinds_attribute_list_slice(keeper, x):
    out = keeper.push(x)
    keeper.push(x + 1)
    keeper.push(x + 2)
    return out, len(keeper.items)


@S.std("test_slice1")
def index_row(a):
    return a[3]


@S.std("test_slice2")
def slice_head(a):
    return a[:4]


@S.std("test_slice3")
def slice_tail(a):
    return a[6:]


@S.std("test_slice4")
def slice_middle(a):
    return a[3:7]


@S.std("test_slice5")
def slice_step(a):
    return a[1::3]


@S.std("test_slice6")
def unsqueeze_then_slice(a):
    return torch.unsqueeze(a, 1)[:, :, 4:]


@S.std("test_range1")
def tensor_from_range_of_size(a):
    return torch.tensor(range(a.size(1)))


@S.std("test_range2")
def loop_over_range_of_size(x, y):
    out = x - y
    for _ in range(x.size(1) - 7):
        out = out * 0.5 + y
    return out


@S.std("test_unpack1")
def unpack_slices(a):
    p, q = a[:3], a[7:]
    return p * q


@S.std("test_unpack2")
def unpack_list(a):
    pieces = [a[:4], a[6:]]
    p, q = pieces
    return p + q


@S.std("test_unpack3")
def unpack_tuple(a):
    pieces = (a[2:5], a[5:8])
    p, q = pieces
    return p / (q.abs() + 1)


@S.std("test_return_tuple1")
def return_tuple_with_inputs(a, b):
    return (a * b, a, b - a, b)


@S.std("test_return_tuple2")
def return_tuple_result_and_input(x):
    return (torch.mul(x, 3), x)


@S.std("test_transpose_for_scores")
def view_with_size_tuple_concat(x):
    shape = x.size()[:-1] + (5, 2)
    return x.view(*shape).permute(1, 0, 2)


@S.std("test_len_tensor")
def len_of_tensor(x):
    return x * len(x)


@S.std("test_len_constant_list")
def len_of_literal_list(x):
    return x + len([4, 5, 6, 7])


@S.std("test_len_constant_dict")
def len_of_literal_dict(x):
    return x - len({"p": 1, "q": 2})


@S.std("test_len_constant_misc_iterables")
def len_of_tuple_and_string(x):
    return x + len((7, 8)) * len("hello")


@S.std("test_tensor_len")
def len_and_dunder_len(a, b):
    return a * len(b) - b.__len__()


@S.std("test_is_floating_point")
def is_floating_point_function_forms(x):
    y = x * 2
    return torch.is_floating_point(y), torch.is_floating_point(input=y)


@S.std("test_dtype")
def dtype_equality(x):
    if x.dtype == torch.float32:
        return x - 4
    return None


@S.std("test_get_default_dtype")
def default_dtype_compare(x):
    if x.dtype == torch.get_default_dtype():
        return x * 2
    return x


@S.std("test_get_autocast_gpu_dtype")
def autocast_gpu_dtype_cast(x):
    return x.to(torch.get_autocast_gpu_dtype())


@S.std("test_is_any_autocast_enabled")
def any_autocast_enabled_false(x):
    if torch._C._is_any_autocast_enabled():
        return x * 0
    return x + 3


@S.std("test_is_checkpoint_valid")
def checkpoint_valid_flag(x):
    if torch.autograd._is_checkpoint_valid():
        return x - 2
    return x


@S.std("test_promote_types")
def promote_types_compare(x):
    if x.dtype == torch.promote_types(torch.int64, torch.float32):
        return x * 5
    return x


@S.std("test_cublas_allow_tf32")
def backend_flag_branch(x):
    if torch.backends.cuda.matmul.allow_tf32:
        return x.cos() * 2
    return x.sin() + 2


@S.std("test_get_calculate_correct_fan")
def init_fan_helper(x):
    return x - torch.nn.init._calculate_correct_fan(x, "fan_out")


@S.std("test_is_complex")
def torch_is_complex(x):
    if torch.is_complex(x):
        return x * 0
    return x * 2


@S.std("test_tensor_is_complex")
def tensor_is_complex_method(x):
    return x + 1 if not x.is_complex() else x


@S.std("test_get_privateuse1_name")
def privateuse1_backend_name(x):
    if torch._C._get_privateuse1_backend_name() == "privateuseone":
        return x.neg()
    return x


@S.std("test_device")
def is_cuda_false(x):
    if not x.is_cuda:
        return x * 7
    return None


@S.std("test_tensor_type")
def type_string_roundtrip(a, b):
    half = a.to(torch.float16)
    return b.type(half.type())


@S.std("test_tensor_type3")
def type_with_tensor_class(a, b):
    h = a.type(torch.DoubleTensor)
    return b.type(h.type())


@S.std("test_tensor_type4")
def type_with_class_name_string(a, b):
    h = a.type("torch.DoubleTensor")
    return b.type(h.type()) + 1


@S.std("test_tensor_element_size")
def element_size_branch(a):
    if a.element_size() > 2:
        return a * a.element_size(), a + 1
    return a, a


@S.std("test_ndim")
def ndim_dim_ndimension(x):
    if x.ndim == 2 and x.dim() == 2 and x.ndimension() == 2:
        return x * 2
    return None


@S.std("test_T")
def transpose_property(x):
    return torch.zeros_like(x.T) + x.T


@S.std("test_mT")
def matrix_transpose_property(x):
    return x.mT * 2


@S.std("test_is_sparse")
def is_sparse_false(x):
    return x - 1 if not x.is_sparse else x


@S.std("test_shape1")
def shape_index_compare(x):
    if x.shape[1] == 10:
        return x * 3
    return None


@S.std("test_shape2")
def size_call_compare(x):
    if x.size(0) == 10:
        return x - 3
    return None


@S.std("test_del")
def del_locals(a, b):
    c = a * 2
    d = c - 1
    del c, a
    return d * b


@S.std("test_chunks1")
def asserts_on_shapes(x):
    half = 5
    assert x.shape[1] % half == 0
    assert x.shape[1] // half == 2, "two halves"
    return x[:, :half] * x[:, half:]


@S.std("test_is_quantized")
def is_quantized_false(a, b):
    if not a.is_quantized:
        return a - b
    return None


@S.std("test_torch_size_hasattr")
def size_has_no_fields(x):
    return x + 2 if hasattr(x.shape, "_fields") else x - 2


# -- callable(), float(), strings ----------------------------------------------------------------
@S.std("test_callable_lambda")
def callable_of_lambda(x):
    return x + 1 if callable(lambda v: v) else x


@S.std("test_callable_torch")
def callable_of_torch_function(x):
    return x * 2 if callable(torch.relu) else x


@S.std("test_callable_builtin")
def callable_of_builtin(x):
    return x - 1 if callable(max) else x


class _WithCall:
    def __call__(self):
        return 1


class _WithoutCall:
    pass


def _callable_branch(x, arg):
    if callable(arg):
        return x * 2
    return x + 1


for _label, _arg in [("instance_with_call", _WithCall()), ("instance_without_call", _WithoutCall()),
                     ("int", 1), ("float", 1.5), ("bool", False), ("tensor", torch.ones(1)),
                     ("list", [1, 2]), ("tuple", (3, 4)), ("class", _WithoutCall)]:
    S.add("test_callable_class" if "instance" in _label or _label in ("int", "float", "bool", "tensor")
          else "test_callable_list", f"callable_of_{_label}", _callable_branch, [(torch.arange(4.0), _arg)])


@S.std("test_float")
def float_of_literal_and_string(x):
    v = float(2.5)  # noqa: UP018
    v -= float("0.5")
    return x * v


@S.std("test_startswith")
def string_methods_on_constants(a, b):
    y = a - b
    if "ember-test".startswith("ember") and "behaviours" in offset_diff.__module__:
        y = y * 2
    return y


@S.std("test_fstrings1")
def fstring_float_format(a, b):
    v = 2.718
    text = f"{v:.1f} units"
    if text.startswith("2.7"):
        return a * b
    return None


@S.std("test_fstrings2")
def fstring_of_shape(x):
    text = f"{x.shape[1]} wide"
    if text.startswith("10"):
        return x - 1
    return None


@S.std("test_fstrings3")
def fstring_of_class_name(x):
    text = f"{type(x).__name__}!"
    if text.startswith("Tensor"):
        return x * 4
    return None


@S.std("test_fstrings4")
def fstring_contains(x):
    text = f"size {x.shape[0]}"
    return x + 1 if "10" in text else x


@S.std("test_fstrings5")
def fstring_concat_contains(x):
    text = f"{x.shape[1]}"
    return x * 2 if "10" in ("n=" + text) else x


@S.std("test_fstrings6")
def fstring_of_size_sum(x):
    text = f"{x.shape[0] * x.shape[1]}"
    return x - 1 if "100" in text else x


# -- lists and tuples ----------------------------------------------------------------------------
@S.std("test_pop")
def list_append_extend_pop(a, b):
    items = [b, a]
    items.append(b * 2)
    items.extend([a - 1, a * b])
    items.pop()
    items.pop(0)
    items.pop(1)
    p, q = items
    return p * q


@S.std("test_list_convert")
def list_tuple_list(a, b):
    items = [a * 2, b]
    items = tuple(items)
    extra = a - 1
    items = list(items)
    p, q = items
    return p + q * extra


@S.std("test_list_add")
def tuple_plus_empty_tuple(a, b):
    both = (b, a) + ()
    return both[0] * both[1]


@S.std("test_list_index_with_constant_tensor")
def list_index_by_scalar_tensor(a, b):
    items = [a, b, a * 2, b * 2]
    return items[torch.as_tensor(3)]


@S.std("test_tuple_iadd")
def tuple_inplace_concat(a, b):
    out = (b,)
    out += (a * b, a)
    return out


@S.std("test_unpack_ex1")
def star_unpack_tail(x):
    vals = (x, x * 2, x * 3, x * 4)
    p, q, *rest = vals
    return p + q * rest[1]


@S.std("test_unpack_ex2")
def star_unpack_head(x):
    vals = (x, x - 1, x - 2, x - 3)
    *head, p, q = vals
    return head[1] * p - q


@S.std("test_unpack_ex3")
def star_unpack_middle(x):
    vals = (x + 1, x + 2, x + 3, x + 4)
    p, *mid, q = vals
    return mid[0] * mid[1] - p * q


@S.std("test_const_tuple_add1")
def empty_tuples_around(x):
    vals = (x * 2, x * 3)
    vals = () + vals + () + ()
    return vals[0] - vals[1]


@S.std("test_const_tuple_add2")
def none_tuples_around(x):
    vals = (x, x * 5)
    vals = (None, None) + vals + (None,)
    return vals[2] + vals[3]


@S.std("test_list_truth")
def truth_of_nonempty_list(a, b):
    if [0]:
        return a * b
    return a


@S.std("test_list_reversed")
def next_of_reversed(a, b):
    items = [a * 1, a * 2, a * 3]
    return b + next(iter(reversed(items)))


@S.std("test_list_sorted1")
def sorted_ints(x):
    vals = [5, -2, 9, 0]
    return x * 2, sorted(vals), sorted(vals, reverse=True)


@S.std("test_list_sorted2")
def sorted_tuples_with_key(x):
    rows = [("b", 3, 1.5), ("a", 3, 0.5), ("c", 1, 2.5)]
    return (x - 1, sorted(rows), sorted(rows, key=lambda r: r[2]),
            sorted(rows, key=lambda r: r[1], reverse=True))


@S.std("test_tuple_sorted")
def sorted_tuple(x):
    vals = (8, 1, 4)
    return x + 1, sorted(vals), sorted(vals, reverse=True)


@S.std("test_dict_sorted")
def sorted_dict_keys(x):
    table = {7: "x", 2: "y", 5: "z"}
    return x * 3, sorted(table), sorted(table, reverse=True)


@S.std("test_list_clear")
def list_clear_then_append(a, b):
    items = [a * 2, b * 2]
    items.clear()
    items.append(a - b)
    return items


@S.std("test_not_list", frames=0)
def not_of_nonempty_list(a):
    return not [a]


@S.std("test_build_list_unpack")
def cat_of_two_generators(a, b):
    up = (t * 2 for t in (a, b))
    down = (t / 2 for t in (b, a))
    return torch.cat([*up, *down], dim=0)


@S.std("test_list_compare_polyfill")
def tuple_ordering_comparisons(x):
    for p, q, w in [((1, 2), (1, 2), 1.5), ((2, 1), (1, 2), 2.5), ((1,), (1, 2), 3.5),
                    ((3, 3, 3), (3, 3), 4.5), ((0, 9), (1, 0), 5.5)]:
        if p == q:
            x = x + w
        if p != q:
            x = x - w
        if p < q:
            x = x * 2
        if p >= q:
            x = x + 2 * w
        if p > q:
            x = x / 2
        if p <= q:
            x = x - 3 * w
    return x


@S.std("test_tuple_contains")
def membership_in_string_tuples(a, b):
    left = ("u", "v", "w")
    right = ("x", "y")
    if "v" in left and "u" not in right:
        return a * b
    return a


# -- sum / min / max / map / reduce ------------------------------------------------------------
@S.std("test_min_max")
def min_max_of_scalar_tensors(a, b):
    c = a * b
    p = a.mean()
    q = b.mean()
    p = max(min(p, 0.5), -0.5)
    q = min(0.5, max(-0.5, q))
    return min(p, q) - max(p, q) + c


@S.std("test_symbool_to_int")
def sum_of_size_comparisons(x):
    if sum(d == 10 for d in x.size()) == 2:
        return x * 2
    return x


@S.std("test_map_sum")
def sum_of_map_lambda(a, b, c, d):
    return sum(map(lambda t: t * 2, [d, c, b, a]))


@S.std("test_sum")
def sum_of_tensor_list(a, b, c, d):
    return sum([d, a, c, b])


@S.std("test_sum_with_start_arg")
def sum_with_start_positional(a, b, c, d):
    return sum([a, b, c], d)


@S.std("test_sum_with_start_kwarg")
def sum_with_start_keyword(a, b, c, d):
    return sum([c, d], start=b * a)


@S.std("test_sum_shortcut", frames=0)
def sum_of_numbers_no_graph():
    return sum([1, 2.5, 3, 0.5])


@S.std("test_sum_shortcut_with_start_arg", frames=0)
def sum_of_numbers_with_start():
    return sum([4, 0.25, 1], 100)


@S.std("test_sum_shortcut_with_start_kwarg", frames=0)
def sum_of_numbers_with_start_keyword():
    return sum([2.0, 3], start=-1.5)


@S.std("test_reduce")
def reduce_mul(a, b, c, d):
    return functools.reduce(operator.mul, [a, b, c, d])


@S.std("test_reduce_with_initial")
def reduce_sub_with_initial(a, b, c, d):
    return functools.reduce(operator.sub, [b, c, d], a)


@S.std("test_reduce_with_single", frames=None)  # torch 2.13 compiles 1 graph; the test file's torch 0
def reduce_single_element(x):
    return functools.reduce(lambda p, q: [p, q], [x])


@S.std("test_reduce_with_single_with_initial", frames=None)  # torch 2.13 compiles 1 graph; the test file's torch 0
def reduce_single_with_initial(x, y):
    return functools.reduce(lambda p, q: [q, p], [x], y)


@S.std("test_reduce_with_none_initial", frames=None)  # torch 2.13 compiles 1 graph; the test file's torch 0
def reduce_with_none_initial(x):
    return functools.reduce(lambda p, q: (q, p), [x], None)


# -- sets ----------------------------------------------------------------------------------------
@S.std("test_set_update_bytecode")
def set_literal_isinstance(x):
    fruits = {"fig", "kiwi", "lime"}
    return x + 1 if isinstance(fruits, set) else x


@S.std("test_set_update_list_with_duplicated_items")
def set_from_star_lists(x):
    p = ["a", "b", "a"]
    q = ["c", "b"]
    return x * 2 if len({*p, *q}) == 3 else x


@S.std("test_set_contains")
def set_membership_branches(a, b):
    letters = set(["p", "q"])
    u = a + b if "p" in letters else a - b
    v = a * b if "z" in letters else a / (b.abs() + 1)
    return u, v


_LEFT = {"red", "green"}
_RIGHT = {"blue", "green"}


@S.std("test_set_isdisjoint")
def global_sets_isdisjoint(a):
    return a * 2 if _LEFT.isdisjoint(_RIGHT) else a - 2


@S.std("test_set_intersection")
def set_intersection_membership(a, b):
    common = {"x", "y", "z"}.intersection({"z", "w"})
    return (a + b if "z" in common else a - b), (a * b if "x" in common else a)


@S.std("test_set_union")
def set_union_membership(a, b):
    joined = {"x", "y"}.union({"z"})
    return (a + b if "z" in joined else a - b), (a * b if "w" in joined else a)


@S.std("test_set_difference")
def set_difference_membership(a, b):
    rest = {"x", "y", "z"}.difference({"y"})
    return (a + b if "y" in rest else a - b), (a * b if "x" in rest else a)


class _Keys(collections.abc.KeysView):
    def __init__(self, keys):
        self.keys = keys

    def __iter__(self):
        yield from self.keys

    def __len__(self):
        return len(self.keys)

    def __contains__(self, item):
        return item in self.keys


_KEYS = _Keys([4, 4, 5, 6])


@S.case("test_set_keys_view", (torch.arange(3.0),))
def set_of_user_keysview(x):
    return x * len(set(_KEYS))


_SMALL_SET = {1, 2}


@S.case("test_constant_set", (torch.arange(3.0),), count=True,
        setup=lambda: (_SMALL_SET.clear(), _SMALL_SET.update({1, 2})))
def len_of_global_set(x):
    return torch.sin(x) * len(_SMALL_SET)


_GROWING = {1, 2}


@S.case("test_set_add", (torch.arange(3.0),), setup=lambda: (_GROWING.clear(), _GROWING.update({1, 2})),
        state=lambda: sorted(_GROWING))
def add_to_global_set(x):
    _GROWING.add(7)
    return torch.cos(x) * len(x)


# -- namedtuples ---------------------------------------------------------------------------------
@S.std("test_namedtuple")
def namedtuple_made_inside(a, b):
    Pair = collections.namedtuple("Pair", ["left", "right", "total"])
    p = Pair(a, b, a * b)
    return Pair(p.right, p[0], p.total - a)


@S.std("test_namedtuple_defaults")
def namedtuple_with_defaults(a, b):
    Trio = collections.namedtuple("Trio", ["p", "q", "r"], defaults=(0, 2, None))
    t = Trio(a, r=b)
    return Trio(t.p * t.q, t[2], t.r - a)


class Span(typing.NamedTuple):
    lo: torch.Tensor
    hi: torch.Tensor

    def width(self):
        return self.hi - self.lo

    @staticmethod
    def tag():
        return 7

    @classmethod
    def kind(cls):
        return cls.__name__


@S.std("test_namedtuple_user_methods")
def typed_namedtuple_methods(a, b):
    s = Span(a, b)
    return s.width(), s.tag(), s.kind()


@S.std("test_namedtuple_hasattr")
def typed_namedtuple_duck_check(a, b):
    s = Span(a, b)

    def looks_named(obj):
        return isinstance(obj, tuple) and hasattr(obj, "_fields") and hasattr(obj, "_asdict")

    return a * b if looks_named(s) else a


# -- dicts ---------------------------------------------------------------------------------------
class OrderedSub(collections.OrderedDict):
    pass


@S.std("test_dict_copy")
def dict_call_with_dict(x):
    return dict({"k": x * 2})


@S.std("test_dict_keys")
def dict_keys_view_is_live(x):
    d = {1: x}
    keys = d.keys()
    d[2] = x * 2
    other = {1: "a", 2: "b"}
    return 1 in keys, 2 in keys, 3 in keys, other.keys() == keys


@S.std("test_dict_values")
def dict_values_view_is_live(x):
    d = {"a": x}
    vals = d.values()
    d["a"] = x - 1
    d["b"] = x + 1
    d["c"] = x
    return len(vals)


def _setdefault_case(factory, key, default, expect_none=False):
    def fn(x):
        d = factory()
        d["a"] = 1
        d["b"] = 2
        if default is None:
            d.setdefault(key)
        else:
            d.setdefault(key, default)
        hit = d[key] is None if expect_none else d[key] == (default if key not in ("a", "b") else 1)
        return x + 1 if hit else x - 1
    return fn


for _label, _factory in [("dict", dict), ("defaultdict", lambda: collections.defaultdict.fromkeys("a", "b"))]:
    S.std(f"test_{'dict' if _label == 'dict' else 'defaultdict'}_setdefault1",
          name=f"{_label}_setdefault_existing")(_setdefault_case(_factory, "a", 10))
    S.std(f"test_{'dict' if _label == 'dict' else 'defaultdict'}_setdefault2",
          name=f"{_label}_setdefault_missing")(_setdefault_case(_factory, "c", 10))
    S.std(f"test_{'dict' if _label == 'dict' else 'defaultdict'}_setdefault3",
          name=f"{_label}_setdefault_missing_none")(_setdefault_case(_factory, "c", None, expect_none=True))


@S.std("test_dict_update_kwargs")
def dict_update_with_kwargs(x):
    d = {"p": 3}
    d.update(q=5)
    return x * d["p"] - d["q"]


_ALIASED = collections.OrderedDict({"w": 3})
_ALIAS = _ALIASED


@S.case("test_dict_id_guard", (torch.arange(4.0),))
def iterate_aliased_global_dicts(x):
    for k in _ALIASED:
        x = x * _ALIASED[k] + _ALIAS[k]
    return x


@S.std("test_dict_kwargs")
def dict_from_kwargs(x):
    return dict(first=x * 2, second=x - 2)


@S.std("test_ordered_dict_kwargs")
def ordered_dict_from_kwargs(x):
    return collections.OrderedDict(only=torch.zeros(3) + 1)


@S.std("test_custom_dict_kwargs")
def ordered_dict_subclass_from_kwargs(x):
    return OrderedSub(item=torch.ones(2) * 3)


@S.std("test_return_dict")
def return_dict_with_shared_values(x, y):
    vals = [x * y, y, True]
    return {"p": x, "vals": vals, "q": y, "again": vals}


@S.std("test_return_dict2")
def return_dict_built_up(x, y):
    out = {"p": x}
    out["vals"] = [x - y]
    out["q"] = y
    out["vals"].append(None)
    return out


@S.std("test_dict_ops")
def dict_get_pop_update(a, b):
    d = {"p": a * 2, "q": b - 1}
    assert d.get("nothing") is None
    v = d.pop("q") * d.get("p") + d.get("gone", 5) - d.pop("gone", 1)
    d.update({"r": 4})
    d["s"] = v - d["r"]
    if "s" in d and "gone" not in d:
        return d["s"] * d["p"] + len(d)
    return None


_PARAM_KEY = torch.nn.Parameter(torch.ones(10, 10))


@S.std("test_dict_param_keys")
def dict_with_parameter_key(a):
    d = {"t": a, _PARAM_KEY: 4}
    return d["t"] * d[_PARAM_KEY]


class _Store(collections.abc.MutableMapping):
    def __init__(self):
        self._d = {}

    def __getitem__(self, k):
        return self._d[k]

    def __setitem__(self, k, v):
        self._d[k] = v

    def __delitem__(self, k):
        del self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


_STORE = _Store()
_STORE["w"] = torch.full((4,), 3.0)


@S.case("test_dict_mutable_map", (torch.arange(4.0),))
def dict_of_user_mutable_mapping(x):
    plain = dict(_STORE)
    return x - plain["w"]


def _scaled(x, w=2):
    return x * w


@S.case("test_unpack_mutable_map", (torch.arange(4.0),))
def double_star_user_mapping(x):
    return _scaled(x, **_STORE)


_DD_PARAM = torch.nn.Parameter(torch.ones(2, 2))


def _defaultdict_case(factory):
    dd = collections.defaultdict(factory)

    def fn(x):
        dd.clear()
        dd["p"] = x * 2
        dd[_DD_PARAM] = 9
        dd["r"] = x - 1
        missing = dd["m"]
        return missing, dd["p"], dd["r"], dd[_DD_PARAM], len(dd)
    return fn


def _make_dict():
    return dict()  # noqa: C408


for _label, _factory in [("dict", dict), ("list", list), ("tuple", tuple), ("set", set),
                         ("lambda", lambda: {}), ("closure", _make_dict)]:
    S.add(f"test_default_dict_{_label}", f"global_defaultdict_{_label}_factory", _defaultdict_case(_factory),
          [(torch.arange(4.0),)])


@S.case("test_default_dict_constr", (torch.arange(4.0),))
def defaultdict_made_inside_updates(x):
    dd = collections.defaultdict(lambda: {})
    dd["p"] = x * 3
    dd[_DD_PARAM] = 5
    dd.update({"q": x - 1})
    dd.update([["r", x + 2], ("s", x * 0)])
    dd.update(zip("pq", [x / 2, x + 4]))
    return dd["q"], dd["p"], dd["r"], dd["s"], dd[_DD_PARAM], dd["absent"]


class _Attrs:
    p = 1
    q = 2

    def __init__(self):
        self.r = 3


_ATTRS = _Attrs()


@S.case("test_class_dict", (torch.arange(4.0),))
def class_dict_membership(x):
    if "p" in type(_ATTRS).__dict__:
        return x * 2
    return x - 2


@S.case("test_dict_tuple_lazy_guard", (torch.arange(3.0), {1: 5, 2: 6}), (torch.arange(3.0), {1: 5, 2: 7}),
        (torch.arange(3.0), (4, 5, 6)), (torch.arange(3.0), (40, 5, 60)), fullgraph=False)
def unread_entries_do_not_recompile(x, y):
    return torch.cos(x) + y[1]


@S.std("test_call_dict1")
def dict_and_ordered_dict_empty_constructors(x):
    p = dict()  # noqa: C408
    p["k"] = x * 2
    q = collections.OrderedDict()
    q["k"] = x - 2
    return p["k"] * q["k"]


@S.std("test_call_dict2")
def ordered_dict_of_dict_isinstance(x):
    p = dict()  # noqa: C408
    p["k"] = x
    q = collections.OrderedDict(p)
    return x * 2 if isinstance(q, collections.OrderedDict) else x


def _dict_from_pairs(make_pairs):
    def fn(x):
        pairs = make_pairs(x)
        p = dict(pairs)
        p["u"] = x * 10
        q = collections.OrderedDict(pairs)
        q["w"] = x - 10
        return p["u"] - q["w"] + p["v"]
    return fn


S.std("test_call_dict3", name="dict_from_list_of_pairs")(
    _dict_from_pairs(lambda x: [("u", x), ("v", x * 2), ("w", x * 3)]))
S.std("test_call_dict4", name="dict_from_tuple_of_pairs")(
    _dict_from_pairs(lambda x: (("u", x), ("v", x * 2), ("w", x * 3))))


@S.std("test_call_dict5")
def dict_from_iterator_consumes_it(x):
    pairs = iter([("u", x), ("v", x + 1), ("w", x + 2)])
    p = dict(pairs)
    q = collections.OrderedDict(pairs)  # the iterator is exhausted: empty
    q["w"] = x * 3
    return p["u"] * q["w"] + len(q) + p["w"]


@S.std("test_dict_fromkeys")
def fromkeys_of_dict_kinds(x, y):
    names = ["m", "n"]
    p = dict.fromkeys(names)
    q = dict.fromkeys(p, x * 2)
    r = collections.defaultdict.fromkeys(iter(q), y - 1)
    s = collections.OrderedDict.fromkeys(tuple(names), value=x)
    return q["m"] + r["n"] * s["m"] - q["n"] + (p["m"] is None)


@S.std("test_dict_copy", name="dict_copy_is_independent")
def dict_copy_is_independent(x):
    base = dict([("u", x), ("v", x * 2)])
    dup = base.copy()
    dup["u"] = x - 5
    od = collections.OrderedDict(base)
    od2 = od.copy()
    od2["v"] = x + 7
    return base["u"] * dup["u"] + od["v"] * od2["v"]


@S.std("test_dict_update")
def dict_update_forms(x, y, z):
    d = {"p": x, "q": y}
    d.update({"p": z * 2})
    d.update([("q", x - 1), ["r", y]])
    d.update(zip("pq", [y * 3, z]))
    od = collections.OrderedDict(p=x, q=z)
    od.update({"q": x * 4})
    od.update([["r", y - 6], ("s", z + 6)])
    od.update(zip("rs", [x, y]))
    return d["p"] * od["q"] + d["r"] - od["r"] * od["s"] + d["q"]


class _Cache:
    pass


@S.case("test_torch_size_as_dict_key", lambda: (torch.ones(2, 3), {}), lambda: (torch.ones(2, 3) * 2, {}))
def size_as_dict_key(x, memo):
    if x.shape not in memo:
        memo[x.shape] = x * 2
    return x + memo[x.shape]


def _dict_hasattr(x):
    if hasattr(x, "to"):
        return x.to("cpu") * 2
    if hasattr(x, "items"):
        return torch.sin(x["k"])
    return x


S.add("test_dict_hasattr", "hasattr_on_dict_and_tensor", _dict_hasattr,
      [({"k": torch.arange(3.0)},), (torch.arange(4.0),)])


@S.std("test_tensor_new_with_size")
def tensor_new_with_size(x):
    ref = torch.zeros(4, 6)
    made = x.new(ref.size())
    assert made.size() == ref.size()


@S.std("test_tensor_new_with_shape")
def tensor_new_with_shape(x):
    ref = torch.zeros(3, 5)
    made = x.new(ref.shape)
    assert made.shape == ref.shape


@S.std("test_funcdef_closure")
def nonlocal_rebinding_in_inner(x, y):
    x = x * y - 1.0

    def bump(z):
        nonlocal x, y
        y = x * z + 5.0
        x = y - z * 2.0

    bump(1.5)
    bump(0.5)
    return x, y


@S.std("test_inline_softmax")
def softmax_module_built_inline(x, y):
    return torch.nn.Softmax(dim=0)(x - y)


@S.std("test_dtype_compare")
def dtype_compare_chain(a, b):
    if a.dtype == torch.float64:
        return a * 2
    if a.dtype == torch.float32:
        return a + b * 8
    return None


@S.std("test_inline_jit__unwrap_optional")
def jit_unwrap_optional(x):
    if torch.jit._unwrap_optional(x) is None:
        return torch.zeros(3)
    return x.cos()


# -- deque ---------------------------------------------------------------------------------------
@S.std("test_deque")
def deque_edits(a, b):
    q = collections.deque([b, a])
    q.append(a * 2)
    q.extend([b, a])
    q.insert(1, "mark")
    last = q.pop()
    other = collections.deque([last])
    q.extendleft(other)
    other.clear()
    q.extend(other)
    q[3] = "set"
    q = q.copy()
    q.append(q.popleft())
    q.extend(collections.deque())
    return list(q)


# -- memory formats, distributed flags, distributions --------------------------------------------
@S.std("test_is_contiguous_memory_format")
def contiguous_memory_format_query(t):
    if torch.jit.is_scripting():
        return None
    if t.is_contiguous(memory_format=torch.contiguous_format):
        return t * 2
    return None


def _layout_branch(x):
    if x.is_contiguous():
        return x - 1
    if x.is_contiguous(memory_format=torch.channels_last):
        return x * 2
    return x + 5


S.add("test_is_contiguous_frame_counts", "contiguity_branches_recompile", _layout_branch,
      [(torch.rand(8),), (torch.rand(1, 2, 6, 6),),
       (torch.rand(1, 2, 6, 6).contiguous(memory_format=torch.channels_last),),
       (torch.rand(8)[::2],), (torch.rand(3, 2, 5, 5)[:, :, 1:-1, 1:-1],)], count=True, frames=None)


@S.std("test_list_slice_assignment")
def list_slice_assignment(x):
    vals = [5, 6, 7, 8]
    vals[2:] = [0] * (len(vals) - 2)
    return x * sum(vals)


@S.std("test_distributed_is_available")
def distributed_available_flag(x):
    return x + 2 if torch.distributed.is_available() else x - 2


@S.std("test_distributed_is_initialized")
def distributed_initialized_flag(x):
    return x * 2 if torch.distributed.is_initialized() else x / 2


@S.std("test_torch_distributions_functions")
def distributions_log_prob(x):
    dist = torch.distributions.Normal(x, torch.tensor(2.0))
    return torch.distributions.Independent(dist, 1).log_prob(x * 0.5)


@S.std("test_context_wrapping_nested_functions_no_closure")
def no_grad_decorated_inner_function(x):
    @torch.no_grad()
    def inner(v):
        return (v - 1) * 3

    return inner(x)


@S.case("test_math_radians", (torch.rand(10), 30), count=True, frames=1)
def math_radians_of_int_argument(x, deg):
    return x * math.radians(deg)


# -- numpy on tensors ----------------------------------------------------------------------------
@S.std("test_numpy_meshgrid")
def numpy_meshgrid_of_tensors(x, y):
    p, q = np.meshgrid(x[0].numpy(), y[1].numpy())
    return torch.from_numpy(p), torch.from_numpy(q)


@S.std("test_torch_from_numpy")
def numpy_roundtrip_size(x):
    back = torch.from_numpy(x.numpy())
    return torch.tensor(back.size(1) == 10)


@S.std("test_numpy_size", frames=None)  # torch 2.13 compiles 1 graph; the test file's torch 0
def numpy_size_attribute(x):
    return x.numpy().size


@S.std("test_numpy_attributes")
def numpy_array_attributes(x):
    arr = x.numpy()
    return (arr.ndim, arr.shape, arr.size, arr.itemsize, arr.strides,
            torch.from_numpy(arr.T), torch.from_numpy(arr.real))


@S.std("test_mean_sum_np")
def numpy_mean_then_sum(x):
    m = np.mean(x.numpy(), 0)
    return torch.from_numpy(np.asarray(np.sum(m)))


@S.std("test_return_numpy_ndarray")
def return_numpy_transpose(x):
    return x.numpy().T


@S.std("test_return_multiple_numpy_ndarray")
def return_several_numpy_arrays(x):
    arr = x.numpy()
    return arr.real, arr.T, arr.imag


@S.std("test_ndarray_method")
def numpy_copy_method(x):
    return x.numpy().copy()


@S.std("test_ndarray_transpose")
def numpy_transpose_method(x):
    return x.numpy().transpose(1, 0)


@S.std("test_ndarray_reshape")
def numpy_reshape_method(x):
    arr = x.numpy()
    return arr.reshape([arr.size, 1])


@S.std("test_ndarray_methods_returning_scalar")
def numpy_reductions_with_axis(x):
    arr = x.numpy()
    return arr.min(axis=1), arr.any(axis=1)


@S.std("test_ndarray_builtin_functions")
def numpy_operators(x):
    arr = x.numpy()
    return arr - arr, arr + arr


@S.std("test_numpy_dtype_argument_to_function")
def numpy_zeros_like_with_dtype(x):
    return np.zeros_like(x, dtype=np.float64)


@S.std("test_numpy_dtype_call_in_function")
def numpy_dtype_object_call(x):
    kind = np.dtype("float")
    return np.full_like(x, -1.5, dtype=kind)


@S.std("test_numpy_linalg")
def numpy_linalg_norm(x):
    return np.linalg.norm(x.numpy(), axis=1)


@S.std("test_numpy_fft")
def numpy_fftshift(x):
    return np.fft.ifftshift(x.numpy())


@S.std("test_numpy_random", frames=None, torch_differs="numpy's random functions draw from torch's generator")
def numpy_random_difference():
    arr = np.random.rand(3, 2)
    return arr - arr


# -- functools.partial ---------------------------------------------------------------------------
def mul_fn(x, y):
    return x * y


def apply_module(x, y, mod):
    return mod(x, y) * 2


class TwoInput(torch.nn.Module):
    def forward(self, x, y):
        return x - y * 3


@S.std("test_partials_torch_op_kwarg")
def partial_torch_op_keyword(x):
    scaled = functools.partial(torch.add, other=torch.full((10, 10), 2.0))
    return scaled(x)


@S.std("test_partials_torch_op_arg")
def partial_torch_op_positional(x):
    scaled = functools.partial(torch.sub, torch.full((10, 10), 2.0))
    return scaled(x)


@S.std("test_partials_udf_arg")
def partial_user_fn_positional(x):
    return functools.partial(mul_fn, torch.full((10, 10), 3.0))(x)


@S.std("test_partials_udf_kwarg")
def partial_user_fn_keyword(x):
    return functools.partial(mul_fn, y=torch.full((10, 10), -1.0))(x)


@S.std("test_partials_udf_kwarg_module")
def partial_with_module_keyword(x, y):
    return functools.partial(apply_module, mod=TwoInput())(x=x, y=y)


@S.std("test_partials_udf_kwarg_method")
def partial_with_bound_forward_keyword(x, y):
    return functools.partial(apply_module, mod=TwoInput().forward)(x=y, y=x)


@S.std("test_partials_lambda")
def partial_of_lambda(x):
    times = lambda p, q: p * q  # noqa: E731
    return functools.partial(times, q=4)(x)


# -- lists: concat, repeat, membership -----------------------------------------------------------
@S.std("test_list_add_then_mutate")
def list_concat_then_append(x):
    items = [2, x]
    y = x * 0.5
    items = items + [x / 4.0, 1]
    items.append(y)
    return sum(items)


@S.std("test_list_expand_lhs")
def list_repeat_left(x):
    return sum(3 * [x])


@S.std("test_in_not_in")
def membership_with_tensor_in_list(x):
    items = [7, 8, 9, x]
    plain_ints = [7, 8, 9]
    assert 8 in items
    assert 10 not in plain_ints
    return sum(items)


@S.std("test_are_functorch_transforms_active")
def functorch_transforms_inactive(x):
    return x * 3 if torch._C._are_functorch_transforms_active() else x - 3


@S.std("test_flat_param_same_storage_size")
def fsdp_storage_size_helper(x, y):
    import torch.distributed.fsdp._flat_param as fp

    x = x + 1 if fp._same_storage_size(x, 100) else x - 1
    y = y * 2 if fp._same_storage_size(y, 7) else y / 2
    return x, y


def _partial_hasattr_case(attr):
    def fn(t):
        inner = lambda p, q: torch.cos(p) - torch.sin(q)  # noqa: E731
        part = functools.partial(inner, q=t)
        if hasattr(part, attr):
            return part(t)
        return torch.ones_like(t)
    return fn


for _attr in ["__hash__", "__eq__", "__repr__", "__call__", "__class__", "__dict__", "__doc__", "__module__",
              "__reduce__", "__setattr__", "args", "keywords", "func", "__code__", "__name__", "__defaults__",
              "__qualname__", "__globals__", "__closure__", "__get__", "__kwdefaults__", "__annotations__"]:
    S.add("test_partials_hasattr", f"partial_hasattr_{_attr.strip('_')}", _partial_hasattr_case(_attr),
          [(torch.arange(6.0).view(2, 3),)], count=True, frames=1)


def _filter_grad_inputs(inputs):
    out = inputs[0] + 1
    for t in filter(lambda v: v.requires_grad, inputs):
        out = out * t
    return out


S.add("test_filter", "filter_by_requires_grad", _filter_grad_inputs,
      [lambda: ([torch.arange(3.0), torch.arange(3.0).requires_grad_()],)])


def _filter_by_value(inputs):
    out = inputs[0]
    for t in filter(lambda v: v[0] == 1, inputs):
        out = out * t
    return out


S.add("test_filter_fallback", "filter_on_tensor_value_breaks", _filter_by_value,
      [([torch.ones(3), torch.arange(3.0)],)], fullgraph=False)


@S.case("test_pow_int", (torch.ones(3, 2) * 2, 3), dynamic=True)
def pow_with_int_exponent_dynamic(a, b):
    return torch.pow(a, b)


@S.case("test_tensor_size_indexed_by_symint", (torch.rand(4, 2), torch.rand(4, 5, 7)))
def size_indexed_by_other_size(x, y):
    return x * y.shape[x.shape[-1]]


@S.case("test_partials_as_input_partials_lambda",
        (functools.partial(lambda p, q: p * q, q=2), functools.partial(lambda p, q: p * q, q=5), torch.ones(2, 2)),
        count=True, frames=1)
def call_partials_of_lambdas_passed_in(f0, f1, x):
    return f0(x) - f1(x)


@S.case("test_partials_as_input_partials_mod",
        (functools.partial(TwoInput(), y=torch.full((2, 2), 2.0)),
         functools.partial(TwoInput(), y=torch.full((2, 2), -1.0)), torch.ones(2, 2)), count=True, frames=1)
def call_partials_of_modules_passed_in(f0, f1, x):
    return f0(x) * f1(x)


@S.case("test_partials_as_input_UDF",
        (functools.partial(mul_fn, y=torch.full((2, 2), 3.0)), functools.partial(mul_fn, y=torch.eye(2)),
         torch.ones(2, 2)), count=True, frames=1)
def call_partials_of_functions_passed_in(f0, f1, x):
    return f0(x) + f1(x)


@S.case("test_partials_graph_break_reconstruct", (mul_fn, mul_fn, torch.arange(4.0).view(2, 2)),
        fullgraph=False)
def partials_live_across_a_break(f0, f1, x):
    p0 = functools.partial(f0, y=x)
    p1 = functools.partial(f1, y=x + 1)
    print("", end="")
    return torch.add(p0(x), p1(x))


def add_fn(x, y):
    return x + y


def mul3(x, y, z):
    return x * y * z


@S.case("test_partials_graph_break_reconstruct_mix", (mul_fn, add_fn, torch.arange(4.0).view(2, 2)),
        fullgraph=False)
def partials_mixed_kinds_across_break(f0, f1, x):
    p0 = functools.partial(f0, y=x)
    p1 = functools.partial(f1, x)
    print("", end="")
    return p0(x) - p1(x)


@S.case("test_partials_graph_break_reconstruct_mix_no_source", (mul_fn, torch.arange(4.0).view(2, 2)),
        fullgraph=False)
def partial_of_local_lambda_across_break(f0, x):
    plus = lambda p, q: p + q  # noqa: E731
    p0 = functools.partial(f0, y=x)
    p1 = functools.partial(plus, x)
    print("", end="")
    return p0(x) * p1(x)


@S.case("test_partials_graph_break_reconstruct_args_and_kwargs", (mul3, torch.arange(4.0).view(2, 2)),
        count=True, frames=1, fullgraph=False)
def partials_with_args_and_kwargs(f, x):
    p0 = functools.partial(f, x, 3, z=x)
    p1 = functools.partial(f, 2, z=x)
    return torch.mul(p0(), p1(6))


_P_A = functools.partial(mul_fn, y=torch.full((2, 2), 2.0))
_P_B = functools.partial(mul_fn, y=torch.full((2, 2), 5.0))
_P_C = functools.partial(mul_fn, y=torch.full((3, 3), 2.0))
_P_D = functools.partial(lambda p, y: p - y, y=torch.full((3, 3), 1.0))


def _call_both(f0, f1, x):
    return f0(x) + f1(x)


S.add("test_partials_recompilation", "partials_guard_function_and_tensor_shape", _call_both,
      [(_P_A, _P_B, torch.ones(2, 2)), (_P_B, _P_A, torch.ones(2, 2)), (_P_C, _P_C, torch.ones(3, 3)),
       (_P_D, _P_D, torch.ones(3, 3))], count=True, frames=3)


def _call_star(f0, f1, args):
    return f0(*args) * f1(*args)


S.add("test_partials_recompilation", "partials_guard_arg_and_kwarg_keys", _call_star,
      [(_P_A, _P_B, [torch.ones(2, 2)]),
       (functools.partial(lambda x, y: x * y, y=3, x=torch.ones(3, 3)),) * 2 + ([],),
       (functools.partial(lambda x, y: x * y, 2),) * 2 + ([torch.ones(3, 3)],),
       (lambda x: x + x, lambda x: x + x, [torch.ones(3, 3)])], count=True, frames=4)


@S.case("test_manual_seed", (), fullgraph=False)
def manual_seed_then_randint():
    torch.manual_seed(11)
    return torch.randint(0, 9, (6,))


def _takes_kwargs(x, **kwargs):
    return x * 2


@S.case("test_partial_across_graph_break_uninvoked", (torch.rand(2), 4), fullgraph=False, dynamic=True)
def rebinding_partial_used_by_closure_across_break(x, i):
    def run():
        print("", end="")
        return op(x)

    op = functools.partial(_takes_kwargs, dim=3)
    x = run()
    op = functools.partial(_takes_kwargs, other=4)
    return run() + x


@S.case("test_no_recompile_inner_function", (torch.ones(2),), (torch.ones(2),), (torch.ones(2),),
        count=True, frames=1, fullgraph=False)
def inner_def_after_break_no_recompile(inp):
    def g(y):
        return inp * y

    print("", end="")
    return g(torch.full([1], 3.0))


@S.case("test_no_recompile_inner_lambda", (torch.ones(2),), (torch.ones(2),), (torch.ones(2),),
        count=True, frames=1, fullgraph=False)
def inner_lambda_after_break_no_recompile(inp):
    g = lambda y: inp - y  # noqa: E731
    print("", end="")
    return g(torch.full([1], 3.0))


@S.case("test_complex_closure", (torch.arange(3.0),), fullgraph=False)
def return_nested_closure_then_call(y):
    def outer():
        def inner(z):
            return y * z
        return inner

    return outer()(torch.full((3,), 2.0))


@S.case("test_non_inlined_closure", (torch.ones(1), torch.full((1,), 3.0)), fullgraph=False)
def closure_rebound_between_two_broken_calls(x, y):
    op = lambda p, q: p + q  # noqa: E731

    def inner():
        print("", end="")
        return op(x, y)

    out = inner()
    op = lambda p, q: p * q  # noqa: E731
    out = out + inner()
    return out


def _iinfo_max(a, b, kind):
    return a + np.iinfo(kind).max


def _finfo_max(a, b, kind):
    return a - np.finfo(kind).max


for _label, _arg in [("str", "int16"), ("type", np.int16), ("dtype", np.dtype("int16")),
                     ("info", np.iinfo("int16"))]:
    S.add("test_np_constant_collections_as_input", f"np_iinfo_of_{_label}", _iinfo_max,
          [(torch.zeros(2), torch.zeros(2), _arg)], fullgraph=False)
for _label, _arg in [("str", "float16"), ("type", np.float16), ("dtype", np.dtype("float16")),
                     ("info", np.finfo("float16"))]:
    S.add("test_np_constant_collections_as_input", f"np_finfo_of_{_label}", _finfo_max,
          [(torch.zeros(2), torch.zeros(2), _arg)], fullgraph=False)


def _dtype_max(a, dt):
    return a + (np.iinfo(dt).max if np.dtype(dt).kind == "i" else np.finfo(dt).max)


def _info_max(a, info):
    return a + info.max


for _typ, _info in [(int, np.iinfo), (float, np.finfo)]:
    _same = [np.dtype(_typ), np.ones((1,), dtype=_typ).dtype, np.dtype(np.dtype(_typ).name)]
    _other = np.dtype(np.int16 if _typ is int else np.float16)
    S.add("test_np_constant_collections_guards", f"equal_numpy_dtypes_share_a_graph_{_typ.__name__}",
          _dtype_max, [(torch.zeros(3, dtype=_typ), d) for d in _same] + [(torch.zeros(3, dtype=_typ), _other)],
          fullgraph=False)
    S.add("test_np_constant_collections_guards", f"equal_numpy_infos_share_a_graph_{_typ.__name__}",
          _info_max, [(torch.zeros(3, dtype=_typ), _info(d)) for d in _same]
          + [(torch.zeros(3, dtype=_typ), _info(_other))], fullgraph=False)


def _const_vs_tensor(op):
    def fn(x):
        return op(-0.5, x)
    return fn


for _op in [operator.lt, operator.le, operator.gt, operator.ge, operator.ne, operator.eq, operator.is_,
            operator.is_not]:
    S.add("test_compare_constant_and_tensor", f"constant_{_op.__name__}_tensor", _const_vs_tensor(_op),
          [(torch.linspace(-1, 1, 5),)])


def _pos_both(x, y):
    return operator.pos(x) * +y


for _i, (_x, _y) in enumerate([(torch.arange(3.0), 2), (3, torch.arange(3.0)), (-2, -3), (-1.5, 2.5),
                               (True, True), (torch.ones(3), 0.5)]):
    S.add("test_pos", f"operator_pos_{_i}", _pos_both, [(_x, _y)], dynamic=True)


def _index_mul(x, t):
    return torch.mul(t, operator.index(x))


for _dyn in (True, False):
    S.add("test_index", f"operator_index_{'dynamic' if _dyn else 'static'}", _index_mul,
          [(7, torch.ones(2)), (-20, torch.ones(2)), (7, torch.ones(2)), (False, torch.ones(2)),
           (True, torch.ones(2))], dynamic=_dyn, fullgraph=False)


def _truth_and(x, y):
    return operator.truth(x) and bool(y)


for _i, (_x, _y) in enumerate([(2, 50), (-0.5, True), (-2.5, 0.5), (True, False), (0, 3), (1.5, 0.0)]):
    S.add("test_truth", f"operator_truth_and_bool_{_i}", _truth_and, [(_x, _y)], dynamic=False)


def _map_unary(op):
    def fn():
        return list(map(op, range(-4, 5)))
    return fn


for _label, _op in [("operator_abs", operator.abs), ("builtin_abs", abs), ("neg", operator.neg),
                    ("pos", operator.pos), ("truth", operator.truth), ("invert", operator.invert)]:
    S.add("test_unary_fold_op", f"map_{_label}_over_range", _map_unary(_op), [()])


@S.case("test_unary_fold_op_seq", ())
def length_hint_of_tuples():
    return tuple(map(operator.length_hint, [tuple(range(-3, i)) for i in range(5)]))


# -- ranges: length, index, slice ----------------------------------------------------------------
def _range_len(args):
    def fn(x):
        return x * len(range(*args))
    return fn


for _args in [(1, 1, 1), (1, 0), (-10,), (4,), (10,), (1, 10, 2), (10, 1, -1), (10, 1, -3), (-7, 8, 4),
              (5, -5, -2), (3, 9), (-3, -9, -1)]:
    S.add("test_range_length", "range_len_" + "_".join(str(a).replace("-", "m") for a in _args),
          _range_len(_args), [(torch.ones(2),)])


def _range_index(args, index):
    def fn(x):
        return x + range(*args)[index]
    return fn


for _args, _index in [((10,), 1), ((10, 20, 2), 1), ((10, 20, 2), -1), ((-5, 5, 3), 2), ((8, -8, -3), 4),
                      ((1, 2), 0), ((0, 30, 7), -2)]:
    S.add("test_indexed_range", "range_index_" + "_".join(str(a).replace("-", "m") for a in _args)
          + f"_at_{str(_index).replace('-', 'm')}", _range_index(_args, _index), [(torch.ones(2),)])


def _range_slice(args, sl):
    def fn(x):
        r = range(*args)[sl]
        return x * len(r), r.start, r.stop, r.step, list(r)
    return fn


for _i, (_args, _sl) in enumerate([((10,), slice(1, 10, 2)), ((10,), slice(None, 10, None)),
                                   ((10,), slice(-1, 7, None)), ((10,), slice(-1, 7, 2)),
                                   ((1, 10, 2), slice(3, 7, 2)), ((1, 10, 2), slice(-3, 7, 2)),
                                   ((-1, -5, -3), slice(5, None, -3)), ((0, 20, 3), slice(None, None, -1)),
                                   ((5, -5, -1), slice(2, -2, 3))]):
    S.add("test_sliced_range", f"range_slice_{_i}", _range_slice(_args, _sl), [(torch.ones(2),)])


@S.case("test_range_with_slice_index", (torch.ones(2),))
def loop_over_sliced_range(x):
    acc = 2
    for k in range(5)[1::2]:
        acc = acc * k + 1
    return x * acc


@S.case("test_range_with_index", (torch.ones(2),))
def range_item_in_arithmetic(x):
    return x * (3 * range(4, 40, 3)[3])


@S.case("test_rand_inlined", (), dynamic=True, fullgraph=False, setup=lambda: __import__("random").seed(5))
def python_random_shapes_for_a_tensor():
    import random

    sizes = [6]
    sizes[random.randint(0, 0)] = random.randint(2, 5)
    return torch.zeros(tuple(sizes)).shape


@S.case("test_rand_tensor_partial", (), fullgraph=False)
def partial_of_torch_rand_with_namedtuple_shape():
    Shape = collections.namedtuple("Shape", ["b", "h", "n", "d"])
    make = functools.partial(torch.rand, device="cpu", dtype=torch.float16, requires_grad=True)
    make_q = functools.partial(make, Shape(2, 2, 4, 3))
    make_k = functools.partial(make, Shape(2, 2, 4, 3))
    return (make_q() + make_k()).shape


@S.case("test_to", (), fullgraph=False)
def move_to_meta_device():
    t = torch.ones(3)
    return t.to("meta").shape


def _np_setitem(a, ind, val):
    a[ind] = val
    return a


for _i, (_arr, _ind, _val) in enumerate([
        (np.zeros(3), np.s_[...], np.ones(3)), (np.array([[1, 1], [2, 2]]), np.s_[0, ...], np.zeros(2)),
        (np.array([[1, 1], [2, 2]]), np.s_[1, ...], np.zeros(2)),
        (np.array([[1, 1], [2, 2]]), np.s_[..., 0], np.array([5, 5])),
        (np.array([[1, 1], [2, 2]]), np.s_[..., 1], np.array([5, 5]))]):
    S.add("test_elipsis", f"numpy_setitem_ellipsis_{_i}", _np_setitem,
          [lambda _arr=_arr, _ind=_ind, _val=_val: (_arr.copy(), _ind, _val.copy())])


# -- default arguments that are tensors ----------------------------------------------------------
def bump_defaults(x=torch.zeros((2, 2)), *, kw_x=torch.zeros((1, 2))):
    x.add_(1)
    kw_x.add_(2)
    return x, kw_x


def _reset_bump_defaults():
    bump_defaults.__defaults__[0].zero_()
    bump_defaults.__kwdefaults__["kw_x"].zero_()


def _bump_defaults_state():
    return bump_defaults.__defaults__[0].clone(), bump_defaults.__kwdefaults__["kw_x"].clone()


@S.case("test_func_default_tensor_args", (), (), count=True, frames=1, fullgraph=False,
        setup=_reset_bump_defaults, state=_bump_defaults_state)
def mutates_default_tensor_of_global_function():
    p, q = bump_defaults()
    return p.clone(), q.clone()


class DefaultsForward(torch.nn.Module):
    def forward(self, x=torch.zeros((2, 2)), *, kw_x=torch.zeros((1, 2))):
        x.mul_(2).add_(1)
        kw_x.sub_(1)
        return x, kw_x


class HoldsDefaults(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = DefaultsForward()

    def forward(self):
        p, q = self.inner()
        return p.clone(), q.clone()


def _reset_forward_defaults():
    DefaultsForward.forward.__defaults__[0].zero_()
    DefaultsForward.forward.__kwdefaults__["kw_x"].zero_()


S.add("test_meth_default_tensor_args", "mutates_default_tensor_of_forward", None, [(), ()],
      module=HoldsDefaults, count=True, frames=1, fullgraph=False, setup=_reset_forward_defaults,
      state=lambda: (DefaultsForward.forward.__defaults__[0].clone(),
                     DefaultsForward.forward.__kwdefaults__["kw_x"].clone()))


def _ones_of_defaults(dt=torch.float64, ds=torch.Size((2, 1, 3)), dd=torch.device("cpu")):
    return torch.ones(ds, dtype=dt, device=dd)


@S.case("test_func_default_torch_args", (), count=True, frames=1, fullgraph=False)
def torch_typed_default_arguments():
    return _ones_of_defaults()


# -- dataclasses ---------------------------------------------------------------------------------
import dataclasses as _dc  # noqa: E402


@_dc.dataclass
class Report:
    scale: int = 3
    tensors: dict = _dc.field(default_factory=dict)
    items: list = _dc.field(default_factory=list)

    def doubled(self):
        return self.scale * 2


@S.case("test_dataclass_factory", (torch.arange(4.0),), count=True, frames=1)
def dataclass_default_factories(x):
    p = Report(2)
    k = p.doubled()
    q = Report(4, tensors={"t": x})
    r = Report()
    if isinstance(p.tensors, dict) and p.items == []:
        x = torch.cos(x)
    r.scale = 5
    r.tensors["t"] = x
    return r, torch.sin(x) * k + q.tensors["t"] - r.scale


@_dc.dataclass
class Base2:
    first: int
    second: int


@_dc.dataclass
class Derived2(Base2):
    extra: list = _dc.field(default_factory=list)


@S.case("test_dataclass_nested", (torch.arange(4.0),))
def dataclass_inheritance_fields(x):
    d = Derived2(3, 4)
    return d.second * x - d.first + len(d.extra)


def _contains_constant(kind):
    def fn(x):
        x.add_(1)
        return 1 in kind([x])
    return fn


for _kind in (set, list, tuple):
    S.add("test_listlike_of_tensors_contains_constant", f"int_in_{_kind.__name__}_of_tensor",
          _contains_constant(_kind), [(torch.full((1,), 3.0),), (torch.full((1,), -2.0),)])


def _cast_single(kind):
    def fn(x):
        return kind(x * 2)
    return fn


for _kind, _val in [(float, 1.5), (float, 3), (float, True), (int, 4), (int, False), (bool, 1.0), (bool, 0)]:
    S.add("test_cast_tensor_single_elem", f"{_kind.__name__}_of_one_element_tensor_{str(_val).lower()}",
          _cast_single(_kind), [(torch.tensor([_val]),)], dynamic=False, config={"capture_scalar_outputs": True})
    S.add("test_cast_tensor_single_elem", f"{_kind.__name__}_of_two_element_tensor_raises_{str(_val).lower()}",
          _cast_single(_kind), [(torch.tensor([_val, _val]),)], dynamic=False, fullgraph=False)


# -- sets and frozensets holding tensors ---------------------------------------------------------
@S.case("test_set_construction", (torch.arange(4.0),))
def set_of_tensor_and_its_inplace_alias(x):
    y = x.mul_(2)
    s = set({x})
    s.add(y)
    s.add(x + 0)
    return len(s)


@S.case("test_frozenset_construction", (torch.arange(4.0),))
def frozenset_of_tensor(x):
    s = frozenset({x, x * 1})
    return len(frozenset(s))


_FROZEN_KEYED = {frozenset(): torch.arange(4.0) * 2}


@S.case("test_frozenset_reconstruction", (torch.arange(4.0),), fullgraph=False)
def frozenset_key_across_a_break(x):
    k = frozenset()
    print("", end="")
    return _FROZEN_KEYED[k] * x


def _frozenset_misuse(method, arg):
    def fn(x):
        s = frozenset((4, 5, 6))
        if arg is None:
            getattr(s, method)()
        else:
            getattr(s, method)(arg)
        return x * len(s)
    return fn


for _method, _arg in [("add", 7), ("pop", None), ("update", {8}), ("remove", 5), ("discard", 5), ("clear", None)]:
    S.add("test_frozenset_illegal_call_method", f"frozenset_has_no_{_method}", _frozenset_misuse(_method, _arg),
          [(torch.ones(2),)], torch_differs="raises InternalTorchDynamoError where eager raises AttributeError")


# -- identity of tensors -------------------------------------------------------------------------
def _same_or_sum(x, y):
    return x * 3 if x is y else x - y


def _not_same(x, y):
    return x * 3 if x is not y else x - y


_T0, _T1 = torch.zeros(2), torch.ones(2)
S.add("test_is_tensor_tensor", "is_between_distinct_tensors", _same_or_sum, [(_T0, _T1)], dynamic=True)
S.add("test_is_tensor_tensor", "is_between_same_tensor", _same_or_sum, [lambda: (lambda t: (t, t))(torch.ones(2))],
      dynamic=True)
S.add("test_is_not_tensor_tensor", "is_not_between_distinct_tensors", _not_same, [(_T0, _T1)], dynamic=True)
S.add("test_is_not_tensor_tensor", "is_not_between_same_tensor", _not_same,
      [lambda: (lambda t: (t, t))(torch.ones(2))], dynamic=True)


@S.case("test_is_mutated_tensor_tensor", (torch.ones(3),), (torch.ones(3, 1),), dynamic=True)
def inplace_result_is_its_input(x):
    y = x.mul_(2)
    return x is y, y is x


@S.case("test_is_mutated_tensor_tensor_across_graph_break", (torch.ones(3),), dynamic=True, fullgraph=False)
def inplace_identity_survives_a_break(x):
    y = x.add_(2)
    before = x is y
    x.mul_(3)
    print("", end="")
    x.sub_(1)
    return x is y, before


@S.case("test_is_init_in_compile_mutated_tensor_tensor", (torch.ones(3, 1),), dynamic=True)
def inplace_on_clone_keeps_identity(x):
    c = x.clone()
    d = c.sub_(4)
    return d is c, d is x


@S.case("test_is_vmapped_mutated_tensor_tensor", (torch.ones(3, 1) * 0.5,), dynamic=True)
def vmapped_inplace_identity(x):
    y = torch.vmap(torch.Tensor.asin_)(x)
    return y is x


@S.case("test_is_init_in_compile_vmapped_mutated_tensor_tensor", (torch.ones(3, 1) * 0.5,), dynamic=True)
def vmapped_inplace_on_clone_identity(z):
    c = z.clone()
    y = torch.vmap(torch.Tensor.asin_)(c)
    return y is c, y is z


def _vmap_pair_identity(y, z):
    a = y.clone()
    b = z.clone()

    def g(p, q):
        return p.cos_(), q.sin_()

    c, d = torch.vmap(g)(a, b)
    return a is c, b is d, a is d


S.add("test_is_init_in_compile_vmapped_mutated_tensor_tensor_multi_arg", "vmapped_inplace_two_args_identity",
      _vmap_pair_identity, [(torch.ones(3, 2), torch.ones(3, 5)), lambda: (lambda t: (t, t))(torch.ones(3, 2))],
      dynamic=True)


def _in_set_after_inplace(p, q):
    p.add_(1)
    return p in set([q])


def _in_set_two_inplace(p, q):
    y = p.add_(1)
    z = torch.Tensor.mul_(y, 2)
    return y in set([q]) and z in set([q])


for _fn, _label in [(_in_set_after_inplace, "membership_by_identity_not_value"),
                    (_in_set_two_inplace, "membership_of_inplace_results")]:
    S.add("test_in_set_would_fail_broadcast" if "identity" in _label else "test_in_set_inplace", _label, _fn,
          [(torch.zeros(5), torch.zeros(5, 10)), lambda: (lambda t: (t, t))(torch.zeros(5))],
          count=True, frames=2)


_NAMES: list = []


@torch.compiler.disable
def _record_name(g):
    _NAMES.append(g.__name__)


@S.case("test_reconstructed_name", (), fullgraph=False, setup=_NAMES.clear, state=lambda: list(_NAMES))
def local_function_name_passed_to_disabled_call():
    def helper_fn():
        return ()

    _record_name(helper_fn)


def _zip_strict(x, ys, zs):
    x = x.clone()
    for y, z in zip(ys, zs, strict=True):
        x += y * z
    return x


S.add("test_zip_strict", "zip_strict_equal_lengths", _zip_strict, [(torch.ones(3), [1.0, 2.0], [3.0, 4.0])],
      fullgraph=False)
S.add("test_zip_strict", "zip_strict_unequal_lengths_raises", _zip_strict,
      [(torch.ones(3), [1.0], [3.0, 4.0])], fullgraph=False)


def _reads_own_attribute(x):
    if _reads_own_attribute.flag:
        return torch.relu(x - 1)
    return torch.abs(x * 5)


def _set_flag(v):
    def setup():
        _reads_own_attribute.flag = v
    return setup


_reads_own_attribute.flag = True
S.add("test_fn_with_attr", "function_attribute_true", _reads_own_attribute, [(torch.arange(3.0),)],
      setup=_set_flag(True), count=True, frames=1)
S.add("test_fn_with_attr", "function_attribute_false", _reads_own_attribute, [(torch.arange(3.0),)],
      setup=_set_flag(False), count=True, frames=1)


class _Shown:
    def __str__(self):
        return "shown"


class _Plain:
    pass


@S.case("test_str_handler_for_user_defined_object", (torch.ones(2),))
def str_of_object_with_dunder_str(x):
    return x + 1, str(_Shown())


@S.case("test_str_handler_for_user_defined_object", (torch.ones(2),))
def str_of_object_default_repr_class_part(x):
    return x - 1, str(_Plain()).split(" object at")[0]


def _pybind_flag(x, obj):
    return torch.cos(x) if obj.result else torch.sin(x)


S.add("test_pybind_object", "pybind_object_attribute_true", _pybind_flag,
      [lambda: (torch.arange(3.0), torch._C._dynamo.guards.GuardDebugInfo(True, ["a==1"], 0))])
S.add("test_pybind_object", "pybind_object_attribute_false", _pybind_flag,
      [lambda: (torch.arange(3.0), torch._C._dynamo.guards.GuardDebugInfo(False, ["a==1"], 1))])


test_behaviour = S.pytest_function()
