"""The classes the transformers registry sweep (``tests/zoo/registry_sweep.py``) found, each reduced
to a few lines of code nobody here wrote would contain, captured like torch.compile:

- gemma3's sequence classifier crashed the user's program (``super(): __class__ cell not found``):
  a method using zero-argument ``super()`` was run from a generated runner after a failed capture;
- gemma3 and got_ocr2 ran their forward eagerly: ``Output(**model_output, ...)`` of a ModelOutput
  built in the call (a dict subclass dataclass) was "not a mapping";
- ctrl broke at ``numpy.sqrt`` of a size (3 graphs / 6 breaks for torch.compile, 6 / 10 for ember),
  perceiver at ``numpy.prod`` of one;
- big_bird broke at each ``self.attn = self.other_attn`` (assigning a submodule in forward);
- switch_transformers ran its forward eagerly: ``self.to(device)`` in forward (``torch._C._nn._parse_to``
  taken for a change of global state, then ``p.data = p``), and ``self[f"expert_{i[0]}"]`` (an f-string of
  a tensor: no break was possible at its FORMAT_VALUE, so the whole function ran in Python).
"""
from __future__ import annotations

import collections
import dataclasses

import numpy as np
import torch

import ember
from core_helpers import assert_captured_like_torch, no_fallback


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

    def g(x):  # torch.compile makes 2 graphs of it (a break at float() of np.prod), ember 1
        return x * float(np.prod(x.shape)) + np.arange(3).sum() + np.arange(2).mean()

    assert_captured_like_torch(f, lambda: (_x(2, 16),))
    explained = ember.explain(g)(_x(3))
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons
    torch.testing.assert_close(ember.compile(g, backend="eager")(_x(3)), g(_x(3)))


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


class _Quantish(torch.nn.Module):
    """ibert's quantized linear reads its weights through ``.data`` (200 graphs / 244 breaks for
    ember's training step against torch.compile's 21 / 24, a break at every read)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        w = self.lin.weight.data.detach()
        scale = w.abs().max() / 127
        return torch.nn.functional.linear(x, torch.round(self.lin.weight / scale) * scale) + x.data.sum()


def test_reading_data_is_captured():
    model = _Quantish()
    assert_captured_like_torch(lambda x: model(x), lambda: (_x(2, 4, grad=True),), grad=True)


def test_changing_a_parameter_through_data_stays_right():
    """An EMA update through ``.data`` of a parameter that requires grad: hidden from autograd, so
    the graph breaks at the change (it is not handed to a backward graph), with eager's result."""
    import copy

    def run(compile_fn):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 4)
        ema = copy.deepcopy(model)

        def step(x):
            loss = model(x).sum()
            ema.weight.data.mul_(0.9).add_(model.weight.data * 0.1)
            return loss

        step = compile_fn(step)
        out = [step(_x(2, 4, grad=True)) for _ in range(3)]
        return out, ema.weight.detach().clone()

    (got, got_ema), (want, want_ema) = run(lambda f: ember.compile(f, backend="aot_eager")), run(lambda f: f)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_ema, want_ema)


