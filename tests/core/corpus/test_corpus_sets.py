"""Corpus: sets. A set made inside captured code is mutated at capture time (one graph, no
break); one from outside (argument, global, attribute) is read in the graph and mutated in
Python at a graph break; tensors as elements break."""
from __future__ import annotations

import pytest
import torch

import ember
from harness import Case, CountingBackend, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


def add_discard_remove(x, vals):
    s = set()
    for v in vals:
        s.add(v)
    s.discard(0)
    s.discard(12345)
    s.remove(max(s))
    return x * len(s) + sum(s)


add("set_add_discard_remove", add_discard_remove, [(t(2), [1, 0, 2, 2, 5]), (t(2, 3), [3, 0])], 2)


def update_pop_clear(x):
    s = {1, 2}
    s.update([3, 4], (5,))
    s.update(i * 10 for i in range(1, 3))
    popped = s.pop()
    n = len(s)
    s.clear()
    return x * n + popped, s


add("set_update_pop_clear", update_pop_clear, [(t(2),)], 1)


def inplace_operators(x):
    s = {1, 2, 3}
    alias = s
    s |= {4, 5}
    s &= {2, 3, 4, 5}
    s -= {3}
    s ^= {5, 6}
    return x * len(alias) + sum(alias), s is alias


add("set_inplace_operators_keep_identity", inplace_operators, [(t(2),)], 1)


def set_methods_and_operators(x, n):
    a = {i for i in range(n)}
    b = set(range(2, 6))
    u, i, d, sd = a.union(b), a.intersection(b), a.difference(b), a.symmetric_difference(b)
    flags = (i.issubset(a), a.issuperset(i), d.isdisjoint(b), a | b == u, a & b == i, a - b == d, a ^ b == sd)
    u.add(100)  # a new set from a set operation is a set of the capture too
    return x * len(u) + sum(flags), sorted(u), a <= u


add("set_methods_and_operators", set_methods_and_operators, [(t(2), 4), (t(2), 7)], 2)


def membership_len_iteration(x, keys):
    seen = set()
    out = []
    for k in keys:
        if k in seen:
            continue
        seen.add(k)
        out.append(x * len(k))
    return out, len(seen), sorted(seen), bool(seen), "a" not in seen


add("set_dedup_loop", membership_len_iteration, [(t(2), ["ab", "c", "ab", "de"]), (t(2), [])], 1)


def set_from_containers(x, xs, d):
    a, b, c = set(xs), set(d), set("hello")
    return x * (len(a) + len(b) + len(c)), sorted(a), sorted(b | c), frozenset(c) == frozenset("helo")


add("set_from_list_dict_str", set_from_containers, [(t(2), [1, 1, 2], {"k": 1, "j": 2})], 1)


def set_returned(x, n):
    s = {n, n + 1}
    s.add(0)
    return x + n, s, [s]


add("set_returned_and_nested", set_returned, [(t(2), 1), (t(2), 5)], 2)


def set_remove_missing(x):
    s = {1}
    try:
        s.remove(2)
    except KeyError as e:
        return x * e.args[0]
    return x


add("set_remove_missing_key_error", set_remove_missing, [(t(2),)], 1)


def frozenset_ops(x, fs):
    g = fs | {9}
    g |= {10}  # rebinds g to a new frozenset
    return x * len(g), type(g) is frozenset, fs.union({7}).issuperset({7})


add("frozenset_arg_operators", frozenset_ops, [(t(2), frozenset({1, 2})), (t(2), frozenset())], 2)


def read_set_arg(x, s):
    extra = s.union({100})
    extra.add(101)
    return x * len(extra) + (1 if s.issubset({1, 2, 3}) else 0), sorted(s.difference({1}))


add("set_arg_read_only_methods", read_set_arg, [(t(2), {1, 2}), (t(2), {5})], 2)


def mutate_set_arg(x, s):
    s.add(x.shape[0])
    s.discard(1)
    return x * len(s)


# a set from outside is mutated in Python at a graph break, never at capture time
add("set_arg_mutated_breaks", mutate_set_arg, [(t(2), {1, 2}), (t(3), {7})], breaks="set that exists outside")


def inplace_on_set_arg(x, s):
    s |= {5}
    return x * len(s)


add("set_arg_inplace_operator_breaks", inplace_on_set_arg, [(t(2), {1}), (t(2), {1})],
    breaks="set that exists outside")

def tensor_in_set(x):
    s = {x}
    return x * len(s)


add("set_of_tensors", tensor_in_set, [(t(2),)])  # held by identity


@pytest.mark.parametrize("case", params(CASES))
def test_sets(case):
    run_case(case)


SEEN: set = set()


def mutate_global_set(x, key):
    SEEN.add(key)
    return x * len(SEEN)


def test_global_set_is_mutated_in_python_on_every_call():
    SEEN.clear()
    opt = ember.compile(mutate_global_set, backend="eager")
    outs = [opt(torch.ones(1), key) for key in "aba"]  # a graph break at SEEN.add
    assert SEEN == {"a", "b"}
    assert [out.item() for out in outs] == [1.0, 2.0, 2.0]


def test_returned_set_is_new_on_every_call():
    opt = ember.compile(set_returned, backend="eager")
    first = opt(torch.ones(2), 1)[1]
    first.add("caller's change")
    assert opt(torch.ones(2), 1)[1] == {0, 1, 2}


def test_set_argument_changed_between_calls_recompiles():
    def f(x, s):
        return x * len(s) + sum(s)

    backend = CountingBackend()
    opt = ember.compile(f, backend=backend)
    s = {1}
    torch.testing.assert_close(opt(torch.ones(2), s), f(torch.ones(2), s))
    s.add(2)  # the guard holds a copy of the set, not the set itself
    torch.testing.assert_close(opt(torch.ones(2), s), f(torch.ones(2), s))
    assert backend.count == 2
