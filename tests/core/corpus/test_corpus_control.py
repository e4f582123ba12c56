"""Corpus: control flow decided by Python values or shapes; comprehensions; builtins."""
from __future__ import annotations

import pytest
import torch

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


# -- if/else on Python values and shapes ---------------------------------------------------------
def if_on_flag(x, flag):
    if flag:
        return x + 1
    return x - 1


add("if_on_bool_arg", if_on_flag, [(t(3), True), (t(3), False), (t(3), True)], 2)


def if_on_shape(x):
    if x.shape[0] > 2:
        return x.sum(0)
    elif x.dim() == 1:
        return x * 2
    else:
        return x.t()


add("if_on_shape", if_on_shape, [(t(4, 3),), (t(2),), (t(2, 5),)], 3)


def if_on_dtype(x):
    if x.dtype == torch.float64:
        return x.float()
    if x.dtype.is_floating_point:
        return x * 2
    return x + 1


add("if_on_dtype", if_on_dtype, [(t(3),), (t(3, dtype=torch.float64),), (t(3, dtype=torch.int64),)], 3)


def if_on_none(x, bias=None):
    y = x * 2
    if bias is not None:
        y = y + bias
    return y


add("if_on_none_default", if_on_none, [(t(3),), (t(3), t(3, seed=1)), {"args": (t(3),), "kwargs": {"bias": None}}], 2)


def ternary_and_or(x, a, b):
    scale = a or 2
    off = b and 3
    return x * scale + off if a > 0 else x


add("ternary_and_or", ternary_and_or, [(t(2), 0, 1), (t(2), 4, 0), (t(2), -1, 5)], 1)  # a <= 0 returns x: no graph


def if_on_requires_grad(x):
    if x.requires_grad:
        return x * 2
    return x + 2


add("if_on_requires_grad", if_on_requires_grad, [(t(3),), (t(3).requires_grad_(),)], 2)


def if_on_numel_and_ndim(x):
    if x.numel() > 6 and x.ndim == 2:
        return x.mean(1)
    return x.flatten()


# a 1-d x.flatten() is x itself: that call returns x, no graph
add("if_on_numel_ndim", if_on_numel_and_ndim, [(t(3, 3),), (t(2, 2),), (t(8),)], 2)


def is_comparisons(x, mode):
    if mode is None:
        return x
    if mode == "double":
        return x * 2
    return x * 3


add("string_and_none_mode", is_comparisons, [(t(2), None), (t(2), "double"), (t(2), "triple")], 2)

# -- loops ---------------------------------------------------------------------------------------
def for_range(x, n):
    for i in range(n):
        x = x * 2 + i
    return x


add("for_range_unrolled", for_range, [(t(3), 3), (t(3), 1), (t(3), 3)], 2)


def for_shape_loop(x):
    out = x[0]
    for i in range(1, x.shape[0]):
        out = out + x[i]
    return out


add("for_over_shape", for_shape_loop, [(t(4, 2),), (t(3, 2),)], 2)


def while_loop(x, n):
    i = 0
    while i < n:
        x = x + i
        i += 1
    return x, i


add("while_python_counter", while_loop, [(t(2), 3), (t(2), 0)], 1)


def break_continue(x, items):
    acc = x
    for v in items:
        if v < 0:
            continue
        if v > 10:
            break
        acc = acc + v
    return acc


add("break_continue", break_continue, [(t(2), [1, -2, 3, 20, 4]), (t(2), [5, 6])], 2)


def nested_loops(x):
    out = []
    for i in range(2):
        for j in range(3):
            if j == 1:
                continue
            out.append(x * i + j)
    return out


add("nested_loops", nested_loops, [(t(2),), (t(3),)], 2)


def for_else(x, items):
    for v in items:
        if v == 0:
            x = x * 0
            break
    else:
        x = x + 100
    return x


add("for_else", for_else, [(t(2), [1, 2]), (t(2), [1, 0, 2])], 2)