class _Positions(torch.nn.Module):
    """ctrl: ``self.pos_encoding = self.pos_encoding.to(dtype=...)`` in forward (a break at each)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.arange(8.0).view(8, 1))

    def forward(self, x):
        self.table = self.table.to(dtype=x.dtype) * 1.0
        return x + self.table[: x.shape[0]]


def test_a_buffer_assigned_in_forward_is_used_and_kept():
    ours, theirs = _Positions(), _Positions()
    explained = ember.explain(lambda x: ours(x))(_x(3, 1))
    assert explained.graph_break_count == 0, explained.break_reasons
    assert_captured_like_torch(lambda x: ours(x), lambda: (_x(3, 1),))
    theirs(_x(3, 1))
    assert "table" in ours._buffers and not isinstance(ours.table, torch.nn.Parameter)
    torch.testing.assert_close(ours.table, theirs.table)


def test_a_model_output_passed_in_is_read_as_a_mapping():
    """xlm: a ModelOutput crossing a graph break reaches the resume function as an input, whose
    ``to_tuple()`` reads ``self.keys()`` (a C method of a dict subclass with a Python __setattr__)."""
    from transformers.modeling_outputs import BaseModelOutput

    def f(out):
        return out.to_tuple()[0] * 2 + out[0], len(list(out.keys())), out["hidden_states"][0] + 1

    make = lambda: (BaseModelOutput(last_hidden_state=_x(2), hidden_states=(_x(3),)),)  # noqa: E731
    explained = ember.explain(f)(*make())
    assert explained.graph_break_count == 0, explained.break_reasons
    assert_captured_like_torch(f, make, backends=("eager",))


def test_an_item_costs_one_graph_break():
    """xlm's ``assert lengths.max().item() <= slen``: ember broke at ``.item`` and again at the call
    in the resume function."""
    def f(x):
        y = x * 2
        assert y.max().item() < 100
        return y + 1

    explained = ember.explain(f)(_x(4))
    assert explained.graph_break_count == 1, explained.break_reasons
    assert_captured_like_torch(f, lambda: (_x(4),), backends=("eager",))


def test_a_graph_that_only_switches_grad_mode_is_not_compiled():
    """xlm and flaubert under ``with torch.no_grad()`` around a model that breaks: the pieces
    before and after the break held only grad-mode switches, and each was a graph (5 graphs
    against torch.compile's 3)."""
    from core_helpers import CountingBackend, torch_compile_graph_count

    def model(x):
        y = x * 2
        n = y.sum().item()  # a break inside the model
        return y + n

    def f(x):
        with torch.no_grad():
            return model(x)

    counting = CountingBackend()
    torch.testing.assert_close(ember.compile(f, backend=counting)(_x(3)), f(_x(3)))
    assert counting.count <= torch_compile_graph_count(f, _x(3)), [g.code for g in counting.graphs]


def test_a_relative_import_of_a_loaded_module_is_captured(tmp_path, monkeypatch):
    """transformers' ``from ..modeling_utils import PreTrainedModel`` inside a function (wav2vec2's
    output hooks): the whole wav2vec2 family fell back to eager on it."""
    import importlib
    import sys

    pkg = tmp_path / "relpkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text("class Base:\n    pass\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "hooks.py").write_text(
        "def install(x):\n    from ..base import Base\n    return x.sin() * (3 if isinstance(x, Base) else 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("relpkg.base")
    install = importlib.import_module("relpkg.sub.hooks").install
    try:
        assert_captured_like_torch(lambda x: install(x + 1) + 1, lambda: (torch.ones(3),))
    finally:
        for name in [m for m in sys.modules if m.startswith("relpkg")]:
            del sys.modules[name]


def test_and_of_an_expanded_mask_is_not_a_write():
    """``a & a.transpose(1, 2)`` of an expanded mask (parakeet's attention mask) was taken for an
    in-place write into overlapping memory (``operator.and_`` ends in an underscore)."""
    def f(mask, h):
        a = mask.unsqueeze(1).expand(-1, h.shape[1], -1)
        return h * (a & a.transpose(1, 2))

    assert_captured_like_torch(f, lambda: (torch.tensor([[True, True, False]]), torch.ones(1, 3, 3)))


class _Moves(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.head = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        self.head = self.head.to(y.device)  # already there: Module.to returns the same parameters
        return self.head(y).relu()


def test_module_to_in_forward_is_captured():
    model = _Moves()
    assert_captured_like_torch(lambda x: model(x), lambda: (_x(2, 4, grad=True),), grad=True)


class _Experts(torch.nn.ModuleDict):
    def forward(self, x, hit):
        out = torch.zeros_like(x)
        for i in hit:  # the experts a router chose (data-dependent: nonzero)
            out = out + self[f"e_{i[0]}"](x)
        return out


def test_an_f_string_of_a_tensor_breaks_the_graph_not_the_function():
    """torch.compile runs such a frame eagerly; ember breaks at the FORMAT_VALUE instead, and the
    conversion and format spec are Python's (``{x!r:>8}``)."""
    experts = _Experts({f"e_{i}": torch.nn.Linear(4, 4) for i in range(3)})

    def route(x):
        hit = torch.greater(x.sum(0)[:3], -100).nonzero()
        return experts(x * 2, hit) + 1

    def describe(x):
        return f"{x.sum():.3f}|{x.shape[0]!r:>4}|{x.max()!s}|{x.min()!a}"

    x = _x(5, 4)
    for fn in (route, describe):
        for backend in ("eager", "aot_eager"):
            with no_fallback():
                got = [ember.compile(fn, backend=backend)(x) for _ in range(2)]
            for out in got:
                assert out == fn(x) if isinstance(out, str) else torch.equal(out, fn(x))
