"""The distributed path on CUDA: world size 1 over NCCL, ``mode="reduce-overhead"``.

DDP (``ember.compile(ddp)``, its graph split at the buckets) and FSDP2 (``fully_shard`` per block
and on the root) train a GPT 3 steps with the inductor under CUDA graphs; losses, gradients and
parameters equal eager's on the same model.
"""
from __future__ import annotations

import os

import pytest
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

import ember
from dist_harness import TinyGPT, assert_close, gpt_batch, run_ranks

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.distributed.is_available() or not torch.distributed.is_nccl_available(),
                                 reason="torch.distributed with NCCL is not built")]

for _key, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                     ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_key, _value)


def _close(got: torch.Tensor | None, expected: torch.Tensor | None, what: str) -> None:
    if got is not None and hasattr(got, "to_local"):
        got, expected = got.to_local(), expected.to_local()
    assert (got is None) == (expected is None), what
    if expected is not None:  # TF32-free float32, but the inductor's kernels round differently
        torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-4, msg=lambda m: f"{what}: {m}")


def _train(rank: int, wrap) -> None:
    torch.manual_seed(0)
    ref = wrap(TinyGPT().cuda())
    torch.manual_seed(0)
    model = wrap(TinyGPT().cuda())
    compiled = ember.compile(model, mode="reduce-overhead")
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, model)]
    for step in range(3):
        b = gpt_batch(rank, step, device="cuda")
        expected = ref(**b)
        expected.backward()
        loss = compiled(**b)
        loss.backward()
        _close(loss.detach(), expected.detach(), f"step {step} loss")
        for (name, p), q in zip(ref.named_parameters(), model.parameters()):
            _close(q.grad, p.grad, f"step {step} grad of {name}")
        for opt in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)
    for (name, p), q in zip(ref.named_parameters(), model.parameters()):
        _close(q.detach(), p.detach(), f"parameter {name}")


def _fsdp(model: torch.nn.Module) -> torch.nn.Module:
    from torch.distributed.fsdp import fully_shard

    for block in model.blocks:
        fully_shard(block)
    return fully_shard(model)


def scenario(rank: int, world: int) -> bool:
    _train(rank, lambda m: DDP(m, bucket_cap_mb=0.02))
    ember.reset()
    _train(rank, _fsdp)
    return True


def test_ddp_and_fsdp2_on_cuda_reduce_overhead() -> None:
    assert run_ranks(scenario, world=1, backend="nccl")
