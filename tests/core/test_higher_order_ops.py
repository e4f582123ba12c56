"""Control-flow higher-order operators inside captured code are one graph, as under torch.compile.

``torch.cond``, ``while_loop``, ``scan``, ``map`` and ``associative_scan`` (generic mode, which
vmaps its combine function over batches down to empty ones): their bodies become subgraphs of one node,
closures over tensors and parameters included, on the eager, aot_eager and inductor backends,
with results (and gradients) equal to eager's.
"""
import pytest
import torch
from torch._higher_order_ops.associative_scan import associative_scan
from torch._higher_order_ops.map import map as hop_map
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop

from core_helpers import assert_captured_like_torch

torch.manual_seed(0)
LINEAR = torch.nn.Linear(4, 4)


def _args(*shapes, requires_grad=False):
    gen = torch.Generator().manual_seed(1)
    return lambda: tuple(torch.randn(*s, generator=gen.manual_seed(i + 1)).requires_grad_(requires_grad)
                         for i, s in enumerate(shapes))


def cond_with_closures(x):
    scale = x * 2  # a tensor of the enclosing graph, read by both branches

    def positive(a):
        return LINEAR(a) + scale

    def negative(a):
        return a.cos() - LINEAR.bias * scale

    return torch.cond(x.sum() > 0, positive, negative, (x,)) * 3


def cond_two_outputs(x, y):
    return torch.cond(x.mean() > y.mean(), lambda a, b: (a + b, a * b), lambda a, b: (a - b, b.sin()), (x, y))


def cond_constant_predicate(x):
    return torch.cond(True, lambda a: a.sin(), lambda a: a.cos(), (x,))


def while_counts(x):
    i = torch.zeros((), dtype=torch.int64)
    return while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2 + LINEAR.bias), (i, x))


def scan_cumulative(x):
    def combine(carry, xi):
        new = carry + xi * LINEAR.weight[0]
        return new, new.sin()

    return scan(combine, torch.zeros(4), x)


def map_rows(x):
    total = x.sum()
    return hop_map(lambda row, bias: row * bias + total, x, LINEAR.bias)


def associative_scan_generic(x):
    return associative_scan(lambda a, b: a * b + b.sin(), x, dim=0, combine_mode="generic")


@pytest.mark.parametrize("fn, make_args", [
    (cond_with_closures, _args((2, 4))),
    (cond_two_outputs, _args((3,), (3,))),
    (cond_constant_predicate, _args((3,))),
    (scan_cumulative, _args((3, 4))),
    (map_rows, _args((3, 4))),
    (associative_scan_generic, _args((5, 3))),
], ids=lambda v: getattr(v, "__name__", ""))
def test_one_graph_on_every_backend(fn, make_args):
    assert_captured_like_torch(fn, make_args)


def test_while_loop_one_graph():
    assert_captured_like_torch(while_counts, _args((2, 4)))


def test_while_loop_gradients_on_the_inductor(monkeypatch):
    """The training trace saves every iteration's values: sizes known only when the loop has run
    (unbacked symbols), bound by the inductor's wrapper after the loop (strict: compiled, not run
    as aten)."""
    monkeypatch.setenv("EMBER_INDUCTOR_STRICT", "1")
    assert_captured_like_torch(while_counts, _args((2, 4), requires_grad=True), backends=("aot_eager", "inductor"),
                               grad=True)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_gradients_through_both_branches(sign):
    make = _args((2, 4), requires_grad=True)

    def args():
        (x,) = make()
        return (x.detach().abs().mul(sign).requires_grad_(),)

    assert_captured_like_torch(cond_with_closures, args, grad=True)



@torch.compiler.nested_compile_region
def _region(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w) + 1


def _repeated_region(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    for _ in range(4):
        x = _region(x, w)
    return x


def test_a_nested_compile_region_is_captured_into_the_graph() -> None:
    """``torch.compiler.nested_compile_region``'s placeholder raised under capture (ember answers
    ``is_dynamo_compiling()`` as torch.compile does), so each of the calls was a graph break and
    ran eagerly: 0 graphs where torch.compile makes 1."""
    def make() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(0)
        return torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g).requires_grad_()

    assert_captured_like_torch(_repeated_region, make, grad=True)
