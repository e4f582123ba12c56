"""ember_aot against eager PyTorch on modules: outputs, gradients of every parameter and input,
buffers (BatchNorm running statistics after several training steps)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from aot_helpers import BACKENDS, compare_module
from aot_models import GPT, BatchNorm2d, Block, CausalSelfAttention, ResNet18


def _x(*shape, grad=True):
    def make(step):
        g = torch.Generator().manual_seed(step)
        return [torch.randn(*shape, generator=g).requires_grad_(grad)]
    return make


class MLP(nn.Module):
    def __init__(self, act=F.relu):
        super().__init__()
        self.a, self.b, self.act = nn.Linear(8, 16), nn.Linear(16, 4), act

    def forward(self, x):
        return self.b(self.act(self.a(x)))


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = BatchNorm2d(8)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ConvPoolHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3)
        self.fc = nn.Linear(6 * 3 * 3, 5)

    def forward(self, x):
        x = F.avg_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(x.flatten(1))


class Conv1dPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3, padding=1)

    def forward(self, x):
        return F.max_pool1d(torch.tanh(self.conv(x)), 2)


class Depthwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.pw = nn.Conv2d(4, 8, 1)

    def forward(self, x):
        return F.hardswish(self.pw(F.hardsigmoid(self.dw(x)) * x))


class Deconv(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 2, 2, stride=2)

    def forward(self, x):
        return torch.sigmoid(self.up(x))


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(12)
        self.gn = nn.GroupNorm(2, 4)

    def forward(self, x):
        return self.ln(self.gn(x).flatten(2)).sum(1)


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.prelu = nn.PReLU()

    def forward(self, x):
        y = self.lin(x)
        return F.elu(y) + F.leaky_relu(y, 0.1) + self.prelu(y) + F.softplus(y) + F.silu(y)


class EmbedClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.fc = nn.Linear(8, 3)

    def forward(self, idx, target):
        logits = self.fc(self.emb(idx).mean(1))
        return logits, F.cross_entropy(logits, target)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x, mask):
        b, t = x.size(0), x.size(1)
        q = self.q(x).view(b, t, 2, 8).transpose(1, 2)
        k = self.k(x).view(b, t, 2, 8).transpose(1, 2)
        v = self.v(x).view(b, t, 2, 8).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return y.transpose(1, 2).reshape(b, t, 16)


class ManualAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) / 4.0, dim=-1)
        return att @ v


class ArgmaxHead(nn.Module):
    """A differentiable output and two non-differentiable ones (argmax indices, a bool mask)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 7)

    def forward(self, x):
        y = self.fc(x)
        return y, y.argmax(-1), y > 0


class PartlyFrozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.frozen, self.head = nn.Linear(6, 6), nn.Linear(6, 2)
        self.frozen.requires_grad_(False)

    def forward(self, x):
        return self.head(torch.relu(self.frozen(x)))


class ResidualDropout0(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 10)

    def forward(self, x):
        return x + F.dropout(F.gelu(self.fc(x)), 0.0, self.training)


def _tokens(step):
    g = torch.Generator().manual_seed(step)
    return [torch.randint(0, 128, (2, 32), generator=g), torch.randint(0, 128, (2, 32), generator=g)]


def _embed_inputs(step):
    g = torch.Generator().manual_seed(step)
    return [torch.randint(0, 20, (4, 5), generator=g), torch.randint(0, 3, (4,), generator=g)]


def _attn_inputs(step):
    g = torch.Generator().manual_seed(step)
    return [torch.randn(2, 6, 16, generator=g, requires_grad=True), torch.randn(6, 6, generator=g)]


# name: (module factory, inputs(step), steps, tolerance, train mode)
CASES = {
    "linear": (lambda: nn.Linear(8, 4), _x(3, 8), 1, 1e-5, True),
    "mlp_relu": (MLP, _x(5, 8), 2, 1e-5, True),
    "mlp_gelu": (lambda: MLP(F.gelu), _x(5, 8), 1, 1e-5, True),
    "mlp_tanh": (lambda: MLP(torch.tanh), _x(5, 8), 1, 1e-5, True),
    "conv2d": (lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), _x(2, 3, 9, 9), 1, 1e-4, True),
    "conv_bn_train": (ConvBN, _x(4, 3, 8, 8), 3, 1e-4, True),
    "conv_bn_eval": (ConvBN, _x(4, 3, 8, 8), 2, 1e-4, False),
    "conv_pool_head": (ConvPoolHead, _x(2, 3, 8, 8), 1, 1e-4, True),
    "conv1d_pool": (Conv1dPool, _x(3, 4, 10), 1, 1e-4, True),
    "depthwise": (Depthwise, _x(2, 4, 6, 6), 1, 1e-4, True),
    "deconv": (Deconv, _x(2, 4, 3, 3), 1, 1e-4, True),
    "norms": (Norms, _x(3, 4, 3, 4), 1, 1e-4, True),
    "layernorm": (lambda: nn.LayerNorm(16), _x(4, 16), 1, 1e-5, True),
    "activations": (Activations, _x(4, 6), 1, 1e-5, True),
    "embedding_ce": (EmbedClassifier, _embed_inputs, 2, 1e-5, True),
    "sdpa_masked": (Attention, _attn_inputs, 1, 1e-4, True),
    "manual_attention": (ManualAttention, _x(2, 5, 16), 1, 1e-4, True),
    "causal_attention": (lambda: CausalSelfAttention(32, 4), _x(2, 8, 32), 1, 1e-4, True),
    "transformer_block": (lambda: Block(32, 4), _x(2, 8, 32), 2, 1e-4, True),
    "argmax_head": (ArgmaxHead, _x(3, 5), 1, 1e-5, True),
    "partly_frozen": (PartlyFrozen, _x(4, 6), 2, 1e-5, True),
    "residual_dropout0": (ResidualDropout0, _x(3, 10), 1, 1e-5, True),
    "input_no_grad": (MLP, _x(5, 8, grad=False), 1, 1e-5, True),
    "gpt": (GPT, _tokens, 2, 1e-4, True),
    "resnet18_train": (ResNet18, _x(2, 3, 32, 32), 2, 1e-3, True),
    "resnet18_eval": (ResNet18, _x(2, 3, 32, 32), 1, 1e-3, False),
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_module_matches_eager(case, backend):
    make, inputs, steps, tol, train = CASES[case]
    compare_module(make, inputs, BACKENDS[backend], steps=steps, tol=tol, train=train)
