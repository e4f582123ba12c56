"""Behaviours of torch's ``test/dynamo/test_generator.py``, in our own programs: generator functions
and generator objects inlined (``next``, ``yield from``, ``send``, ``throw``, ``close``), infinite
generators consumed by ``zip``, generators built into containers, returned from or passed into
compiled code, and graph breaks inside them."""
from __future__ import annotations

import collections
import itertools
import math

import torch

from behaviour_harness import Suite

SUITE = S = Suite("test_generator")


def _x(*shape):
    return torch.linspace(-1, 2, math.prod(shape)).view(shape)


def _three():
    yield 4
    yield 5
    yield 6


@S.case("test_generator_simple", (_x(2),), count=True, frames=1)
def next_three_times(t):
    g = _three()
    t = t * next(g)
    t = t + next(g)
    return t - next(g)


def _count_up():
    i = 0
    while True:
        yield i
        i += 2


@S.case("test_infinite_generator", (_x(2),), count=True, frames=1)
def next_of_infinite_generator(t):
    g = _count_up()
    for _ in range(4):
        t = t + next(g)
    return t


def _tensors_forever(t):
    i = 0
    while True:
        yield t * i
        i += 1


@S.case("test_infinite_generator_2", (_x(2),))
def zip_range_with_infinite_tensor_generator(t):
    return list(zip(range(3), _tensors_forever(t)))


def _same_forever(v):
    while True:
        yield v


@S.case("test_infinite_generator_3", (_x(2),))
def zip_range_with_infinite_constant_generator(t):
    return list(zip(range(4), _same_forever(7))), t.cos()


def _ints_with_break():
    yield 2
    print("", end="")
    yield 5


@S.case("test_graph_break_in_generator", (_x(2),), count=True, frames=0, fullgraph=False)
def generator_with_break_consumed_by_next(t):
    g = _ints_with_break()
    s = next(g)
    s = s * next(g)
    return t + s


def _trig_with_break(x):
    yield x.sin()
    print("", end="")
    yield x.cos()


def _take_two(x):
    g = _trig_with_break(x)
    return next(g), next(g)


@S.case("test_graph_break_in_generator_2", (_x(2),), count=True, frames=1, fullgraph=False)
def inlined_helper_consumes_generator_with_break(t):
    a, b = _take_two(t)
    return a * b


def _local_counter(t):
    k = 0
    yield t.sin() + k
    k += 2
    yield t.cos() + k
    k += 3
    yield t.exp() - k


@S.case("test_reconstruct_generator_with_local_var_mutation", (_x(2),), fullgraph=False)
def return_partly_consumed_generator(t):
    g = _local_counter(t)
    next(g)
    return t.sin(), g


def _writes_dict_early(t, d):
    d["a"] = t
    yield t.sin()
    yield t.cos()
    yield t.exp()


@S.case("test_reconstruct_generator_with_dict_mutation_before", lambda: (_x(2), {"z": _x(2)}), fullgraph=False)
def return_generator_after_its_dict_write(t, d):
    g = _writes_dict_early(t, d)
    next(g)
    return t * 2, g


def _writes_dict_late(t, d):
    d["a"] = t
    yield t.sin()
    yield t.cos()
    d["b"] = t + 1
    yield t.exp()


@S.case("test_reconstruct_generator_with_dict_mutation", lambda: (_x(2), {"z": _x(2)}), fullgraph=False)
def return_fresh_generator_that_writes_dict_later(t, d):
    g = _writes_dict_late(t, d)
    next(g)
    return t * 2, _writes_dict_late(t, d)


class Tally:
    def __init__(self):
        self.n = 0

    def bump(self):
        self.n += 1


def _bumps_early(t, c):
    c.bump()
    yield t.sin()
    yield t.cos()
    yield t.exp()


@S.case("test_reconstruct_generator_with_object_mutation_before", lambda: (_x(2), Tally()), fullgraph=False)
def return_generator_after_its_object_mutation(t, c):
    g = _bumps_early(t, c)
    next(g)
    return t - 1, g


def _bumps_late(t, c):
    c.bump()
    yield t.sin()
    yield t.cos()
    c.bump()
    yield t.exp()


@S.case("test_reconstruct_generator_with_object_mutation", lambda: (_x(2), Tally()), fullgraph=False)
def return_generator_that_mutates_object_later(t, c):
    g = _bumps_late(t, c)
    next(g)
    return t - 1, g


def _trig(t):
    yield t.sin()
    yield t.cos()
    yield t.exp()


def _breaks(t):
    print("", end="")


@S.case("test_graph_break_and_reconstruct_generator", (_x(2),), fullgraph=False)
def live_generator_across_a_break(t):
    g = _trig(t)
    next(g)
    _breaks(t)
    return t.sin(), list(g)


