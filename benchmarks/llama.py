"""A Llama-style decoder written for the benchmarks, in the manner of gpt-fast: a static KV cache
held as module buffers and updated with ``index_put``, rotary embeddings from a precomputed table,
grouped-query attention through SDPA with a boolean mask cut from a causal table, SwiGLU feed-forward,
RMSNorm. Weights are random (no download). Shapes of real checkpoints are in ``SHAPES``.

Used by ``benchmarks.llm_decode`` (decode tokens/s) and ``benchmarks.train_bf16`` (training).
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass(frozen=True)
class Shape:
    dim: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    rope_base: float = 10000.0
    tie: bool = False  # output projection shares the embedding's weight

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    def parameters(self) -> int:
        attn = self.dim * (self.heads + 2 * self.kv_heads) * self.head_dim + self.dim * self.dim
        block = attn + 3 * self.dim * self.ffn + 2 * self.dim
        return self.layers * block + (1 if self.tie else 2) * self.vocab * self.dim + self.dim


SHAPES = {
    "tiny": Shape(dim=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=1024),
    "1b": Shape(dim=2048, layers=16, heads=32, kv_heads=8, ffn=8192, vocab=128256, rope_base=500000.0,
                tie=True),  # Llama-3.2-1B
    "7b": Shape(dim=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000),  # Llama-2-7B
}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


class StaticKV(nn.Module):
    """Keys and values of every position, written in place at ``pos`` each step."""

    def __init__(self, batch: int, kv_heads: int, length: int, head_dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.register_buffer("k", torch.zeros(batch, kv_heads, length, head_dim, dtype=dtype), persistent=False)
        self.register_buffer("v", torch.zeros(batch, kv_heads, length, head_dim, dtype=dtype), persistent=False)

    def forward(self, pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.k[:, :, pos] = k
        self.v[:, :, pos] = v
        return self.k, self.v


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of ``x`` (batch, seq, heads, head_dim), pairs interleaved."""
    pairs = x.float().unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    cos, sin = cos[None, :, None], sin[None, :, None]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.s = s
        self.wqkv = nn.Linear(s.dim, (s.heads + 2 * s.kv_heads) * s.head_dim, bias=False)
        self.wo = nn.Linear(s.dim, s.dim, bias=False)
        self.cache: StaticKV | None = None

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None,
                pos: torch.Tensor | None) -> torch.Tensor:
        b, t, _ = x.shape
        s = self.s
        q, k, v = self.wqkv(x).split([s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim], -1)
        q = rotate(q.view(b, t, s.heads, s.head_dim), cos, sin).transpose(1, 2)
        k = rotate(k.view(b, t, s.kv_heads, s.head_dim), cos, sin).transpose(1, 2)
        v = v.view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
        if self.cache is not None:
            k, v = self.cache(pos, k, v)
        if s.kv_heads != s.heads:
            k = k.repeat_interleave(s.heads // s.kv_heads, dim=1)
            v = v.repeat_interleave(s.heads // s.kv_heads, dim=1)
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, s.dim))


class Block(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.attn_norm, self.ffn_norm = RMSNorm(s.dim), RMSNorm(s.dim)
        self.attn = Attention(s)
        self.w1 = nn.Linear(s.dim, s.ffn, bias=False)
        self.w3 = nn.Linear(s.dim, s.ffn, bias=False)
        self.w2 = nn.Linear(s.ffn, s.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None,
                pos: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin, mask, pos)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, s: Shape, max_len: int = 2048) -> None:
        super().__init__()
        self.s = s
        self.tok = nn.Embedding(s.vocab, s.dim)
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.layers))
        self.norm = RMSNorm(s.dim)
        self.out = nn.Linear(s.dim, s.vocab, bias=False)
        if s.tie:
            self.out.weight = self.tok.weight
        inv = 1.0 / (s.rope_base ** (torch.arange(0, s.head_dim, 2).float() / s.head_dim))
        angles = torch.outer(torch.arange(max_len).float(), inv)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)), persistent=False)

    def setup_cache(self, batch: int, length: int) -> None:
        """Static KV caches of ``length`` positions; calls then take ``pos`` (the positions written)."""
        p = self.out.weight
        for block in self.blocks:
            block.attn.cache = StaticKV(batch, self.s.kv_heads, length, self.s.head_dim, p.dtype).to(p.device)
        self.causal = self.causal[:length, :length]

    def forward(self, idx: torch.Tensor, pos: torch.Tensor | None = None) -> torch.Tensor:
        if pos is None:  # training: the whole sequence, causal
            t = idx.shape[1]
            cos, sin, mask = self.cos[:t], self.sin[:t], None
        else:
            cos, sin, mask = self.cos[pos], self.sin[pos], self.causal[None, None, pos]
        x = self.tok(idx)
        for block in self.blocks:
            x = block(x, cos, sin, mask, pos)
        return self.out(self.norm(x))


def build(shape: str, device: str, dtype: torch.dtype, seed: int = 0) -> Llama:
    """A model of ``SHAPES[shape]`` with random weights (std 0.02), made on ``device`` directly."""
    torch.manual_seed(seed)
    s = SHAPES[shape]
    with torch.device("meta"):
        model = Llama(s)
    model = model.to_empty(device=device)
    if s.tie:
        model.out.weight = model.tok.weight
    for name, p in model.named_parameters():
        with torch.no_grad():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
    inv = 1.0 / (s.rope_base ** (torch.arange(0, s.head_dim, 2, device=device).float() / s.head_dim))
    angles = torch.outer(torch.arange(model.cos.shape[0], device=device).float(), inv)
    model.cos, model.sin = angles.cos(), angles.sin()
    model.causal = torch.tril(torch.ones_like(model.causal))
    return model.to(dtype)
