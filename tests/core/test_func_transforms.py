"""torch.func transforms inside captured code are one graph of aten ops, as under torch.compile.

``grad`` (argnums), ``vmap`` (in_dims, nested, over grad), ``jacrev``, ``jvp`` and
``functional_call``: results equal eager's on the eager, aot_eager and inductor backends.
"""
import pytest
import torch
from torch.func import functional_call, grad, jacrev, jvp, vmap

from core_helpers import assert_captured_like_torch

torch.manual_seed(0)
WEIGHT = torch.randn(4)
LINEAR = torch.nn.Linear(4, 3)


def _args(*shapes):
    return lambda: tuple(torch.randn(*s, generator=torch.Generator().manual_seed(i + 1)) for i, s in enumerate(shapes))


def grad_closure(x):
    return grad(lambda a: (a.sin() * WEIGHT).sum())(x)


def grad_argnums(x, y):
    return grad(lambda a, b: (a * b).sin().sum(), argnums=(0, 1))(x, y)


def vmap_closure(x):
    return vmap(lambda a: a @ WEIGHT + a.sum())(x)


def vmap_in_dims(x, y):
    return vmap(lambda a, b: a * b, in_dims=(1, None))(x, y)


def vmap_nested(x):
    return vmap(vmap(lambda a: a.sin() * 2))(x)


def vmap_of_grad(x):
    return vmap(grad(lambda a: a.sin().sum()))(x)


def jacrev_closure(x):
    return jacrev(lambda a: a.sin() * WEIGHT)(x)


def jvp_closure(x):
    return jvp(lambda a: a.sin() * WEIGHT, (x,), (torch.ones(4),))


def functional_call_params(x):
    return functional_call(LINEAR, {"weight": LINEAR.weight * 2, "bias": LINEAR.bias}, (x,))


@pytest.mark.parametrize("fn, make_args", [
    (grad_closure, _args((4,))),
    (grad_argnums, _args((4,), (4,))),
    (vmap_closure, _args((3, 4))),
    (vmap_in_dims, _args((4, 3), (4,))),
    (vmap_nested, _args((2, 3, 4))),
    (vmap_of_grad, _args((3, 4))),
    (jacrev_closure, _args((4,))),
    (jvp_closure, _args((4,))),
    (functional_call_params, _args((2, 4))),
], ids=lambda v: getattr(v, "__name__", ""))
def test_one_graph_on_every_backend(fn, make_args):
    assert_captured_like_torch(fn, make_args)