@S.case("test_graph_break_in_generator_while_reconstructing", (_x(2),), count=True, frames=0, fullgraph=False)
def break_between_nexts_of_breaking_generator(t):
    g = _ints_with_break()
    s = next(g)
    print("", end="")
    s = s + next(g)
    return t * s


def _advanced_three():
    g = _three()
    next(g)
    return g


@S.case("test_generator_as_argument", lambda: (_x(2), _advanced_three()), fullgraph=False)
def next_of_started_generator_argument(t, g):
    return t + next(g)


def _advanced_trig(t):
    g = _trig(t)
    next(g)
    return g


@S.case("test_generator_as_argument_2", lambda: (_x(2), _advanced_trig(_x(2))), fullgraph=False)
def next_of_started_tensor_generator_argument(t, g):
    return t * next(g)


@S.case("test_generator_as_argument_3", lambda: (_x(2), _three()))
def next_of_unstarted_generator_argument(t, g):
    return t + next(g)


@S.case("test_generator_as_argument_4", lambda: (_x(2), _trig(_x(2))), fullgraph=False)
def next_of_unstarted_tensor_generator_argument(t, g):
    return t * next(g)


@S.case("test_islice_chain", (torch.tensor([1.0]),))
def list_of_chain_of_lists(t):
    return list(itertools.chain([t * 2, t * 3], [t - 1]))


def _plus_123(t):
    yield t + 1
    yield t + 2
    yield t + 3


@S.case("test_zip_generator", (_x(2),), count=True)
def return_zip_over_generator(t):
    return zip(range(3), _plus_123(t)), t.sin()


def _sub_then_more(t):
    yield from _plus_123(t)
    yield t * 10


@S.case("test_zip_subgenerator", (_x(2),), count=True)
def return_zip_over_yield_from_generator(t):
    return zip(range(4), _sub_then_more(t)), t.cos()


@S.case("test_list_zip_generator", (_x(3),))
def list_of_zip_over_generator(t):
    return list(zip("abc", _plus_123(t)))


@S.case("test_zip_infinite_generator", (_x(3),))
def list_of_zip_over_infinite_generator(t):
    return list(zip(range(5), _tensors_forever(t)))


def _pairs(t):
    yield 1, t + 1
    yield 2, t * 2
    yield 3, t - 3


def _container_of(kind):
    def fn(t):
        return kind(_pairs(t))
    return fn


for _kind in (list, tuple, dict, collections.OrderedDict):
    S.add("test_dict_tuple_list_generator", f"{_kind.__name__}_from_generator", _container_of(_kind), [(_x(2),)])


@S.case("test_return_generator", (torch.tensor([1.0]),))
def return_unstarted_generator(t):
    return _plus_123(t)


@S.case("test_return_tuple_generator", (_x(2),))
def return_two_generators(t):
    return (_trig(t), _trig(t + 1)), t.sin()


@S.case("test_return_advanced_generator", (torch.tensor([1.0]),))
def return_started_generator(t):
    g = _plus_123(t)
    next(g)
    return g


def _single(t):
    yield t + 1


@S.case("test_return_exhaust_generator", (torch.tensor([1.0]),))
def return_exhausted_generator(t):
    g = _single(t)
    next(g)
    return g

@S.case("test_subgenerator", (_x(2),))
def list_of_yield_from_generator(t):
    return list(_sub_then_more(t))


@S.case("test_return_subgenerator", (_x(2),))
def return_started_yield_from_generator(t):
    g = _sub_then_more(t)
    next(g)
    return g


@torch.compiler.disable
def _disabled_gen(t):
    yield t + 1
    yield t * 2


@S.case("test_dynamo_disable_generator", (_x(2),), fullgraph=False)
def list_of_disabled_generator(t):
    return list(_disabled_gen(t))


def _outer_of_disabled(t):
    yield t - 1
    yield from _disabled_gen(t)


@S.case("test_dynamo_disable_sub_generator", (_x(2),), fullgraph=False)
def yield_from_disabled_generator(t):
    return list(_outer_of_disabled(t))


@S.case("test_graph_break_outside_generator", (_x(2),), fullgraph=False)
def break_between_two_nexts(t):
    g = _plus_123(t)
    a = next(g)
    print("", end="")
    b = next(g)
    return a * b


def _perm_sums(t):
    for perm in itertools.product(itertools.permutations((0, 1, 2)), repeat=1):
        yield sum(perm[0]) * perm[0][0]


@S.case("test_graph_break_before_calling_generator", (_x(2),), fullgraph=False)
def product_of_generator_and_permutations(t):
    s = 0
    for b, p in itertools.product(_perm_sums(t), itertools.permutations((4, 5))):
        s += b * p[0]
    return t + s


def _nonlocal_counting_gen():
    n = 0

    def gen(t):
        nonlocal n
        for j in range(4):
            n += 1
            yield t + j

    def read():
        return n

    return gen, read


_SE_GEN, _SE_READ = _nonlocal_counting_gen()


