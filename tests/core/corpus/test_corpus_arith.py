"""Corpus: arithmetic, comparison, unary and in-place operators on tensors and Python scalars."""
from __future__ import annotations

import math
import operator

import numpy as np

import pytest
import torch

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


X23 = (t(2, 3),)
X23_Y23 = (t(2, 3), t(2, 3, seed=7))
SHAPES = [(t(2, 3),), (t(2, 3, seed=3),), (t(4, 5),)]  # new values, then a new shape: 2 graphs

# -- binary operators between tensors ---------------------------------------------------------
add("add_sub_mul_div", lambda x, y: (x + y, x - y, x * y, x / y), [X23_Y23, (t(4), t(4, seed=1))], 2)
add("floordiv_mod_pow", lambda x, y: (x // (y.abs() + 1), x % 3, x.abs() ** y.abs().clamp(max=2)),
    [X23_Y23], 1)
# a numpy ufunc of Python values is a constant, as torch.compile folds it (one graph per value of n)
add("numpy_ufunc_on_python_values", lambda x, n: x * float(np.sqrt(n)), [(t(3), 4), (t(3), 9)], 2)
add("matmul_op", lambda a, b: a @ b, [(t(2, 3), t(3, 4)), (t(5, 3), t(3, 2))], 2)
add("broadcast_add", lambda x, y: x + y, [(t(2, 3), t(3)), (t(4, 1), t(1, 5))], 2)
add("chained_arith", lambda x: ((x + 1) * 2 - x / 4) ** 2, SHAPES, 2)
add("bitwise_int", lambda a, b: (a & b, a | b, a ^ b, ~a, a << 1, a >> 1),
    [(t(3, 4, dtype=torch.int64), t(3, 4, dtype=torch.int64, seed=5))], 1)
add("bitwise_bool", lambda a, b: (a & b, a | b, a ^ b, ~a),
    [(t(5, dtype=torch.bool), t(5, dtype=torch.bool, seed=9))], 1)

# -- tensor with Python scalars -----------------------------------------------------------------
add("tensor_scalar_right", lambda x: (x + 2, x * 0.5, x - True, x / 3, x ** 2), SHAPES, 2,
    breaks="with a bool tensor is not supported")  # eager raises: the graph breaks at `x - True`
add("tensor_scalar_left", lambda x: (2 + x, 0.5 * x, 1 - x, 3 / (x.abs() + 1), 2 ** x), SHAPES, 2)
add("scalar_arg_into_tensor_op", lambda x, a: x * a + a, [(t(3), 2.0), (t(3), 3.0), (t(3), 2.0)], 2)
add("int_scalar_arg", lambda x, n: x * n, [(t(3), 2), (t(3), 5)], 2)
add("bool_scalar_arg", lambda x, flag: x + flag, [(t(3), True), (t(3), False)], 2)

# -- Python scalar arithmetic folded at capture time -------------------------------------------
add("python_int_arith", lambda x, a, b: x * (a * b + a // b - a % b + (a ** 2)),
    [(t(3), 7, 3), (t(3), 8, 3)], 2)
add("python_float_math", lambda x, a: x * math.sqrt(a) + math.pi + math.floor(a * 1.5),
    [(t(3), 4.0), (t(3), 9.0)], 2)
add("python_divmod_abs_round", lambda x, a: x * sum(divmod(a, 3)) + abs(-a) + round(a / 3, 1),
    [(t(2), 10), (t(2), 11)], 2)
add("python_only_no_tensor_work", lambda a, b: (a + b, a * b, a - b, a / b, a // b), [(3, 4), (5, 2)], 0)
add("python_compare_chain", lambda x, a: x + (1 if 0 < a <= 10 else -1), [(t(2), 5), (t(2), 50)], 2)
add("operator_module_fns", lambda x, y: (operator.add(x, y), operator.mul(x, 2), operator.truediv(x, 4),
                                        operator.lt(x, y), operator.getitem(x, 0)), [X23_Y23], 1)
add("operator_neg_on_tensor", lambda x: (operator.neg(x), operator.abs(x)), [X23], 1)

# -- comparisons on tensors ----------------------------------------------------------------------
add("tensor_compare_ops", lambda x, y: (x < y, x <= y, x == y, x != y, x > y, x >= y), [X23_Y23], 1)
add("tensor_compare_scalar", lambda x: (x > 0, x == 1.5, 0.0 < x), SHAPES, 2)
add("torch_where_compare", lambda x, y: torch.where(x > y, x, y), [X23_Y23], 1)

# -- unary --------------------------------------------------------------------------------------
add("unary_neg_abs", lambda x: (-x, abs(x), -(-x)), SHAPES, 2)
# +x is x itself (torch.positive returns its input): no graph, the caller gets x back, as in eager
add("unary_pos_tensor", lambda x: +x, SHAPES, 0)
add("unary_pos_python", lambda x, a: x * +a, [(t(2), 2), (t(2), -3)], 2)
# flag True returns the input unchanged: no tensor work, so only one graph
add("unary_not_on_python", lambda x, flag: x * 2 if not flag else x, [(t(2), False), (t(2), True)], 1)

# -- in-place operators --------------------------------------------------------------------------
def iadd_intermediate(x):
    y = x * 2
    y += 1
    y *= x
    y -= 0.5
    y /= 2
    return y


add("inplace_operators_intermediate", iadd_intermediate, SHAPES, 2)


def inplace_on_input(x):
    x += 1
    return x


add("inplace_operator_on_input", inplace_on_input, [(t(3),), (t(3, seed=2),)], 1)


def inplace_method_on_input(x, y):
    x.add_(y)
    x.mul_(2)
    return x.sum()


add("inplace_method_on_input", inplace_method_on_input, [X23_Y23], 1)


def python_augassign(x, n):
    k = n
    k += 2
    k *= 3
    k //= 2
    k -= 1
    return x * k


add("python_augassign", python_augassign, [(t(2), 1), (t(2), 4)], 2)

# -- dtypes --------------------------------------------------------------------------------------
add("half_arith", lambda x, y: (x + y) * 2 - y, [(t(3, 4, dtype=torch.float16), t(3, 4, dtype=torch.float16, seed=1))], 1)
add("bfloat16_arith", lambda x: torch.relu(x * 3) - 1, [(t(3, 4, dtype=torch.bfloat16),)], 1)
add("float64_arith", lambda x: torch.exp(x) / (1 + x ** 2), [(t(3, dtype=torch.float64),)], 1)
add("dtype_recompile", lambda x: x * 2 + 1, [(t(4),), (t(4, dtype=torch.float64),), (t(4, dtype=torch.int32),)], 3)
add("int_true_division", lambda a: a / 2, [(t(5, dtype=torch.int64),)], 1)
add("mixed_dtype_promotion", lambda a, b: a + b, [(t(3, dtype=torch.int32), t(3)), (t(3, dtype=torch.float16), t(3, dtype=torch.float64))], 2)


@pytest.mark.parametrize("case", params(CASES))
def test_arith(case):
    run_case(case)
