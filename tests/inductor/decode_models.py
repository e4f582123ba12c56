"""A gpt-fast-style decoder with a static KV cache, and its token-by-token decode loop.

The cache is a pair of module buffers written in place at the decoding position
(``k_cache[:, :, input_pos] = k_val``); attention reads the whole cache under a boolean mask row
of a causal buffer. This is what gpt-fast compiles (``decode_one_token`` with ``fullgraph=True``),
and what transformers' ``StaticCache`` does.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F

import ember


class KVCache(torch.nn.Module):
    def __init__(self, heads: int, length: int, head_dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(1, heads, length, head_dim, dtype=dtype))
        self.register_buffer("v_cache", torch.zeros(1, heads, length, head_dim, dtype=dtype))

    def update(self, input_pos: torch.Tensor, k_val: torch.Tensor, v_val: torch.Tensor) -> tuple:
        k_out, v_out = self.k_cache, self.v_cache
        k_out[:, :, input_pos] = k_val
        v_out[:, :, input_pos] = v_val
        return k_out, v_out


class Block(torch.nn.Module):
    def __init__(self, dim: int, heads: int, length: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wqkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.wo = torch.nn.Linear(dim, dim, bias=False)
        self.w1 = torch.nn.Linear(dim, 4 * dim, bias=False)
        self.w2 = torch.nn.Linear(4 * dim, dim, bias=False)
        self.n1, self.n2 = torch.nn.RMSNorm(dim), torch.nn.RMSNorm(dim)
        self.kv = KVCache(heads, length, dim // heads, dtype)

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.wqkv(self.n1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
        k, v = self.kv.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, d))
        return x + self.w2(F.silu(self.w1(self.n2(x))))


class TinyLM(torch.nn.Module):
    def __init__(self, vocab: int = 64, dim: int = 64, heads: int = 4, layers: int = 2, length: int = 16,
                 dtype: torch.dtype = torch.bfloat16) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(Block(dim, heads, length, dtype) for _ in range(layers))
        self.out = torch.nn.Linear(dim, vocab, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(length, length, dtype=torch.bool)))

    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        mask = self.causal[None, None, input_pos]
        x = self.emb(idx)
        for layer in self.layers:
            x = layer(x, input_pos, mask)
        return self.out(x)


def decode_one_token(model: torch.nn.Module, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    logits = model(x, input_pos)
    return torch.argmax(logits[:, -1], dim=-1, keepdim=True)


def twin_models(device: str, dtype: torch.dtype = torch.bfloat16, **kw: int) -> tuple[TinyLM, TinyLM]:
    """Two models with the same weights and empty caches, on ``device``."""
    torch.manual_seed(0)
    a = TinyLM(dtype=dtype, **kw).to(device, dtype).eval()
    b = TinyLM(dtype=dtype, **kw).to(device, dtype).eval()
    b.load_state_dict(a.state_dict())
    return a, b


def decode(step: Callable, model: TinyLM, steps: int, device: str) -> list[int]:
    """Greedy tokens of ``steps`` decoding steps from token 5, ``step`` run as gpt-fast does."""
    x = torch.tensor([[5]], device=device)
    tokens = []
    with torch.no_grad():
        for i in range(steps):
            x = step(model, x, torch.tensor([i], device=device)).clone()
            tokens.append(int(x.item()))
    return tokens


def assert_same_caches(got: TinyLM, expected: TinyLM) -> None:
    """The caches compiled code wrote equal eager's up to bfloat16 rounding of the fused norms."""
    for a, b in zip(got.layers, expected.layers):
        for name in ("k_cache", "v_cache"):
            torch.testing.assert_close(getattr(a.kv, name), getattr(b.kv, name), rtol=2e-2, atol=2e-2)


def check_decode(device: str, steps: int, caplog: pytest.LogCaptureFixture, mode: str | None = None,
                 options: dict | None = None, **sizes: Any) -> None:
    """gpt-fast's loop with ``decode_one_token`` compiled whole (``fullgraph=True``): the tokens
    eager's, the caches eager's up to rounding, and nothing logged (no graph run eagerly)."""
    compiled_model, eager_model = twin_models(device, **sizes)
    step = ember.compile(decode_one_token, fullgraph=True, mode=mode, options=options)
    with caplog.at_level(logging.WARNING, logger="ember"):
        got = decode(step, compiled_model, steps, device)
    assert got == decode(decode_one_token, eager_model, steps, device)
    assert_same_caches(compiled_model, eager_model)
    assert not [r for r in caplog.records if r.name.startswith("ember")], [r.getMessage() for r in caplog.records]