@S.case("test_generator_with_side_effects", (_x(2),), fullgraph=False)
def return_generator_that_writes_nonlocal(t):
    return _SE_GEN(t), t.sin()


def _nested_nonlocal_gen():
    n = 0

    def sub(t):
        nonlocal n
        n += 1
        yield t
        n += 1
        yield t * 2

    def gen(t):
        nonlocal n
        yield from sub(t)
        n += 1
        yield t * 3

    return gen


_NESTED_GEN = _nested_nonlocal_gen()


@S.case("test_subgenerator_with_side_effects", (_x(2),), fullgraph=False)
def return_yield_from_generator_writing_nonlocal(t):
    return _NESTED_GEN(t), t.cos()


@S.case("test_generator_with_side_effects_graph_break", (_x(2),), fullgraph=False)
def next_after_break_of_nonlocal_writing_generator(t):
    g = _SE_GEN(t)
    print("", end="")
    next(g)
    return g, t.sin()


def _nonlocal_gen_with_break():
    n = 0

    def gen(t):
        nonlocal n
        for j in range(5):
            n += 1
            yield t * j
            print("", end="")

    return gen


_BREAK_GEN = _nonlocal_gen_with_break()


@S.case("test_generator_with_side_effects_graph_break_2", (_x(2),), count=True, frames=0, fullgraph=False)
def zip_over_generator_breaking_after_yield(t):
    return list(zip(range(3), _BREAK_GEN(t)))


def _inner_catches_stop():
    try:
        yield 1
        yield 2
    except StopIteration:
        return 50


def _outer_over_catching():
    yield from _inner_catches_stop()
    yield 3


@S.case("test_cleanup_throw", (_x(2),))
def throw_stopiteration_into_delegating_generator(t):
    g = _outer_over_catching()
    next(g)
    got = 0
    try:
        got = g.throw(StopIteration("halt"))
    except RuntimeError:
        pass
    return got, t.sin()


class MyStop(StopIteration):
    pass


@S.case("test_cleanup_throw_custom_StopIteration", (_x(2),))
def throw_stopiteration_subclass_into_delegating_generator(t):
    g = _outer_over_catching()
    next(g)
    got = 0
    try:
        got = g.throw(MyStop("halt"))
    except RuntimeError:
        pass
    return got, t.sin()


def _outer_yields_result():
    r = yield from _inner_catches_stop()
    yield r


@S.case("test_cleanup_throw_subgen_return_value", (_x(2),))
def yield_from_value_after_throw(t):
    g = _outer_yields_result()
    next(g)
    return g.throw(StopIteration("halt")), t.cos()


def _plain_two():
    yield 1
    yield 2


def _outer_plain():
    yield from _plain_two()
    yield 3


@S.case("test_cleanup_throw_empty_stopiteration", (_x(2),), fullgraph=False)
def throw_bare_stopiteration_raises_runtime_error(t):
    g = _outer_plain()
    next(g)
    g.throw(StopIteration())
    return t.sin()


@S.case("test_iter", (_x(2),))
def for_loop_over_infinite_generator_with_break(t):
    s = 0
    for i in _count_up():
        if i > 7:
            break
        s += i
    return t + s


@S.case("test_list_extend", (torch.ones(3),))
def list_extend_with_generator_reading_the_list(x):
    y = [2]
    y.extend(y[-1] * z for z in range(3))
    return x * 2, y


@S.case("test_deque_extendleft", (torch.ones(3),))
def deque_extendleft_with_generator(x):
    y = collections.deque([3])
    y.extendleft(y[0] + z for z in range(3))
    return x - 1, list(y)


@S.case("test_generator___contains__", (_x(2),))
def membership_consumes_generator(t):
    g = _three()
    first = 4 in g
    second = 6 in g
    try:
        next(g)
        exhausted = False
    except StopIteration:
        exhausted = True
    return t + 1, first, second, exhausted, 9 in _three()


def _contains_side_effects():
    n = 0

    def gen():
        nonlocal n
        n = 1
        yield 1
        n = 2
        yield 2

    def fn(t):
        g = gen()
        a = 1 in g
        seen_a = n
        b = 2 in g
        seen_b = n
        return t * 2, a, seen_a, b, seen_b, 3 in gen()

    return fn


S.add("test_generator___contains___side_effects", "membership_runs_generator_side_effects",
      _contains_side_effects(), [(_x(2),)])


@S.case("test_raise_immediately", (1,), fullgraph=False)
def generator_expression_over_int_raises(s):
    return (v for v in s)


@S.case("test_pep479_raise_stopiteration_in_body", (_x(2),))
def stopiteration_in_generator_becomes_runtime_error(t):
    def gen():
        yield t + 1
        raise StopIteration("done")

    g = gen()
    next(g)
    try:
        next(g)
    except RuntimeError:
        return t + 1.0
    except StopIteration:
        return t + 2.0
    return t


