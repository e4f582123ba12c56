"""Small hand-written models for the tvm backend tests and benchmark: ResNet-18 and a GPT.

ResNet-18 is the shared one from benchmarks/models.py (with this suite's batch norm); the GPT is tvm's own.
"""
from __future__ import annotations

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # benchmarks/tvm_cpu.py imports this file outside pytest

from benchmarks import models  # noqa: E402


# Kept: nn.BatchNorm2d's rank check breaks fx tracing (lifted); this is one functional inference call.
class BatchNorm2d(nn.BatchNorm2d):
    """Inference batch norm written as the functional call ember's core captures."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            False, 0.0, self.eps)


def ResNet18(width: int = 64, num_classes: int = 10) -> models.ResNet18:  # noqa: N802
    """torchvision's ResNet-18 layout (2-2-2-2 basic blocks), with a width multiplier."""
    return models.ResNet18(num_classes=num_classes, width=width, norm=BatchNorm2d)


# Not benchmarks.models.GPT: the causal mask is a ctx x ctx buffer so fx symbolic tracing (lifted) works.
class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, ctx: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = att.masked_fill(self.mask == 0, float("-inf"))  # sequences are ctx long
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, ctx: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, ctx)
        self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """nanoGPT's layout: token + position embeddings, pre-norm blocks, tied-free LM head."""

    def __init__(self, vocab: int = 97, ctx: int = 16, dim: int = 32, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads, ctx) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(0, idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        return self.head(self.ln(self.blocks(x)))
