"""The classes the transformers registry sweep (``tests/zoo/registry_sweep.py``) found, each reduced
to a few lines of code nobody here wrote would contain, captured like torch.compile:

- gemma3's sequence classifier crashed the user's program (``super(): __class__ cell not found``):
  a method using zero-argument ``super()`` was run from a generated runner after a failed capture;
- gemma3 and got_ocr2 ran their forward eagerly: ``Output(**model_output, ...)`` of a ModelOutput
  built in the call (a dict subclass dataclass) was "not a mapping";
- ctrl broke at ``numpy.sqrt`` of a size (3 graphs / 6 breaks for torch.compile, 6 / 10 for ember);
- big_bird broke at each ``self.attn = self.other_attn`` (assigning a submodule in forward).
"""
from __future__ import annotations

import collections
import dataclasses

import numpy as np
import torch

import ember
from core_helpers import assert_captured_like_torch


@dataclasses.dataclass
class _Output(collections.OrderedDict):  # transformers' ModelOutput, reduced
    a: torch.Tensor | None = None
    b: torch.Tensor | None = None

    def __post_init__(self):
        for name in ("a", "b"):
            if getattr(self, name) is not None:
                self[name] = getattr(self, name)


def _x(*shape: int, grad: bool = False) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).requires_grad_(grad)


def _kwargs(**kw):
    return kw


class _Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return _kwargs(**_Output(a=self.lin(x)), extra=x)["a"]


class _Child(_Base):
    def forward(self, x):
        return super().forward(x) * 2


def test_super_in_a_subclass_forward_and_a_model_output_unpacked_into_a_call():
    model = _Child()
    assert_captured_like_torch(lambda x: model(x), lambda: (_x(2, 4, grad=True),), grad=True)


def test_a_model_output_unpacked_into_another_output_class():
    def f(x):
        out = _Output(a=x + 1)
        return _Output(**out, b=x * 2).b + out.a

    assert_captured_like_torch(f, lambda: (_x(3),))


def test_numpy_functions_of_sizes_are_constants():
    def f(x):
        return x / np.sqrt(x.shape[-1]) * np.exp(np.float32(0.5)) + np.log2(8)

    assert_captured_like_torch(f, lambda: (_x(2, 16),))


class _Switching(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn, self.full, self.sparse = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x, sparse: bool):
        self.attn = self.sparse if sparse else self.full
        return self.attn(x)


def test_a_submodule_assigned_in_forward_is_used_and_kept():
    model = _Switching()
    explained = ember.explain(lambda x: model(x, True))(_x(2, 4))
    assert explained.graph_break_count == 0, explained.break_reasons
    assert_captured_like_torch(lambda x: model(x, True), lambda: (_x(2, 4),))
    assert model.attn is model.sparse
    assert_captured_like_torch(lambda x: model(x, False), lambda: (_x(2, 4),))
    assert model.attn is model.full and "attn" in model._modules


def test_vmap_over_tuples_and_a_generic_associative_scan():
    """falcon_mamba's selective scan: ``associative_scan(combine, (a, b), combine_mode="generic")``
    vmaps its combine over tuples (17 graphs / 23 breaks for ember, 1 / 0 for torch.compile)."""
    from torch._higher_order_ops.associative_scan import associative_scan

    def combine(left, right):
        return left[0] * right[0], right[0] * left[1] + right[1]

    def scan(a, b):
        return associative_scan(combine, (a, b), dim=1, combine_mode="generic")[1]

    def pairs(ab, c):
        return torch.vmap(lambda p, q: p[0] * q + p[1], in_dims=((0, 1), None))(ab, c)

    assert_captured_like_torch(scan, lambda: (_x(2, 8, 4).abs(), _x(2, 8, 4)), backends=("eager", "aot_eager"))
    assert_captured_like_torch(pairs, lambda: ((_x(3, 4), _x(4, 3)), _x(4)), backends=("eager", "aot_eager"))