@S.case("test_pep479_stopiteration_error", (_x(2),))
def generator_raising_stopiteration_first(t):
    def gen():
        raise StopIteration
        yield

    try:
        next(gen())
    except RuntimeError as e:
        return t * 2, "raised StopIteration" in str(e)
    return t, False


@S.case("test_pep479_stopiteration_from_inner_next", (_x(2),))
def inner_next_stopiteration_becomes_runtime_error(t):
    def inner():
        yield t + 1

    def gen():
        it = inner()
        while True:
            yield next(it)

    g = gen()
    next(g)
    try:
        next(g)
    except RuntimeError:
        return t + 1.0
    except StopIteration:
        return t + 2.0
    return t


def _doubler():
    v = yield
    yield v * 2


@S.case("test_send", (_x(2),))
def send_value_into_generator(t):
    g = _doubler()
    next(g)
    return g.send(t)


@S.case("test_send_stop_iteration", (_x(2),), fullgraph=False)
def send_past_the_end_raises_stopiteration(t):
    g = _doubler()
    next(g)
    a = g.send(t)
    b = g.send(t)
    return a + b


def _sin_returns_cos(t):
    yield t.sin()
    return t.cos()


def _yields_result_of(sub):
    def outer(t):
        r = yield from sub(t)
        yield r
    return outer


@S.case("test_yield_from_return_value", (_x(2),))
def yield_from_evaluates_to_return_value(t):
    return list(_yields_result_of(_sin_returns_cos)(t))


def _sin_only(t):
    yield t.sin()


@S.case("test_yield_from_return_none", (_x(2),))
def yield_from_evaluates_to_none(t):
    return list(_yields_result_of(_sin_only)(t))


def _echo_sub():
    a = yield 10
    b = yield a + 1
    return b * 100


def _echo_outer():
    r = yield from _echo_sub()
    yield r


@S.case("test_send_through_yield_from", (_x(2),))
def send_forwarded_through_yield_from(t):
    g = _echo_outer()
    return [g.send(None), g.send(6), g.send(4), t.cos()]


def _leaf(t):
    yield t.sin()
    return t.cos()


def _mid(t):
    r = yield from _leaf(t)
    return r * 2


def _top(t):
    r = yield from _mid(t)
    yield r


@S.case("test_nested_yield_from_return_value", (_x(2),))
def return_values_through_two_yield_froms(t):
    return list(_top(t))


def _from_list(t):
    r = yield from [t.sin(), t.cos()]
    yield r


@S.case("test_yield_from_iterable_return_none", (_x(2),))
def yield_from_list_evaluates_to_none(t):
    return list(_from_list(t))


@S.case("test_close", (_x(2),))
def close_after_first_next(t):
    g = _trig(t)
    first = next(g)
    g.close()
    return first


def _scope(build):
    """``build(cell)`` returns the compiled function; ``cell`` is a dict standing for its nonlocals."""
    cell = {}
    fn = build(cell)
    return fn, (lambda: dict(cell))


def _build_close_subgen(cell):
    def sub(t):
        cell["z"] = 1
        yield t.sin()
        cell["z"] = 3
        yield t.cos()

    def gen(t):
        yield from sub(t)
        yield t.exp()

    def fn(t):
        cell.clear()
        g = gen(t)
        first = next(g)
        g.close()
        return first
    return fn


def _build_close_side_effects(cell):
    def gen(t):
        try:
            cell["log"].append(1)
            yield t.sin()
            cell["log"].append(2)
            yield t.cos()
        finally:
            cell["log"].append(cell["z"])

    def fn(t):
        cell.clear()
        cell["log"], cell["z"] = [], 0
        g = gen(t)
        first = next(g)
        cell["z"] = -5
        g.close()
        cell["log"].append(len(cell["log"]))
        return first
    return fn


def _build_close_generatorexit_return(cell):
    def gen(t):
        try:
            cell["z"] += 1
            yield t.sin()
            yield t.cos()
        except GeneratorExit:
            cell["z"] += 10
            return t.exp()
        finally:
            cell["z"] += 100

    def fn(t):
        cell.clear()
        cell["z"] = 0
        g = gen(t)
        first = next(g)
        return first, g.close()
    return fn


def _build_close_reraise(cell):
    def gen(t):
        try:
            cell["log"].append(1)
            yield t.sin()
            yield t.cos()
        except GeneratorExit:
            cell["log"].append(cell["z"])
            cell["z"] = -1
            raise
        finally:
            cell["log"].append(cell["z"])

    def fn(t):
        cell.clear()
        cell["log"], cell["z"] = [], 0
        g = gen(t)
        first = next(g)
        cell["z"] = -9
        g.close()
        cell["log"].append(77)
        return first
    return fn


