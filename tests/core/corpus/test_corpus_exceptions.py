"""Corpus: exceptions raised and caught inside captured code (one graph, no break), and
exceptions that leave it (Python raises them: the same exception as eager).

PYTEST_DONT_REWRITE: the `assert` statements of the cases must stay plain Python.
"""
from __future__ import annotations

import collections

import pytest
import torch

import ember
from harness import Case, CountingBackend, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


class MyError(ValueError):
    pass


def raise_caught_as_e(x):
    try:
        raise ValueError("bad")
    except ValueError as e:
        x = x + len(str(e))
    return x * 2


# a new shape, then a new dtype: one graph each
add("raise_caught_as_e", raise_caught_as_e, [(t(3),), (t(2, 2),), (t(3, dtype=torch.float64),)], 3)


def raises_key_error():
    raise KeyError("k")


def raise_in_callee(x):
    try:
        raises_key_error()
    except KeyError:
        x = x + 1
    return x * 3


add("raise_in_inlined_callee", raise_in_callee, [(t(3),), (t(4),)], 2)


def deep(n):
    if n == 0:
        raise IndexError("bottom")
    return deep(n - 1) + 1


def raise_two_frames_down(x, n):
    try:
        x = x * deep(n)
    except IndexError as e:
        x = x - len(e.args[0])
    return x


add("raise_two_frames_down", raise_two_frames_down, [(t(2), 2), (t(2), 3)], 2)


def except_tuple(x, which):
    try:
        if which:
            raise IndexError
        raise KeyError
    except (IndexError, KeyError) as e:
        return x * (2 if isinstance(e, IndexError) else 3)


add("except_tuple_of_classes", except_tuple, [(t(2), True), (t(2), False)], 2)


def except_exception_as_e(x):
    try:
        raise MyError("custom", 3)
    except Exception as e:
        return x * e.args[1] + (1 if isinstance(e, MyError) else 0)


add("except_exception_user_class", except_exception_as_e, [(t(2),)], 1)


def bare_except(x):
    try:
        [1, 2][5]
    except:  # noqa: E722
        x = x + 7
    return x


add("bare_except_index_error", bare_except, [(t(2),)], 1)


def first_matching_clause(x):
    try:
        raise MyError("m")
    except KeyError:
        x = x + 100
    except ValueError:  # MyError is a ValueError
        x = x + 1
    except Exception:
        x = x + 10
    return x


add("first_matching_clause", first_matching_clause, [(t(2),)], 1)


def try_else_finally(x, fail):
    log = []
    try:
        if fail:
            raise RuntimeError("no")
        log.append("body")
    except RuntimeError:
        log.append("except")
        x = x - 1
    else:
        log.append("else")
        x = x + 1
    finally:
        log.append("finally")
        x = x * 2
    return x, log


add("try_else_finally", try_else_finally, [(t(2), True), (t(2), False)], 2)


def finally_runs_on_the_way_out(x):
    log = []

    def inner():
        try:
            raise KeyError("inner")
        finally:
            log.append("finally")

    try:
        inner()
    except KeyError:
        log.append("caught")
    return x + len(log), log


add("finally_runs_on_the_way_out", finally_runs_on_the_way_out, [(t(2),)], 1)


def bare_raise_reraises(x):
    try:
        try:
            raise MyError("first")
        except ValueError:
            x = x + 1
            raise
    except MyError as e:
        x = x * len(str(e))
    return x


add("bare_raise_reraises", bare_raise_reraises, [(t(2),)], 1)


def raise_from(x):
    try:
        try:
            {}["missing"]
        except KeyError as inner:
            raise ValueError("outer") from inner
    except ValueError as e:
        cause, context = e.__cause__, e.__context__
        return x * (2 if isinstance(cause, KeyError) else 3) + (1 if cause is context else 0)


add("raise_from_sets_cause", raise_from, [(t(2),)], 1)


def raise_from_none(x):
    try:
        try:
            raise KeyError
        except KeyError:
            raise ValueError from None
    except ValueError as e:
        return x + (e.__cause__ is None) + e.__suppress_context__ + isinstance(e.__context__, KeyError)


add("raise_from_none", raise_from_none, [(t(2),)], 1)


def raise_class_not_instance(x):
    try:
        raise ZeroDivisionError
    except ArithmeticError as e:
        return x * 2 if type(e) is ZeroDivisionError and e.args == () else x


add("raise_class_not_instance", raise_class_not_instance, [(t(2),)], 1)


def try_in_loop(x, items):
    total = x
    for item in items:
        try:
            if item < 0:
                raise ValueError(item)
            total = total + item
        except ValueError:
            continue
        finally:
            total = total * 1.5
    return total


add("try_in_loop_continue", try_in_loop, [(t(2), [1, -2, 3]), (t(2), [4])], 2)


def dict_key_error(x, d):
    try:
        x = x * d["scale"]
    except KeyError as e:
        x = x + len(e.args)
    return x


add("dict_key_error_caught", dict_key_error, [(t(2), {"scale": 2.0}), (t(2), {"shift": 1.0})], 2)


def missing_key_of_defaultdict(x, d):
    try:
        v = d["k"]
    except KeyError:
        v = [5]
    return x * len(v)


# d["k"] calls __missing__ (no KeyError): the default is made and stored, as in Python
add("defaultdict_missing_is_no_key_error", missing_key_of_defaultdict, [(t(2), collections.defaultdict(list))])


def parse_int(x, text):
    try:
        n = int(text)
    except ValueError:
        n = -1
    return x * n


add("int_parse_value_error", parse_int, [(t(2), "12"), (t(2), "x1")], 2)


