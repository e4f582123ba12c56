"""Behaviours of torch's ``test/dynamo/test_unspec.py``, in our own programs: Python and numpy scalars
passed in without recompiling for every value (``dynamic=True`` stands for the file's
``assume_static_by_default=False``), Python ``random`` inside captured code drawing the numbers eager
draws, symbolic sizes used as Python ints, and scalar/tensor conversions."""
from __future__ import annotations

import math
import random

import numpy as np
import torch
import torch.nn.functional as F

from behaviour_harness import Suite

SUITE = S = Suite("test_unspec")


def _seeded(seed, *args):
    def make():
        random.seed(seed)
        return args
    return make


@S.case("test_numpy_correctness", (torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64),
                                   torch.ones([2, 2], dtype=torch.int64), np.int64(12)), dynamic=True, fullgraph=False)
def numpy_views_of_tensor_arguments(x, y, z):
    xy = [x + y, y, False]
    nx = x.numpy()
    ny = y.numpy()
    return {"x": x, "z": z, "a": ny.sum(), "b": xy, "c": ny[0][0] / 68, "d": nx.sum(), "e": nx + ny}, x + ny.sum() + z


@S.case("test_no_recompilations", *[(torch.ones(2, 2, dtype=torch.float64), np.int64(i)) for i in range(4)],
        dynamic=True, count=True, frames=1, fullgraph=False)
def numpy_int_arguments_share_a_graph(x, y):
    return {"a": x * 2, "b": y / 2}


@S.case("test_feed_random_values_into_graph_only", _seeded(1, [2, 3]), dynamic=True, fullgraph=False)
def python_random_scales_new_tensor(shape):
    torch.manual_seed(7)
    return torch.randn(shape) * random.randint(30, 100)


@S.case("test_random_values_with_graph_break", _seeded(1, torch.tensor([[1.0, 2.0], [3.0, 4.0]])), dynamic=True,
        fullgraph=False)
def python_random_around_breaks(x):
    r1 = random.random()
    y = x + random.uniform(10, 20)
    y.sum().item()
    r2 = random.randint(2, 18)
    y.sum().item()
    return y + r1, r2


@S.case("test_multiple_consecutive_random_calls_before_graph", _seeded(1, torch.ones(2, 2)), dynamic=True,
        fullgraph=False)
def python_random_sizes_new_tensor(x):
    d1 = random.randrange(start=0, stop=4)
    d2 = random.randrange(start=0, stop=4)
    d3 = random.randrange(start=0, stop=4)
    return x + 2, torch.zeros(d1, d2, d3).shape


@S.case("test_compiled_random_calls_are_random", _seeded(3, torch.ones(2)), (torch.ones(2),), (torch.ones(2),))
def python_random_drawn_on_every_call(x):
    return (x + 1) * random.uniform(0, 1)


@S.case("test_random_call_with_while_loop", _seeded(1, torch.ones(4)), _seeded(10, torch.ones(4)), fullgraph=False)
def python_random_in_while_condition(x):
    d1 = random.randrange(start=0, stop=3)
    d2 = d1
    while d1 == d2:
        d2 = random.randrange(start=0, stop=3)
    return x * 2, d1, d2


@S.case("test_builtin_getitem", (list(range(30)), 27), dynamic=True, fullgraph=False)
def int_argument_indexes_python_list(x, idx):
    return torch.zeros(idx), x[idx], x[idx:]


def _specialise_on_two(x, y):
    x = x + y
    if y == 2:
        return x - 1
    return x + 1


S.add("test_use_and_specialize", "int_used_in_branch_specialises", _specialise_on_two,
      [(torch.tensor([5]), 2), (torch.tensor([6]), 2), (torch.tensor([5]), 3), (torch.tensor([4]), 3)],
      dynamic=True, count=True, frames=2)


def _plus(x, y):
    return x + y


S.add("test_no_recompiles", "int_argument_values_share_a_graph", _plus,
      [(torch.tensor([5]), 100), (torch.tensor([4]), 200), (torch.tensor([3]), 300)], dynamic=True, count=True, frames=1)


def _prod_keepdim(t):
    return torch.prod(t, 3, keepdim=True)


S.add("test_no_recompiles_prod_backward", "prod_over_changing_shapes_one_graph", _prod_keepdim,
      [lambda s=s: (torch.linspace(0.5, 1.5, math.prod(s)).view(s).requires_grad_(),)
       for s in [(4, 5, 3, 2), (4, 3, 5, 2), (4, 2, 4, 2)]],
      dynamic=True, count=True, frames=1, post=lambda out, t: (out, torch.autograd.grad(out.sum(), t)[0]))


@S.case("test_unspec_float_precision", (torch.rand([3, 21, 32]), 1.873536229133606), dynamic=True, fullgraph=False)
def interpolate_with_float_scale(image, scale):
    return F.interpolate(image[None], size=None, scale_factor=scale, mode="bilinear", recompute_scale_factor=True,
                         align_corners=False)[0].shape


@S.case("test_shape_graph_break", (torch.ones(6),), fullgraph=False, dynamic=True)
def size_kept_across_break(x):
    s = x.size()
    print("", end="")
    return x + torch.zeros(s)


@S.case("test_isinstance_symint", (torch.ones(6),), (torch.ones(9),), fullgraph=False, dynamic=True)
def size_is_an_int(x):
    assert isinstance(x.size(0), int)
    return x * 2


@S.case("test_mark_01_dynamic", (torch.ones(1),), dynamic=True, fullgraph=False)
def size_one_input_dynamic(x):
    return x * 2