def _build_close_with_subgen(cell):
    def sub(t):
        yield t.sin()
        yield t.cos()

    def gen(t):
        cell["log"].append(10)
        yield from sub(t)
        cell["log"].append(20)
        try:
            cell["z"] = 4
            yield t.exp()
        finally:
            cell["log"].append(cell["z"])

    def fn(t):
        cell.clear()
        cell["log"], cell["z"] = [], 0
        g = gen(t)
        first = next(g)
        cell["z"] = -8
        g.close()
        cell["log"].append(55)
        return first, t.sin()
    return fn


def _build_close_twice(cell):
    def gen(t):
        try:
            cell["z"] += 1
            yield t.sin()
            yield t.cos()
        finally:
            cell["z"] += 1

    def fn(t):
        cell.clear()
        cell["z"] = 0
        g = gen(t)
        first = next(g)
        g.close()
        return first, g.close()
    return fn


def _build_close_handles_finally(cell):
    def gen(t):
        try:
            yield t.sin()
            yield t.cos()
        except GeneratorExit:
            cell["z"] += 1
            return t.exp()
        finally:
            cell["z"] += 1

    def fn(t):
        cell.clear()
        cell["z"] = 0
        g = gen(t)
        next(g)
        return t.sin(), g.close()
    return fn


for _test, _name, _build in [
        ("test_close_subgen", "close_stops_yield_from_subgenerator", _build_close_subgen),
        ("test_close_with_side_effects", "close_runs_finally_reading_updated_state", _build_close_side_effects),
        ("test_close_capture_GeneratorExit_return", "close_returns_value_of_generatorexit_handler",
         _build_close_generatorexit_return),
        ("test_close_capture_and_reraise_GeneratorExit", "close_with_reraised_generatorexit", _build_close_reraise),
        ("test_close_with_subgen", "close_inside_yield_from_skips_later_finally", _build_close_with_subgen),
        ("test_close_after_close", "second_close_is_a_no_op", _build_close_twice),
        ("test_close_handling_finally", "close_handler_and_finally_both_run", _build_close_handles_finally)]:
    _fn, _read = _scope(_build)
    S.add(_test, _name, _fn, [(_x(2),)], state=_read)


def _ignores_exit(t):
    try:
        yield t.sin()
        yield t.cos()
    except GeneratorExit:
        yield t.exp()


@S.case("test_close_capture_GeneratorExit", (_x(2),), fullgraph=False)
def close_of_generator_yielding_in_handler_raises(t):
    g = _ignores_exit(t)
    first = next(g)
    g.close()
    return first


def _reraises_as(kind):
    def gen(t):
        try:
            yield t.sin()
            yield t.cos()
        except GeneratorExit as e:
            raise kind from e

    def fn(t):
        g = gen(t)
        first = next(g)
        try:
            g.close()
        except kind:
            return first, 1
        return first, 0
    return fn


for _kind in (RuntimeError, AttributeError):
    S.add("test_close_capture_and_reraise_exc", f"close_handler_raising_{_kind.__name__}", _reraises_as(_kind),
          [(_x(2),)])


@S.case("test_next_after_close", (_x(3),), fullgraph=False)
def next_after_close_raises_stopiteration(t):
    g = _trig(t)
    g.close()
    return [t.sin(), next(g)]


def _raises_first(t):
    raise ValueError("nope")
    yield t.cos()


@S.case("test_close_after_exception", (_x(2),))
def close_after_generator_raised(t):
    g = _raises_first(t)
    try:
        next(g)
    except ValueError:
        pass
    return [t.sin(), g.close()]


def _build_open_at_exit(cell):
    def gen(t):
        try:
            yield t
            yield t
        finally:
            cell["z"] = cell.get("z", 0) + 1

    def fn(t):
        cell.clear()
        g = gen(t)
        next(g)
        return t
    return fn


_open_fn, _open_read = _scope(_build_open_at_exit)
S.add("test_close_open_generator_fast_path", "open_generator_finalised_at_return", _open_fn, [(_x(2),)],
      state=_open_read)


class Box:
    pass


@S.case("test_close_replays_new_object_attr_mutation", (_x(3),))
def finally_of_open_generator_mutates_list(t):
    marker = []

    def gen():
        obj = Box()
        obj.data = marker
        try:
            yield t.sin()
        finally:
            obj.data.append(1)

    g = gen()
    next(g)
    return t.sin(), marker


@S.case("test_deep_tee_buffer_no_recursion_error", (_x(3),))
def long_tee_buffer(t):
    a, b = itertools.tee(iter(range(1500)))
    list(a)
    return t + next(b)


def _catch_runtime(t):
    try:
        yield t.sin()
    except RuntimeError:
        yield t.cos()


@S.case("test_throw", (_x(2),))
def throw_caught_inside_generator(t):
    g = _catch_runtime(t)
    a = next(g)
    b = g.throw(RuntimeError)
    return a + b


