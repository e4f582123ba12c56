"""A builtin called with arguments that do not fit raises in compiled code the exception CPython
raises, inside the user's frame: a ``try``/``except`` around it catches it in the graph, and an
uncaught one reaches the caller with its type (issue 45, item 6). The same for an operation on
constants that Python rejects (``1 + "a"``)."""
from __future__ import annotations

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback


class Box:
    pass


BAD_CALLS = {
    "isinstance_keyword": lambda x: isinstance(x, torch.Tensor, invalid=True),
    "isinstance_one_argument": lambda x: isinstance(x),
    "isinstance_of_a_non_class": lambda x: isinstance(x, 5),
    "len_no_argument": lambda x: len(),
    "len_two_arguments": lambda x: len([1], [2]),
    "getattr_one_argument": lambda x: getattr(x),
    "getattr_four_arguments": lambda x: getattr(x, "shape", 1, 2),
    "hasattr_one_argument": lambda x: hasattr(x),
    "range_no_argument": lambda x: range(),
    "range_keyword": lambda x: range(stop=3),
    "zip_unknown_keyword": lambda x: zip([1], [2], fast=True),
    "max_no_argument": lambda x: max(),
    "max_unknown_keyword": lambda x: max(1, 2, fast=True),
    "type_two_arguments": lambda x: type(x, ()),
    "setattr_two_arguments": lambda x: setattr(Box(), "a"),
    "enumerate_three_arguments": lambda x: enumerate([1], 1, 2),
    "sum_unknown_keyword": lambda x: sum([1], begin=1),
    "abs_no_argument": lambda x: abs(),
    "callable_two_arguments": lambda x: callable(x, x),
    "list_two_arguments": lambda x: list([1], [2]),
    "dict_two_arguments": lambda x: dict({}, {}),
    "next_no_argument": lambda x: next(),
    "add_int_and_str": lambda x: 1 + "a",
    "compare_list_and_tuple": lambda x: [1] < (1,),
}


def _expected_error(call) -> type:
    with pytest.raises(Exception) as info:
        call(torch.ones(2))
    return info.type


@pytest.mark.parametrize("name", list(BAD_CALLS), ids=list(BAD_CALLS))
def test_bad_call_is_caught_by_the_users_handler(name):
    call = BAD_CALLS[name]
    error = _expected_error(call)

    def fn(x):
        try:
            call(x)
        except error:
            return x + 1
        return x - 1

    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=backend, fullgraph=True)(torch.ones(2))
    torch.testing.assert_close(got, fn(torch.ones(2)))
    assert backend.count == 1


@pytest.mark.parametrize("name", ["isinstance_keyword", "getattr_four_arguments"])
def test_uncaught_bad_call_raises_its_type(name):
    call = BAD_CALLS[name]
    error = _expected_error(call)

    def fn(x):
        y = x * 2
        call(y)
        return y

    with pytest.raises(error):
        ember.compile(fn, backend="eager")(torch.ones(2))
