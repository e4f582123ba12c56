"""Small models for the ember_aot tests: a hand-written ResNet-18 and a GPT.

The residual block is the shared one from benchmarks/models.py; the rest is aot's own.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from benchmarks.models import BasicBlock


class BatchNorm2d(nn.BatchNorm2d):
    """BatchNorm2d without the input-rank check, which symbolic tracing cannot evaluate."""

    def _check_input_dim(self, input):
        pass


# Not benchmarks.models.ResNet18: a 32x32 (CIFAR) stem, 3x3 stride-1 conv and no max-pool.
class ResNet18(nn.Module):
    """ResNet-18 layout ([2, 2, 2, 2] basic blocks) for 32x32 images; ``width`` scales channels."""

    def __init__(self, width: int = 16, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = BatchNorm2d(width)
        layers = []
        cin = width
        for i, mult in enumerate((1, 2, 4, 8)):
            cout = width * mult
            stride = 1 if i == 0 else 2
            layers += [BasicBlock(cin, cout, stride, BatchNorm2d), BasicBlock(cout, cout, 1, BatchNorm2d)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


# Not benchmarks.models.GPT: SDPA attention, dropout, a tied head and the loss in forward(idx, targets).
class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.heads = heads
        self.d = d
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.dropout = dropout

    def forward(self, x):
        b, t, d = x.size(0), x.size(1), self.d
        qkv = self.qkv(x).split(d, dim=2)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, d)
        return F.dropout(self.proj(y), self.dropout, self.training)


class Block(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, dropout)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.dropout = dropout

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        h = self.out(F.gelu(self.fc(self.ln2(x))))
        return x + F.dropout(h, self.dropout, self.training)


class GPT(nn.Module):
    """A small GPT: token + position embeddings, pre-LN blocks, tied output head."""

    def __init__(self, vocab: int = 128, d: int = 64, heads: int = 4, layers: int = 2,
                 seq: int = 32, dropout: float = 0.0) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.Sequential(*[Block(d, heads, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.scale = 1.0 / math.sqrt(d)

    def forward(self, idx, targets):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        x = self.ln(self.blocks(x))
        logits = x @ self.tok.weight.t()
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        return logits, loss
