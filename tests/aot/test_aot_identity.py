"""Calls that return their argument itself (``type_as``/``to``/``float`` to the same dtype,
``contiguous`` on a contiguous tensor, ``expand_as``/``view_as`` to the same shape) are aliases
in eager: an in-place op on the argument afterwards is seen through their result. The compiled
graph must see it too (``ember_aot.identity``), in inference and in training graphs."""
from __future__ import annotations

import pytest
import torch

from aot_helpers import BACKENDS, compare_fn

IDENTITIES = {
    "type_as": lambda v: v.type_as(v),
    "to": lambda v: v.to(v.dtype),
    "float": lambda v: v.float(),
    "contiguous": lambda v: v.contiguous(),
    "expand_as": lambda v: v.expand_as(v),
    "view_as": lambda v: v.view_as(v),
}


def _program(identity):
    def fn(x):
        h = x * 2
        v = h.narrow(1, 1, 3)
        alias = identity(v)
        v.div_(2)  # eager: ``alias`` sees the division
        return torch.nn.functional.gelu(alias), h

    return fn


@pytest.mark.parametrize("requires_grad", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", list(IDENTITIES))
def test_in_place_op_is_seen_through_an_identity_call(name, requires_grad):
    fn = _program(IDENTITIES[name])
    compare_fn(fn, lambda: [torch.randn(4, 5, requires_grad=requires_grad)], BACKENDS["aot_eager"])


def test_a_real_conversion_is_not_an_alias():
    """``to`` another dtype copies: the later division must not reach its result."""
    def fn(x):
        h = x * 2
        copy = h.to(torch.float64)
        h.div_(2)
        return copy.sin(), h

    compare_fn(fn, lambda: [torch.randn(3, 4, requires_grad=True)], BACKENDS["aot_eager"])
