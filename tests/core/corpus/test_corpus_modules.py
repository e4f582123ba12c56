"""Corpus: nn.Module forward with submodules, containers, buffers, parameters, properties,
helper/class/static methods, super().forward."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, module, args, graphs=None, **kw):
    CASES.append(Case(name, None, args, graphs, module=module, **kw))


# -- library modules ------------------------------------------------------------------------------
add("linear", lambda: nn.Linear(4, 3), [(t(2, 4),), (t(2, 4, seed=1),), (t(5, 4),)], 2)
add("linear_no_bias_3d", lambda: nn.Linear(4, 2, bias=False), [(t(2, 3, 4),)], 1)
add("conv2d", lambda: nn.Conv2d(2, 3, 3, padding=1), [(t(1, 2, 5, 5),), (t(2, 2, 4, 4),)], 2)
add("conv1d_stride", lambda: nn.Conv1d(3, 4, 3, stride=2), [(t(2, 3, 9),)], 1)
add("sequential", lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2), nn.Tanh()),
    [(t(3, 4),), (t(1, 4),)], 2)
add("nested_sequential", lambda: nn.Sequential(nn.Sequential(nn.Linear(3, 3), nn.GELU()), nn.LayerNorm(3)),
    [(t(2, 3),)], 1)
add("layernorm", lambda: nn.LayerNorm(5), [(t(2, 5),), (t(3, 2, 5),)], 2)
add("embedding", lambda: nn.Embedding(10, 4), [(torch.tensor([[1, 2], [3, 9]]),)], 1)
add("dropout_eval", lambda: nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).eval(), [(t(2, 3),)], 1)
add("batchnorm_eval", lambda: nn.BatchNorm1d(3).eval(), [(t(4, 3),)], 1)
add("batchnorm_train_updates_buffers", lambda: nn.BatchNorm1d(3), [(t(4, 3),), (t(4, 3, seed=2),)], 1)
add("maxpool_avgpool", lambda: nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(1)), [(t(1, 1, 4, 4),)], 1)
add("multihead_attention_like_softmax", lambda: nn.Softmax(dim=-1), [(t(2, 3),)], 1)
add("flatten_unflatten", lambda: nn.Sequential(nn.Flatten(), nn.Unflatten(1, (2, 6))), [(t(2, 3, 4),)], 1)


# -- user modules ---------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 4)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) + x


add("user_mlp_residual", MLP, [(t(2, 4),), (t(3, 4),)], 2)


class WithModuleList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) if i % 2 == 0 else torch.relu(layer(x))
        return x, len(self.layers)


add("module_list_loop", WithModuleList, [(t(2, 3),)], 1)


class ModuleListIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])

    def forward(self, x):
        return self.layers[0](x) + self.layers[-1](x)


add("module_list_index", ModuleListIndex, [(t(2, 3),)], 1)


class WithModuleDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 2), "b": nn.Linear(3, 1)})

    def forward(self, x, which):
        outs = {}
        for name, head in self.heads.items():
            outs[name] = head(x)
        return outs[which] * 2, outs


add("module_dict_items", WithModuleDict, [(t(2, 3), "a"), (t(2, 3), "b")], 2)


class ModuleDictKey(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 2), "b": nn.Linear(3, 2)})

    def forward(self, x, which):
        return self.heads[which](x)


add("module_dict_getitem", ModuleDictKey, [(t(2, 3), "a"), (t(2, 3), "b")], 2)


class Buffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor([1.0, 2.0, 3.0]))
        self.register_buffer("offset", torch.zeros(3), persistent=False)
        self.weight = nn.Parameter(torch.ones(3) * 0.5)

    def forward(self, x):
        return x * self.scale + self.offset + self.weight


add("buffers_and_parameter", Buffers, [(t(2, 3),), (t(3),)], 2)


class ParamMath(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 3))

    def forward(self, x):
        return x @ self.w.t() + self.w.sum(), self.w.shape


add("parameter_methods_and_shape", ParamMath, [(t(2, 3),)], 1)


class ReturnsParam(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3))

    def forward(self, x):
        return self.w, x + 1


add("returns_parameter_unchanged", ReturnsParam, [(t(3),)], 1)


class Props(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.factor = 3

    @property
    def doubled(self):
        return self.factor * 2

    @property
    def weight_t(self):
        return self.lin.weight.t()

    def forward(self, x):
        return x @ self.weight_t * self.doubled


add("properties", Props, [(t(2, 3),)], 1)


class Helpers(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def _norm(self, x, eps=1e-5):
        return x / (x.norm(dim=-1, keepdim=True) + eps)

    @staticmethod
    def _act(x):
        return F.gelu(x)

    @classmethod
    def _scale(cls, x):
        return x * cls.SCALE

    SCALE = 0.25

    def forward(self, x):
        return self._scale(self._act(self._norm(self.lin(x), eps=1e-3)))


add("helper_static_class_methods", Helpers, [(t(2, 3),)], 1)


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x)


class Derived(Base):
    def forward(self, x):
        y = super().forward(x)
        return torch.sigmoid(y) + super().forward(y)


add("super_forward", Derived, [(t(2, 3),)], 1)


class Derived2(Base):
    def __init__(self):
        super().__init__()
        self.extra = nn.Linear(3, 1)

    def forward(self, x):
        return self.extra(super(Derived2, self).forward(x))


add("super_two_arg_forward", Derived2, [(t(2, 3),)], 1)


class TrainingFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        if self.training:
            return self.lin(x) * 2
        return self.lin(x)


add("reads_training_flag", TrainingFlag, [(t(2, 3),)], 1)


class ConfigAttr(nn.Module):
    def __init__(self):
        super().__init__()
        self.use_bias = False
        self.dims = (2, 3)
        self.cfg = {"alpha": 0.5}
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x).reshape(-1, *self.dims)
        if self.use_bias:
            y = y + 1
        return y * self.cfg["alpha"]


add("plain_attributes_tuple_dict", ConfigAttr, [(t(2, 3),)], 1)


class KwargsForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, *, scale=1.0, mask=None):
        y = self.lin(x) * scale
        if mask is not None:
            y = y.masked_fill(mask, 0.0)
        return y


add("forward_kwonly", KwargsForward, [(t(2, 3),), {"args": (t(2, 3),), "kwargs": {"scale": 2.0}},
                                      {"args": (t(2, 3),), "kwargs": {"mask": t(2, 3, dtype=torch.bool)}}], 3)


class Attention(nn.Module):
    def __init__(self, d=8, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, n, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, n, d)
        return self.out(y)


add("tiny_attention", Attention, [(t(2, 4, 8),), (t(1, 3, 8),)], 2, atol=1e-5, rtol=1e-5)  # genexpr unpacking


class Attention2(Attention):
    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = [z.view(b, n, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v)]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


add("tiny_attention_sdpa", Attention2, [(t(2, 4, 8),), (t(1, 3, 8),)], 2, atol=1e-5, rtol=1e-5)


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = MLP()
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.block(x)).squeeze(-1)


add("nested_user_modules", Nested, [(t(3, 4),)], 1)


class SharedSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.again = self.lin

    def forward(self, x):
        return self.again(self.lin(x))


add("shared_submodule", SharedSubmodule, [(t(2, 3),)], 1)


class CallsOtherMethodWithTensors(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)

    def branch(self, x, which):
        return getattr(self, which)(x)

    def forward(self, x):
        return self.branch(x, "a") - self.branch(x, "b")


add("getattr_submodule_by_name", CallsOtherMethodWithTensors, [(t(2, 3),)], 1)


class HasAttrModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        if hasattr(self, "missing"):
            y = y * 100
        if hasattr(self, "lin"):
            y = y + 1
        return y


add("hasattr_on_module", HasAttrModule, [(t(2, 3),)], 1)


class ParamsIteration(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.ones(2))
        self.b = nn.Parameter(torch.ones(2) * 2)

    def forward(self, x):
        total = x
        for p in self.parameters():
            total = total + p
        return total


add("iterate_parameters", ParamsIteration, [(t(2),)], 1)  # Module._named_members' memo set holds tensors


class NoGradParam(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_parameter("w", nn.Parameter(torch.ones(3), requires_grad=False))

    def forward(self, x):
        return x * self.w


add("frozen_parameter", NoGradParam, [(t(3),)], 1)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(6, 3)

    def forward(self, xs):
        h = torch.zeros(xs.shape[0], 3)
        outs = []
        for i in range(xs.shape[1]):
            h = torch.tanh(self.cell(torch.cat([xs[:, i], h], dim=-1)))
            outs.append(h)
        return torch.stack(outs, 1), h


add("unrolled_rnn", Recurrent, [(t(2, 4, 3),), (t(2, 2, 3),)], 2)


@pytest.mark.parametrize("case", params(CASES))
def test_modules(case):
    run_case(case)