def _build_throw_nested_finally(cell):
    def gen():
        cell["z"] = 0
        try:
            try:
                yield 1
            except ValueError:
                yield 2
            finally:
                cell["z"] += 2
        except ValueError:
            cell["z"] += 33
            yield 4
        finally:
            cell["z"] += 1
        cell["z"] += 10

    def fn(x):
        g = gen()
        next(g)
        got = g.throw(ValueError)
        return x.sin() * got
    return fn


def _build_throw_without_finally(cell):
    def gen(t):
        cell["z"] = 0
        try:
            cell["z"] += 1
            yield t.sin()
            cell["z"] += 10
        except RuntimeError:
            cell["z"] += 100
            yield t.cos()
            cell["z"] += 1000
        cell["z"] += 10000

    def fn(t):
        g = gen(t)
        a = next(g)
        return a + g.throw(RuntimeError)
    return fn


def _build_throw_no_yield_after(cell):
    def gen(t):
        cell["z"] = 0
        try:
            cell["z"] += 1
            yield t.sin()
        except ValueError:
            cell["z"] += 10
        finally:
            cell["z"] += 100

    def fn(t):
        g = gen(t)
        a = next(g)
        try:
            g.throw(ValueError)
        except StopIteration as e:
            return a, len(e.args)
        return a, -1
    return fn


def _build_throw_try_except_finally(cell):
    def gen(t):
        cell["z"] = 0
        try:
            cell["z"] += 1
            yield t.sin()
        except ValueError:
            cell["z"] += 10
            yield t.cos()
        except RuntimeError:
            cell["z"] += 100
            yield t.exp()
        finally:
            cell["z"] += 1000
        cell["z"] += 10000

    def fn(t):
        g = gen(t)
        a = next(g)
        return a + g.throw(RuntimeError)
    return fn


for _test, _name, _build in [
        ("test_throw_with_finally", "throw_through_nested_try_finally", _build_throw_nested_finally),
        ("test_throw_without_finally", "throw_caught_then_yield", _build_throw_without_finally),
        ("test_throw_no_yield_after_throw", "throw_ending_generator_raises_bare_stopiteration",
         _build_throw_no_yield_after),
        ("test_throw_try_except_finally", "throw_picks_matching_handler", _build_throw_try_except_finally)]:
    _fn, _read = _scope(_build)
    S.add(_test, _name, _fn, [(_x(2),)], state=_read)


def _only_value_error(t):
    try:
        yield t.sin()
    except ValueError:
        yield t.cos()
    finally:
        pass


@S.case("test_throw_not_catch", (_x(2),), fullgraph=False)
def throw_not_caught_propagates(t):
    g = _only_value_error(t)
    a = next(g)
    return a + g.throw(RuntimeError)


def _converts_error(t):
    try:
        yield t.sin()
    except ValueError as e:
        raise RuntimeError from e


@S.case("test_throw_raise_difference_exc", (_x(2),), fullgraph=False)
def throw_converted_to_other_exception(t):
    g = _converts_error(t)
    a = next(g)
    return a + g.throw(ValueError)


def _empty_yield():
    yield


@S.case("test_exception_context_with_yield", (_x(2),))
def throw_into_started_generator_caught_outside(t):
    g = _empty_yield()
    g.send(None)
    try:
        g.throw(ValueError)
    except ValueError:
        z = 3
    return t.sin() * z


def _finally_returns(value_in_finally):
    def gen():
        try:
            yield 1
        except ValueError:
            return 2
        finally:
            return value_in_finally  # noqa: B012
    return gen


@S.case("test_return_const_value_in_except_and_finally", (_x(2),))
def finally_return_value_wins(t):
    g = _finally_returns(3)()
    next(g)
    try:
        g.throw(ValueError)
    except StopIteration as e:
        return t.sin() * e.args[0]
    return t


class Held:
    def __init__(self, x):
        self.x = x


def _finally_returns_object():
    try:
        yield 1
    except ValueError:
        return Held(2)
    finally:
        return Held(5)  # noqa: B012


@S.case("test_return_value_in_except_and_finally", (_x(2),))
def finally_return_object_wins(t):
    g = _finally_returns_object()
    next(g)
    try:
        g.throw(ValueError)
    except StopIteration as e:
        return t.sin() * e.args[0].x
    return t


@S.case("test_return_None_in_except_and_finally", (_x(2),))
def finally_bare_return_gives_empty_stopiteration(t):
    g = _finally_returns(None)()
    next(g)
    try:
        g.throw(ValueError)
    except StopIteration as e:
        return t.sin(), len(e.args)
    return t, -1


@S.case("test_return_is_not_stopiteration", (_x(2),))
def return_in_try_is_not_caught_but_raise_is(t):
    def f1():
        try:
            return
        except:  # noqa: E722
            yield 1

    def f2():
        try:
            raise StopIteration
        except:  # noqa: E722
            yield 42

    return t + 1, list(f1()), list(f2())