_KERNEL = torch.linspace(-1, 1, 4).view(1, 1, 4)


@S.case("test_conv1d_symint_padding", (torch.ones(1, 1, 35),), (torch.ones(1, 1, 50),), fullgraph=False)
def conv_padding_from_size_arithmetic(x):
    pad = math.ceil((_KERNEL.shape[-1] + x.shape[-1] % 2) / 2) - 1
    return F.conv1d(x, _KERNEL, padding=pad, stride=2)


@S.case("test_rshift_dynamic", (torch.tensor([4, 4, 16, 32], dtype=torch.uint8),), dynamic=True)
def right_shift_uint8(t):
    return (t >> 2).to(torch.long)


_SCALARS = {"capture_scalar_outputs": True}
for _i, _body in enumerate([lambda v: torch.tensor([v.item()]), lambda v: torch.tensor([[v.item()], [2.0]]),
                            lambda v: torch.tensor(v.item()), lambda v: torch.tensor((v.item(),))]):
    S.add("test_symfloat_to_tensor", f"tensor_from_item_form_{_i}", _body, [(torch.tensor([0.25]),)], config=_SCALARS)


def _tensor_of_tensors(kind):
    def fn():
        if kind == 0:
            a = torch.tensor([[[123]]])
            return torch.tensor([a, a])
        if kind == 1:
            a = torch.tensor(123)
            return torch.tensor([a, a])
        if kind == 2:
            return torch.tensor([torch.tensor(123), torch.tensor([[[456]]])])
        a = np.array([1, 2])
        return torch.tensor([a, a])
    return fn


for _k in range(4):
    S.add("test_to_tensor", f"tensor_of_tensors_form_{_k}", _tensor_of_tensors(_k), [()])


@S.case("test_sym_int_conversion", (torch.ones(2, 3),))
def int_of_size_comparison(x):
    return x * int(x.size(0) == 0)


@S.case("test_sum_dimlist_spec", (torch.ones(4, 5, 3, 3), (-1, 1, 0, 2)), dynamic=True)
def sum_over_tuple_of_dims(inputs, dim):
    return torch.sum(inputs, dim)


def _ones_of_max_item(x):
    return torch.ones(max(x.item(), 64))


S.add("test_item_max", "ones_of_max_of_item", _ones_of_max_item, [(torch.tensor([10]),), (torch.tensor([100]),)],
      config=_SCALARS)


@S.case("test_argmin_coerces_symint_to_intlist_spec", (torch.linspace(0, 1, 27).view(3, 3, 3), 2), dynamic=True)
def amin_with_int_dim(x, dim):
    return torch.amin(x, dim=dim, keepdim=True)


@S.case("test_exponential", (torch.ones(2, 3), {"lambd": 10, "generator": None}), dynamic=True)
def exponential_inplace_with_kwargs(inputs, kwargs):
    return inputs.exponential_(**kwargs)


def _checks_then_add(x):
    torch._check(x.size(0) != 3)
    torch._check(x.size(0) != 4)
    return x + 2


S.add("test_symbol_guard_limit_before_specialize", "size_checks_keep_one_graph", _checks_then_add,
      [(torch.ones(12),), (torch.ones(13),), (torch.ones(14),)], dynamic=True, count=True, frames=1, fullgraph=False)


def _times_default(x, i=8):
    return x * i


@S.case("test_defaults", (torch.ones(2, 3, 4),), dynamic=True, fullgraph=False)
def default_int_argument_stays_static(x):
    return _times_default(x)


def _float_branch(x, y):
    if y == 5.0:
        return x + 2
    return x + y


S.add("test_unspec_float_input", "float_argument_guarded_on_compared_value", _float_branch,
      [(torch.ones(3), 3.0), (torch.ones(3), 4.0), (torch.ones(3), 5.0), (torch.ones(3), math.nan)], count=True,
      config={"specialize_float": False})


@S.case("test_unspec_float_output", (torch.ones(3), 3.0), (torch.ones(3), 4.0), config={"specialize_float": False})
def float_argument_returned_doubled(x, y):
    return x + 1, y * 2


def _greater_than_two(y):
    return y > 2


@S.case("test_data_dependent_evaluate_expr_graph_break", (torch.tensor([3.0]),), count=True, frames=2,
        fullgraph=False, config=_SCALARS)
def branch_on_item_inside_helper(x):
    x = x + 1
    y = x.item()
    if _greater_than_two(y):
        return x * 2
    return x * 3


@S.case("test_prune_torch_check", (torch.ones(8, 5), 8), dynamic=True)
def torch_checks_on_int_and_size(x, y):
    torch._check(y + 5 == 13)
    torch._check(x.size(0) == 8)


@S.case("test_split_aot_autograd", lambda: (torch.linspace(0, 1, 10).requires_grad_(), torch.tensor([7, 3])),
        config=_SCALARS)
def split_by_tolist_sizes(x, i):
    a, b = i.tolist()
    return torch.split(x, [a, b])


def _bool_tensor(x):
    y = torch.zeros((x.size(0) // 13) * 13)
    return torch.tensor(y.numel() == 0)


S.add("test_bool_tensor_ctor", "tensor_of_bool_from_numel", _bool_tensor, [(torch.ones(8),), (torch.ones(13),)],
      dynamic=True)

S.torch_differs("torch.compile returns numpy float64 results as float32 arrays",
                "numpy_views_of_tensor_arguments", "numpy_int_arguments_share_a_graph")

test_behaviour = S.pytest_function()