def next_stop_iteration(x, xs):
    it = iter(xs)
    out = []
    while True:
        try:
            out.append(next(it) * x)
        except StopIteration:
            break
    return out


add("next_stop_iteration", next_stop_iteration, [(t(2), [1, 2, 3]), (t(2), [])], 1)  # [] needs no graph


def index_error(x, xs):
    try:
        return xs[3] * x
    except IndexError as e:
        return x * len(str(e))


add("tuple_index_error_message", index_error, [(t(2), (1, 2)), (t(2), [1, 2]), (t(2), (1, 2, 3, 4))], 3)


def assert_caught(x, n):
    try:
        assert n > 0, "n must be positive"
    except AssertionError as e:
        return x * len(str(e))
    return x + n


add("assert_caught", assert_caught, [(t(2), 1), (t(2), -1)], 2)


def raise_in_no_grad(x):
    try:
        with torch.no_grad():
            y = x * 2
            raise RuntimeError("stop")
    except RuntimeError:
        y = y + x  # grad mode is back on here
    return y


add("raise_in_no_grad_block", raise_in_no_grad, [(t(2).requires_grad_(),)], 1)


def return_from_except(x):
    try:
        raise KeyError
    except KeyError:
        return x - 1
    finally:
        x = x * 100  # noqa: B012 - runs, but the return value is already taken


add("return_from_except", return_from_except, [(t(2),)], 1)


def generator_catches_its_own(x):
    def gen():
        for i in range(3):
            try:
                if i == 1:
                    raise ValueError
                yield x * i
            except ValueError:
                yield x - 1

    return list(gen())


add("generator_catches_its_own", generator_catches_its_own, [(t(2),)], 1)


def raise_inside_comprehension(x, texts):
    try:
        scales = [int(v) for v in texts]
    except ValueError:
        scales = [0]
    return x * sum(scales)


# 3.12 inlines the comprehension: its exception-table entry restores the loop variable
add("raise_inside_comprehension", raise_inside_comprehension, [(t(2), ["1", "2"]), (t(2), ["1", "b"])], 2)


class Holder:
    @property
    def value(self):
        raise AttributeError("computed")


HOLDER = Holder()


def getattr_default_over_raising_property(x):
    return x * getattr(HOLDER, "value", 4)


add("getattr_default_property_raises", getattr_default_over_raising_property, [(t(2),)], 1)


# -- exceptions that leave the captured code: Python raises them ---------------------------------------
def escapes(x, n):
    if n < 0:
        raise ValueError(f"negative: {n}")
    return x * n


add("exception_escapes_root", escapes, [(t(2), -1), (t(2), 2)], breaks="raised in captured code")


def escapes_from_callee(x):
    y = x + 1
    raises_key_error()
    return y


add("exception_escapes_from_callee", escapes_from_callee, [(t(2),)], breaks="raised in captured code")


def not_caught_by_clause(x):
    try:
        raise KeyError("k")
    except ValueError:
        return x
    return x + 1


add("exception_not_matched_escapes", not_caught_by_clause, [(t(2),)], breaks="raised in captured code")


def generator_raises_later(x):
    def gen():
        yield x
        raise ValueError("late")

    it = gen()  # Python raises only when the generator is consumed
    try:
        first = next(it)
    except ValueError:
        return x * 100
    return first + 1


# the generator runs lazily: its body has not raised yet when the first item is read
add("exception_in_generator_not_raised_yet", generator_raises_later, [(t(2),)], graphs=1)


def generator_raises_at_second_next(x):
    def gen():
        yield x
        raise ValueError("late")

    it = gen()
    first = next(it)
    try:
        next(it)  # raised here, where Python raises it
    except ValueError:
        return first * 100
    return first + 1


add("exception_in_generator_raised_where_python_raises", generator_raises_at_second_next, [(t(2),)], graphs=1)


def raise_inside_map(x, texts):
    try:
        scales = list(map(int, texts))
    except ValueError:
        scales = [0]
    return x * sum(scales)


# map() is lazy in Python; the capture calls the function on every item where map() is called
add("exception_in_map_run_ahead", raise_inside_map, [(t(2), ["1", "b"])], breaks="before Python would")


def break_after_try(x):
    try:
        raise ValueError
    except ValueError:
        x = x + 1
    print("after the try")  # a graph break outside the try block
    return x * 2


add("graph_break_after_try", break_after_try, [(t(2),)], breaks="print")


def break_before_try(x):
    x = x + 1
    print("before the try")
    try:
        raise ValueError
    except ValueError:
        x = x * 2
    return x


add("graph_break_before_try", break_before_try, [(t(2),)], breaks="print")


@pytest.mark.parametrize("case", params(CASES))
def test_exceptions(case):
    run_case(case)


def test_escaping_exception_is_the_eager_one():
    opt = ember.compile(raise_from_escapes, backend="eager")
    with pytest.raises(ValueError) as info:
        with pytest.warns(UserWarning, match="raised in captured code"):
            opt(torch.ones(2))
    assert str(info.value) == "outer 2.0"
    assert isinstance(info.value.__cause__, KeyError)


def raise_from_escapes(x):
    try:
        {}["k"]
    except KeyError as e:
        raise ValueError(f"outer {float(x.shape[0])}") from e


def test_graph_breaks_around_a_try_block_give_two_graphs():
    for fn in (break_after_try, break_before_try):
        backend = CountingBackend()
        opt = ember.compile(fn, backend=backend)
        x = torch.randn(3)
        torch.testing.assert_close(opt(x), fn(x))
        assert backend.count == 2, fn.__name__


def test_raise_and_catch_is_one_graph_in_explain():
    out = ember.explain(raise_in_callee)(torch.randn(3))
    assert out.graph_count == 1 and out.graph_break_count == 0