@S.case("test_exception_propagation", (_x(2),))
def exception_in_generator_ends_it(t):
    def g():
        yield 1 // 0
        yield 42

    k = g()
    outcomes = []
    for _ in range(2):
        try:
            next(k)
            outcomes.append("value")
        except ZeroDivisionError:
            outcomes.append("zero")
        except StopIteration:
            outcomes.append("stop")
    return t * 2, outcomes


@S.case("test_try_except_finally", (_x(2),))
def generator_with_nested_handlers(t):
    def f():
        try:
            yield 1
            try:
                yield 2
                1 // 0
                yield 3
            except ZeroDivisionError:
                yield 4
                yield 5
                raise
            except:  # noqa: E722
                yield 6
            yield 7
        except:  # noqa: E722
            yield 8
        yield 9
        try:
            pass
        finally:
            yield 10
        yield 11

    return t - 1, list(f())


@S.case("test_send_into_started_generator", (_x(2),))
def send_value_received_by_yield(t):
    sent = []

    def f():
        sent.append((yield 1))
        yield 2

    g = f()
    a = next(g)
    b = g.send(42)
    return t * a, b, sent


@S.case("test_send_non_none_to_just_started", (_x(2),), fullgraph=False)
def send_to_unstarted_raises(t):
    def f():
        yield 1

    f().send("x")
    return t


@S.case("test_bare_yield_yields_none", (_x(2),))
def bare_yield_gives_none(t):
    def f():
        yield

    return t + 1, list(f())


@S.case("test_augmented_assignment_coroutine", (_x(2),))
def coroutine_accumulates_sent_values(t):
    seq = []

    def co():
        count = 0
        while count < 200:
            count += yield
            seq.append(count)

    c = co()
    next(c)
    for _ in range(3):
        c.send(10)
    return t * len(seq), seq


@S.case("test_throw_caught_in_loop", (_x(2),))
def throw_caught_repeatedly_in_loop(t):
    caught = []

    def f():
        while True:
            try:
                yield
            except ValueError as v:
                caught.append(str(v))

    g = f()
    next(g)
    g.throw(ValueError)
    g.throw(ValueError("xyz"))
    return t + 1, caught


@S.case("test_throw_terminates_generator", (_x(2),))
def uncaught_throw_ends_generator(t):
    def f():
        while True:
            try:
                yield
            except ValueError:
                pass

    g = f()
    next(g)
    steps = []
    try:
        g.throw(TypeError)
    except TypeError:
        steps.append("type")
    try:
        g.send(2)
    except StopIteration:
        steps.append("stop")
    return t * 2, steps


@S.case("test_throw_on_just_opened_generator", (_x(2),))
def throw_into_unstarted_generator_propagates(t):
    def f():
        yield 1

    try:
        f().throw(ValueError(7))
    except ValueError as e:
        return t, e.args[0]
    return t, 0


@S.case("test_close_catches_generator_exit", (_x(2),))
def close_caught_generator_exit_once(t):
    log = []

    def f():
        try:
            yield
        except GeneratorExit:
            log.append("exiting")

    g = f()
    next(g)
    g.close()
    g.close()
    return t - 1, log


@S.case("test_close_on_various_states", (_x(2),))
def close_before_start_and_after_next(t):
    f = _empty_yield
    f().close()
    g = f()
    next(g)
    g.close()
    return t * 3


@S.case("test_generator_exit_not_caught_by_except_exception", (_x(2),))
def generator_exit_skips_except_exception(t):
    log = []

    def f():
        try:
            yield
        except Exception:
            log.append("except")
        finally:
            log.append("finally")

    g = f()
    next(g)
    g.close()
    return t + 2, log


@S.case("test_generator_ignored_generator_exit", (_x(2),), fullgraph=False)
def close_of_generator_ignoring_exit_raises(t):
    def f():
        try:
            yield
        except GeneratorExit:
            yield "again"

    g = f()
    next(g)
    try:
        g.close()
    except RuntimeError as e:
        return t, "ignored GeneratorExit" in str(e)
    return t, False


@S.case("test_error_during_close_propagates", (_x(2),))
def error_raised_during_close(t):
    def f():
        try:
            yield
        except GeneratorExit:
            raise TypeError("fie") from None

    g = f()
    next(g)
    try:
        g.close()
    except TypeError as e:
        return t * 2, str(e)
    return t, ""


@S.case("test_send_to_subscript_targets", (_x(2),))
def yields_as_subscript_targets(t):
    def f(d):
        d[(yield "a")] = d[(yield "b")] = 27

    data = [1, 2]
    g = f(data)
    first = g.send(None)
    snap1 = list(data)
    second = g.send(0)
    snap2 = list(data)
    try:
        g.send(1)
    except StopIteration:
        pass
    return t + 1, first, second, snap1, snap2, data


# -- delegation through yield from ----------------------------------------------------------------
class DelegatingIterator:
    def __init__(self, log):
        self.log = log

    def __iter__(self):
        return self

    def __next__(self):
        return 1

    def send(self, value):
        return 1

    def throw(self, typ, val=None, tb=None):
        self.log.append("iter throw")
        return 2

    def close(self):
        self.log.append("iter close")