def loop_over_tensor_rows(x):
    total = torch.zeros(x.shape[1])
    for row in x:
        total = total + row
    return total


add("iterate_tensor_rows", loop_over_tensor_rows, [(t(3, 2),)], 1)


def loop_over_list_of_tensors(xs):
    out = xs[0]
    for x in xs[1:]:
        out = torch.maximum(out, x)
    return out


add("loop_list_of_tensors", loop_over_list_of_tensors, [([t(3), t(3, seed=1), t(3, seed=2)],), ([t(3), t(3, seed=4)],)], 2)


def while_true_break(x):
    n = 0
    while True:
        n += 1
        x = x * 0.5
        if n >= 3:
            break
    return x


add("while_true_break", while_true_break, [(t(2),)], 1)

# -- comprehensions ------------------------------------------------------------------------------
def comp(name, fn, args, graphs):
    # 3.11 comprehensions are nested code objects with an argument named '.0' (inspect.signature
    # calls it 'implicit0'): these cases guard the binding of that argument in calls._bind
    return add(name, fn, args, graphs)


def genexpr(name, fn, args, graphs):
    # generator expressions consumed at once (sum(...), tuple(...)) are inlined
    return add(name, fn, args, graphs)


comp("list_comprehension", lambda x: [x * i for i in range(3)], [(t(2),)], 1)
comp("list_comp_filter", lambda xs: [x.sum() for x in xs if x.dim() == 1], [([t(2), t(2, 2), t(3)],)], 1)
comp("dict_comprehension", lambda x: {f"k{i}": x + i for i in range(2)}, [(t(2),)], 1)
comp("set_comprehension_python", lambda x, n: x * len({i % 3 for i in range(n)}), [(t(2), 5), (t(2), 2)], 2)
genexpr("generator_expression_sum", lambda x: sum(x * i for i in range(4)), [(t(3),)], 1)
comp("nested_comprehension", lambda x: [[x[i] * j for j in range(2)] for i in range(x.shape[0])], [(t(2, 3),)], 1)
genexpr("tuple_from_genexpr", lambda x: tuple(x + i for i in range(2)), [(t(2),)], 1)
comp("comprehension_over_zip", lambda xs, ys: [a * b for a, b in zip(xs, ys)],
    [([t(2), t(2, seed=1)], [t(2, seed=2), t(2, seed=3)])], 1)



def try_except(x):
    try:
        y = x * 2
    except RuntimeError:
        y = x
    return y


# 3.11 try blocks have no setup instruction: the body is captured when nothing raises
add("try_except_no_raise", try_except, [(t(2),)], 1)


def with_no_grad(x):
    with torch.no_grad():
        y = x * 2
    return y + x, y.requires_grad


add("with_no_grad_block", with_no_grad, [(t(2).requires_grad_(),), (t(2),)], 2)


def gen_fn(x, n):
    for i in range(n):
        yield x * i


add("generator_function_consumed", lambda x: list(gen_fn(x, 3)) + [sum(gen_fn(x, 2))], [(t(3),)], 1)


def gen_with_return_and_next(x):
    it = iter([x, x + 1, x + 2])
    first = next(it)
    rest = list(it)
    return first, rest, next(it, None)


add("iter_next_default", gen_with_return_and_next, [(t(2),)], 1)

# -- builtins --------------------------------------------------------------------------------
add("len_of_list_and_tensor", lambda xs: xs[0] * len(xs) + len(xs[0]), [([t(3), t(3)],), ([t(4)],)], 2)
add("isinstance_checks", lambda x, v: x * 2 if isinstance(v, int) and isinstance(x, torch.Tensor) else x + v,
    [(t(2), 3), (t(2), 1.5)], 2)
add("isinstance_tuple_of_types", lambda v, x: x if isinstance(v, (list, tuple)) else x * v,
    [(2, t(2)), ((1,), t(2)), ([1], t(2))], 1)


def enumerate_loop(xs):
    out = 0
    for i, x in enumerate(xs):
        out = out + x * i
    return out


