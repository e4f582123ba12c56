"""Corpus: inlining user functions — closures, defaults, *args/**kwargs, nested functions, lambdas,
functools.reduce, ember-compiled callees, methods of plain objects."""
from __future__ import annotations

import functools
import math

import pytest
import torch
import torch.nn.functional as F

import ember
from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


def helper(x, y):
    return x * y + 1


def helper_defaults(x, scale=2.0, *, shift=0.5):
    return x * scale + shift


def helper_varargs(*xs, **kw):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out * kw.get("scale", 1.0), len(xs), sorted(kw)


def deep3(x):
    return torch.sin(x) + 1


def deep2(x):
    return deep3(x) * 2


def deep1(x):
    return deep2(x) - deep3(x)


add("inline_global_function", lambda x, y: helper(x, y) + helper(y, x), [(t(3), t(3, seed=1))], 1)
add("inline_defaults", lambda x: helper_defaults(x) + helper_defaults(x, 3.0, shift=-1.0), [(t(3),)], 1)
add("inline_kwargs_call", lambda x: helper_defaults(scale=0.5, x=x), [(t(3),)], 1)
add("inline_varargs_kwargs", lambda a, b, c: helper_varargs(a, b, c, scale=2.0, z=1),
    [(t(2), t(2, seed=1), t(2, seed=2))], 1)
add("inline_star_call", lambda xs, kw: helper_varargs(*xs, **kw), [([t(2), t(2, seed=1)], {"scale": 3.0})], 1)
add("inline_nested_depth", deep1, [(t(4),)], 1)


def closure_factory(scale):
    def inner(x):
        return x * scale
    return inner


CLOSED = closure_factory(3.0)
add("call_outer_closure", lambda x: CLOSED(x) + 1, [(t(3),)], 1)


def make_closure_inside(x, k):
    offset = k * 2

    def f(y):
        return y + offset

    return f(x) * f(x)


add("closure_made_inside", make_closure_inside, [(t(3), 1), (t(3), 2)], 2)


def closure_over_tensor(x):
    y = x * 2

    def f(z):
        return z + y

    return f(x), f(y)


add("closure_over_tensor", closure_over_tensor, [(t(3),)], 1)


def nonlocal_update(x):
    count = 0

    def bump(v):
        nonlocal count
        count += 1
        return v * count

    return bump(x) + bump(x), count


add("nonlocal_counter", nonlocal_update, [(t(3),)], 1)


def nested_def_defaults(x):
    def g(a, b=2, *rest, c=3, **extra):
        return a * b + c + len(rest) + len(extra)

    return g(x), g(x, 3, 4, 5, c=1, d=0)


add("nested_def_with_defaults", nested_def_defaults, [(t(2),)], 1)
add("lambda_inside", lambda x: (lambda y, k=3: y * k)(x) + (lambda: 1)(), [(t(2),)], 1)
add("lambda_as_argument", lambda x, f: f(x) + 1, [(t(2), lambda v: v * 2), (t(2), torch.relu)], 2)
add("functools_reduce_tensors", lambda xs: functools.reduce(lambda a, b: a * b, xs), [([t(2), t(2, seed=1), t(2, seed=2)],)], 1)
add("functools_reduce_initial", lambda xs: functools.reduce(torch.add, xs, torch.zeros(2)), [([t(2), t(2, seed=1)],)], 1)
add("functools_reduce_ints", lambda x, dims: x.reshape(functools.reduce(lambda a, b: a * b, dims)),
    [(t(2, 3), [2, 3]), (t(2, 2), (4, 1))], 2)
add("functools_partial_call", lambda x: functools.partial(helper_defaults, scale=3.0)(x), [(t(2),)], 1)
PARTIAL = functools.partial(helper_defaults, scale=3.0)
add("functools_partial_global", lambda x: PARTIAL(x), [(t(2),)], 1)
add("torch_functional_as_value", lambda x, act: act(x), [(t(3), F.relu), (t(3), torch.tanh), (t(3), F.relu)], 2)
add("math_helpers_in_callee", lambda x: helper_defaults(x, scale=math.sqrt(2.0)), [(t(2),)], 1)


def recursive_pow(x, n):
    if n == 0:
        return x
    return recursive_pow(x * 2, n - 1)


add("bounded_recursion", recursive_pow, [(t(2), 3), (t(2), 1)], 2)


def kw_only_and_pos_only(x, /, y, *, z=1):
    return x * y + z


add("pos_only_kw_only", lambda x: kw_only_and_pos_only(x, 2, z=3) + kw_only_and_pos_only(x, y=1), [(t(2),)], 1)


@ember.compile(backend="eager")
def already_compiled(x):
    return x.cos() * 2


add("call_ember_compiled_function", lambda x: already_compiled(x) + 1, [(t(3),)], 1)


class Scaler:
    factor = 2.0

    def __init__(self, bias):
        self.bias = bias

    def __call__(self, x):
        return x * self.factor + self.bias

    def method(self, x):
        return x * self.factor + self.bias - 1

    @staticmethod
    def static(x):
        return x.abs()

    @classmethod
    def make(cls, x):
        return x * cls.factor


SCALER = Scaler(0.5)
add("callable_object_call", lambda x: SCALER(x), [(t(2),)], 1)
add("object_method_static_class", lambda x, s: s.method(x) + Scaler.static(x) + s.make(x), [(t(2), Scaler(1.0))], 1)
add("bound_method_as_value", lambda x, m: m(x), [(t(2), SCALER.method)], 1)


def uses_global_tensor_free(x):
    return torch.nn.functional.normalize(x, dim=-1) + F.softplus(x)


add("torch_nn_functional_calls", uses_global_tensor_free, [(t(2, 3),)], 1)
add("map_with_user_function", lambda xs: list(map(helper_defaults, xs)), [([t(2), t(2, seed=1)],)], 1)
add("sorted_with_key_python", lambda x, names: [x * len(n) for n in sorted(names, key=len)],
    [(t(2), ["ccc", "a", "bb"])], 1)


def returns_function_result_tuple(x):
    def two(v):
        return v + 1, v - 1

    a, b = two(x)
    return a * b


add("callee_returns_tuple", returns_function_result_tuple, [(t(2),)], 1)


def default_mutable_list(x, acc=None):
    acc = [] if acc is None else acc
    acc = acc + [x]
    return torch.stack(acc)


add("default_none_list", default_mutable_list, [(t(2),), (t(2), [t(2, seed=1)])], 2)


@pytest.mark.parametrize("case", params(CASES))
def test_functions(case):
    run_case(case)