@S.case("test_send_into_subgen", (_x(2),))
def send_reaches_subgenerator(t):
    got = []

    def sub():
        v = yield 1
        got.append(v)
        yield 2

    def outer():
        yield from sub()

    g = outer()
    return t * next(g), g.send(42), got


@S.case("test_throw_into_subgen_caught", (_x(2),))
def throw_caught_by_subgenerator(t):
    log = []

    def sub():
        try:
            yield 1
        except ValueError:
            log.append("sub caught")
            yield 2

    def outer():
        yield from sub()

    g = outer()
    return t + next(g), g.throw(ValueError), log


@S.case("test_throw_into_subgen_uncaught_runs_finally", (_x(2),))
def throw_through_subgenerator_runs_its_finally(t):
    log = []

    def sub():
        try:
            yield 1
        finally:
            log.append("sub finally")

    def outer():
        yield from sub()

    g = outer()
    next(g)
    try:
        g.throw(ValueError)
    except ValueError:
        log.append("outside")
    return t - 1, log


@S.case("test_throw_generator_exit_into_subgen", (_x(2),))
def throw_generator_exit_closes_subgenerator(t):
    log = []

    def sub():
        try:
            yield 1
        finally:
            log.append("sub finally")

    def outer():
        yield from sub()

    g = outer()
    next(g)
    try:
        g.throw(GeneratorExit)
    except GeneratorExit:
        log.append("exit outside")
    return t * 2, log


@S.case("test_throw_through_nested_yield_from", (_x(2),))
def throw_through_two_levels_of_yield_from(t):
    log = []

    def leaf():
        try:
            yield 1
        except ValueError:
            log.append("leaf caught")
            yield 2

    def mid():
        yield from leaf()

    def outer():
        yield from mid()

    g = outer()
    next(g)
    return t + g.throw(ValueError), log


@S.case("test_close_runs_subgen_finally", (_x(2),))
def close_runs_subgenerator_finally(t):
    log = []

    def sub():
        try:
            yield 1
            yield 2
        finally:
            log.append("sub finally")

    def outer():
        yield from sub()

    g = outer()
    next(g)
    g.close()
    return t * 3, log


@S.case("test_close_subgen_catches_generator_exit", (_x(2),))
def close_caught_by_subgenerator(t):
    log = []

    def sub():
        try:
            yield 1
        except GeneratorExit:
            log.append("sub exit")

    def outer():
        yield from sub()

    g = outer()
    next(g)
    g.close()
    return t - 3, log


@S.case("test_close_subgen_ignores_generator_exit", (_x(2),), fullgraph=False)
def close_ignored_by_subgenerator_raises(t):
    def sub():
        try:
            yield 1
        except GeneratorExit:
            yield 2

    def outer():
        yield from sub()

    g = outer()
    next(g)
    try:
        g.close()
    except RuntimeError:
        return t, True
    return t, False


@S.case("test_throw_into_iterator_subiter", (_x(2),))
def throw_forwarded_to_iterator_throw_method(t):
    log = []

    def outer():
        yield from DelegatingIterator(log)

    g = outer()
    return t * next(g), g.throw(ValueError), log


@S.case("test_close_into_iterator_subiter", (_x(2),))
def close_forwarded_to_iterator_close_method(t):
    log = []

    def outer():
        yield from DelegatingIterator(log)

    g = outer()
    next(g)
    g.close()
    return t + 5, log


# Python facts the test file's (newer) torch.compile shows and torch 2.13's does not: eager is the reference.
S.torch_differs(
    "torch 2.13's generator support falls short of the test file's",
    "next_of_unstarted_generator_argument",
    "throw_stopiteration_into_delegating_generator",
    "throw_stopiteration_subclass_into_delegating_generator",
    "yield_from_value_after_throw",
    "generator_raising_stopiteration_first",
    "inner_next_stopiteration_becomes_runtime_error",
    "yield_from_evaluates_to_return_value",
    "send_forwarded_through_yield_from",
    "return_values_through_two_yield_froms",
    "close_returns_value_of_generatorexit_handler",
    "close_handler_and_finally_both_run",
    "open_generator_finalised_at_return",
    "finally_of_open_generator_mutates_list",
    "throw_caught_repeatedly_in_loop",
    "uncaught_throw_ends_generator",
    "send_reaches_subgenerator",
    "throw_caught_by_subgenerator",
    "throw_through_subgenerator_runs_its_finally",
    "throw_generator_exit_closes_subgenerator",
    "throw_through_two_levels_of_yield_from",
    "close_runs_subgenerator_finally",
    "close_caught_by_subgenerator",
    "throw_forwarded_to_iterator_throw_method",
    "close_forwarded_to_iterator_close_method",
)

test_behaviour = S.pytest_function()
