"""The bias CUDA's memory-efficient attention reads is laid out as the kernel requires: outer
strides multiples of 8 elements, the last dimension dense, a broadcast over heads kept as a
zero stride. Checked on the generated wrapper (the kernel itself needs a GPU; the GPU test is
tests/inductor/triton/test_triton_gpu.py::test_generate_with_a_padded_mask_stays_compiled)."""
from __future__ import annotations

import os
import re

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from ember_inductor import symbolic
from ember_inductor.attention_bias import aligned_strides
from ember_inductor.codegen.cpp_backend import CppBackend
from ember_inductor.codegen.wrapper import WrapperCodegen
from ember_inductor.graph import GraphLowering
from ember_inductor.scheduler import Scheduler

aten = torch.ops.aten


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    bias = torch.where(mask, 0.0, float("-inf")).expand(q.shape[0], q.shape[1], 1, mask.shape[-1])
    return aten._scaled_dot_product_efficient_attention(q, k, v, bias, False)[0]


def _wrapper(mode: str, keys: int) -> str:
    q, k, v = torch.randn(2, 4, 1, 16), torch.randn(2, 4, keys, 16), torch.randn(2, 4, keys, 16)
    mask = torch.rand(2, 1, 1, keys) > 0.2
    gm = make_fx(_attention, tracing_mode=mode)(q, k, v, mask)
    with symbolic.using_hints(symbolic.shape_env_of(gm)):
        scheduler = Scheduler(GraphLowering(gm).run())
        prepared = CppBackend().prepare(scheduler)
        return WrapperCodegen(scheduler, prepared.kernels, torch.device("cpu"), prepared.tensor_args).generate()


def test_aligned_strides() -> None:
    assert aligned_strides([2, 4, 1, 13], [False] * 4) == [64, 16, 16, 1]
    assert aligned_strides([2, 4, 1, 13], [False, True, False, False]) == [16, 0, 16, 1]
    assert aligned_strides([2, 4, 5, 16], [False] * 4) == [320, 80, 16, 1]  # aligned: dense
    assert aligned_strides([2, 4, 3, 1], [False, False, True, False]) == [96, 24, 8, 1]  # inner stride 1: materialized


@pytest.mark.parametrize("mode", ["fake", "symbolic"])
def test_bias_over_13_keys_gets_a_stride_of_16(mode: str) -> None:
    call = _wrapper(mode, 13).split("def call_checked")[0]
    bias = re.search(r"(b\d+) = empty_strided\(\((\w+), 1, 1, (\w+), \), \((.*), \), dtype", call)
    assert bias, call
    strides = bias.group(4).split(", ")
    if mode == "fake":
        assert strides == ["16", "0", "16", "1"]
    else:  # rounded up at run time: (keys + 7) // 8 * 8
        assert strides[1:] == ["0", strides[0], "1"] and "// 8" in strides[0]
    assert re.search(rf"reinterpret\({bias.group(1)}, \({bias.group(2)}, \w+, 1, {bias.group(3)}, \)", call)  # heads: 0
