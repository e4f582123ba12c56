"""Collectives in user code through ember: 2 gloo processes, compared with eager.

Functional collectives (``torch.distributed._functional_collectives``) and ``dist.all_reduce`` on
a tensor the graph produced are graph ops (``_c10d_functional.*`` with their ``wait_tensor``):
one graph, no break, as torch.compile; ``dist.all_reduce(async_op=True)`` returns a ``Work``
handle, so it breaks the graph cleanly and runs as it is.
"""
from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

import ember
from dist_harness import Counter, assert_close, run_ranks, torch_compile_breaks

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not built")


def funcol_all_reduce(x: torch.Tensor) -> torch.Tensor:
    import torch.distributed._functional_collectives as funcol

    return funcol.all_reduce(x * 2, "sum", dist.group.WORLD) + 1


def funcol_gather_scatter(x: torch.Tensor) -> torch.Tensor:
    import torch.distributed._functional_collectives as funcol

    gathered = funcol.all_gather_tensor(x.sin(), 0, dist.group.WORLD)
    return funcol.reduce_scatter_tensor(gathered * 3, "sum", 0, dist.group.WORLD).cos()


def c10d_all_reduce(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    dist.all_reduce(y)
    return y.relu()


def c10d_all_reduce_max(x: torch.Tensor) -> torch.Tensor:
    y = x.exp()
    dist.all_reduce(y, op=dist.ReduceOp.MAX)
    return y + x


def c10d_async(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    work = dist.all_reduce(y, async_op=True)
    work.wait()
    return y + 1


CASES = {f.__name__: f for f in (funcol_all_reduce, funcol_gather_scatter, c10d_all_reduce, c10d_all_reduce_max,
                                 c10d_async)}


def scenario(rank: int, world: int) -> dict:
    out = {}
    for name, fn in CASES.items():
        x = torch.randn(4, 6, generator=torch.Generator().manual_seed(rank)) + rank
        expected = fn(x)
        with Counter() as c:
            compiled = ember.compile(fn, backend=c.backend)
            assert_close(compiled(x), expected, f"rank {rank} {name}")
            first_call = c.summary()
            assert_close(compiled(x), expected, f"rank {rank} {name} again")
        out[name] = dict(first_call, torch_compile=torch_compile_breaks(fn, x), later=c.summary())
        ember.reset()
    return out


@pytest.fixture(scope="module")
def results() -> dict:
    return run_ranks(scenario)


@pytest.mark.parametrize("case", ["funcol_all_reduce", "funcol_gather_scatter", "c10d_all_reduce",
                                  "c10d_all_reduce_max"])
def test_collective_is_a_graph_op(results: dict, case: str) -> None:
    got = results[case]
    assert got["graphs"] == 1 and got["breaks"] == 0 and not got["fallbacks"], got
    assert (got["later"]["graphs"], got["later"]["breaks"]) == (1, 0), "a second call recompiled"


def test_async_all_reduce_breaks_cleanly(results: dict) -> None:
    """A break at the async all-reduce and one at ``work.wait()``, as torch.compile."""
    got = results["c10d_async"]
    assert not got["fallbacks"] and not got["later"]["fallbacks"], got
    assert got["breaks"] == 2 and "async_op=True" in got["reasons"][0], got
    assert got["breaks"] <= got["torch_compile"]["breaks"], got
