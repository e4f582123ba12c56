"""FSDP2 (``fully_shard`` on each block and on the root) through ember: 2 gloo processes.

A GPT and a CNN train 3 SGD steps compiled and eagerly from the same seeds: losses, the local
shards of every gradient and, at the end, of every parameter are equal; an eval call under
``torch.no_grad()`` inside the compiled function too. FSDP2's hooks run in Python: the compiled
code breaks at each call of a sharded module (one per block and one at the root, each step), and
the forwards between are graphs, with no eager fallback.
"""
from __future__ import annotations

import pytest
import torch

import ember
from dist_harness import Counter, SmallCNN, TinyGPT, assert_close, cnn_batch, gpt_batch, run_ranks

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not built")

STEPS = 3


def _sharded(cls: type) -> torch.nn.Module:
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = cls()
    for block in (model.blocks if cls is TinyGPT else [model.features]):
        fully_shard(block)
    return fully_shard(model)


def _local(t: torch.Tensor | None) -> torch.Tensor | None:
    return t.to_local() if t is not None and hasattr(t, "to_local") else t


def _case(rank: int, cls: type, batch) -> dict:
    ref, model = _sharded(cls), _sharded(cls)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt_mine = torch.optim.SGD(model.parameters(), lr=0.1)
    with Counter() as c:
        compiled = ember.compile(model, backend=c.backend)
        for step in range(STEPS):
            b = batch(rank, step)
            expected = ref(**b)
            expected.backward()
            loss = compiled(**b)
            loss.backward()
            assert_close(loss.detach(), expected.detach(), f"rank {rank} step {step} loss")
            for (name, p), q in zip(ref.named_parameters(), model.parameters()):
                assert_close(_local(q.grad), _local(p.grad), f"rank {rank} step {step} grad of {name}")
            for opt in (opt_ref, opt_mine):
                opt.step()
                opt.zero_grad(set_to_none=True)
        breaks_in_training = c.count("break")
        for (name, p), q in zip(ref.named_parameters(), model.parameters()):
            assert_close(_local(q), _local(p), f"rank {rank} parameter {name} after {STEPS} steps")

        def evaluate(**inputs: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                return model(**inputs)

        b = batch(rank, STEPS)
        got = ember.compile(evaluate, backend=c.backend)(**b)
        with torch.no_grad():
            assert_close(got, ref(**b), f"rank {rank} eval")
        assert not got.requires_grad
    return dict(c.summary(), breaks_in_training=breaks_in_training)


def scenario(rank: int, world: int) -> dict:
    out = {"gpt": _case(rank, TinyGPT, gpt_batch)}
    ember.reset()
    out["cnn"] = _case(rank, SmallCNN, cnn_batch)
    return out


@pytest.fixture(scope="module")
def results() -> dict:
    return run_ranks(scenario)


@pytest.mark.parametrize("case, sharded_calls", [("gpt", 3), ("cnn", 2)])
def test_fsdp2_captures(results: dict, case: str, sharded_calls: int) -> None:
    got = results[case]
    assert not got["fallbacks"], got["fallbacks"]
    assert got["graphs"] >= sharded_calls, got
    # one break per sharded module's call, captured once (the same calls every step)
    assert got["breaks_in_training"] == sharded_calls, got
    assert all("FSDP2" in r for r in got["reasons"]), got["reasons"]