add("enumerate_loop", enumerate_loop, [([t(2), t(2, seed=1), t(2, seed=2)],)], 1)
comp("enumerate_start", lambda xs: [x * i for i, x in enumerate(xs, start=1)], [([t(2), t(2, seed=1)],)], 1)
genexpr("zip_genexpr", lambda xs, ws: sum(x * w for x, w in zip(xs, ws)), [([t(2), t(2, seed=1)], [0.5, 2.0])], 1)


def enumerate_start_loop(xs):
    out = []
    for i, x in enumerate(xs, start=1):
        out.append(x * i)
    return out


add("enumerate_start_loop", enumerate_start_loop, [([t(2), t(2, seed=1)],)], 1)


def reversed_loop(x):
    out = []
    for i in reversed(range(x.shape[0])):
        out.append(x[i])
    return out


add("reversed_loop", reversed_loop, [(t(3, 2),), (t(2, 2),)], 2)


def zip_loop(xs, ws):
    acc = 0
    for x, w in zip(xs, ws):
        acc = acc + x * w
    return acc


add("zip_loop", zip_loop, [([t(2), t(2, seed=1)], [0.5, 2.0])], 1)
add("min_max_ints", lambda x, a, b: x * max(a, b) - min(a, b, 0) + max([a, b, 7]), [(t(2), 3, 9), (t(2), 10, 1)], 2)
add("min_max_shapes", lambda x: x.reshape(min(x.shape), max(x.shape)), [(t(2, 3),), (t(4, 2),)], 2)
add("sum_python_list", lambda x, vals: x * sum(vals), [(t(2), [1, 2, 3]), (t(2), [0.5])], 2)
add("sum_of_tensors_list", lambda xs: sum(xs), [([t(2), t(2, seed=1), t(2, seed=2)],)], 1)
add("any_all_python", lambda x, flags: x * 2 if any(flags) and not all(flags) else x,
    [(t(2), [True, False]), (t(2), [True, True]), (t(2), [False])], 1)
add("sorted_ints", lambda x, dims: x.permute(*sorted(dims, reverse=True)), [(t(2, 3, 4), [0, 2, 1])], 1)
add("sorted_shape", lambda x: x.reshape(sorted(x.shape)), [(t(3, 2),)], 1)
comp("reversed_range", lambda x: [x[i] for i in reversed(range(x.shape[0]))], [(t(3, 2),)], 1)
add("map_filter_python", lambda x, vals: x * sum(map(lambda v: v * 2, filter(lambda v: v > 0, vals))),
    [(t(2), [1, -1, 3])], 1)
add("getattr_hasattr_builtin", lambda x: getattr(x, "shape")[0] * (2 if hasattr(x, "dtype") else 3) + x,
    [(t(2),)], 1)
add("getattr_default", lambda x, obj: x * getattr(obj, "missing_attr", 5), [(t(2), object())], 1)
add("int_float_bool_of_python", lambda x, a: x * int(a) + float(a) + bool(a), [(t(2), 2.7), (t(2), 0.0)], 2)
add("str_formatting", lambda x, n: {f"out_{n}": x * n, "name": "v%d" % n, "s": str(n) + "!"},
    [(t(2), 1), (t(2), 2)], 2)


def set_methods_local(x, vals):
    seen = set()
    for v in vals:
        seen.add(v)
    return x * len(seen)


add("set_methods_local", set_methods_local, [(t(2), [1, 1, 2]), (t(2), [3])], 2)
add("set_literal_ops", lambda x, n: x * len({1, 2, n} | {5}), [(t(2), 1), (t(2), 9)], 2)
add("range_len_and_index", lambda x: x * len(range(2, 10, 3)) + range(5)[-1], [(t(2),)], 1)
add("callable_and_type", lambda x, f: x * 2 if callable(f) and type(x) is torch.Tensor else x,
    [(t(2), abs), (t(2), 3)], 1)


@pytest.mark.parametrize("case", params(CASES))
def test_control(case):
    run_case(case)
