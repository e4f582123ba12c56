"""Compiled modules handled as users handle them (issue 45's net): deepcopy, a pickle round trip,
``load_state_dict`` into a fresh compiled module, dtype changes after compiling, ``train()`` /
``eval()`` flips and a parameter replaced, each equal to the same steps done eagerly on a twin of
the module, on every CPU backend.

The copies of a compiled module must compute with their own parameters and buffers: an EMA or a
teacher copy (``copy.deepcopy(compiled)``) whose compiled code read the original's weights was
silently wrong.
"""
from __future__ import annotations

import copy
import pickle
from typing import Any, Callable

import pytest
import torch
from torch import nn

import ember
from core_helpers import no_fallback

BACKENDS = ["eager", "aot_eager", "inductor"]


class Scaled(nn.Module):
    """A module with buffers: a persistent one, a non-persistent one, and a counter that its
    forward writes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.register_buffer("shift", torch.arange(3.0), persistent=False)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.lin(x) * self.scale + self.shift


def small_cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(4, 2))


def tiny_bert() -> nn.Module:
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=24, max_position_embeddings=16,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return transformers.BertModel(config, add_pooling_layer=False).eval()


class BertOutput(nn.Module):
    """BertModel called as users call it, returning the hidden states."""

    def __init__(self) -> None:
        super().__init__()
        self.bert = tiny_bert()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=ids).last_hidden_state


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], torch.Tensor]]] = {
    "linear": (lambda: nn.Linear(4, 2), lambda: torch.randn(3, 4)),
    "cnn_batchnorm": (small_cnn, lambda: torch.randn(2, 3, 8, 8)),
    "buffers": (Scaled, lambda: torch.randn(5, 4)),
    "bert": (BertOutput, lambda: torch.randint(0, 64, (2, 7))),
}

EVERY_MODEL_AND_BACKEND = pytest.mark.parametrize("name,backend", [(n, b) for n in MODELS for b in BACKENDS])


def _float_input(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x.to(dtype) if x.is_floating_point() else x


def _same(compiled: nn.Module, twin: nn.Module, x: torch.Tensor) -> None:
    """``compiled(x)`` equals ``twin(x)`` and leaves the same state (BatchNorm's running
    statistics, the counter buffer) behind."""
    with no_fallback():
        out = compiled(x)
    expected = twin(x)
    if expected.dtype in (torch.float16, torch.bfloat16):
        tol = dict(atol=2e-2, rtol=2e-2)
    elif getattr(compiled, "backend_name", None) == "inductor":  # fused kernels sum in another order
        tol = dict(atol=1e-4, rtol=1e-4)
    else:
        tol = {}
    torch.testing.assert_close(out, expected, **tol)
    own = {k.removeprefix("_orig_mod."): v for k, v in compiled.state_dict().items()}
    torch.testing.assert_close(own, twin.state_dict(), **tol)


def _perturb(module: nn.Module, seed: int) -> None:
    """Change every parameter and floating buffer in place, as an EMA update would."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in [*module.parameters(), *module.buffers()]:
            if t.is_floating_point():
                t.add_(torch.rand(t.shape, generator=gen, dtype=t.dtype))


def _compiled_and_twin(name: str, backend: str) -> tuple[nn.Module, nn.Module, torch.Tensor]:
    make, make_input = MODELS[name]
    torch.manual_seed(0)
    module = make()
    twin = copy.deepcopy(module)
    compiled = ember.compile(module, backend=backend)
    module.backend_name = backend  # read by _same (through the compiled module, copies too)
    x = make_input()
    _same(compiled, twin, x)
    return compiled, twin, x


COPIES: dict[str, Callable[[nn.Module], nn.Module]] = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda m: pickle.loads(pickle.dumps(m)),
}


@EVERY_MODEL_AND_BACKEND
def test_a_copy_computes_with_its_own_parameters(name: str, backend: str) -> None:
    compiled, twin, x = _compiled_and_twin(name, backend)
    for how, copy_of in COPIES.items():
        copied = copy_of(compiled)
        assert isinstance(copied, ember.OptimizedModule), how
        assert copied._orig_mod is not compiled._orig_mod, how
        copied_twin = copy.deepcopy(twin)
        _perturb(copied._orig_mod, seed=1)
        _perturb(copied_twin, seed=1)
        _same(copied, copied_twin, x)  # the copy reads its own (changed) weights
        _same(compiled, twin, x)  # and the original still its own
        _perturb(compiled._orig_mod, seed=2)
        _perturb(twin, seed=2)
        _same(copied, copied_twin, x)  # a change of the original's weights leaves the copy alone
        _same(compiled, twin, x)


@EVERY_MODEL_AND_BACKEND
def test_state_dict_loaded_into_a_fresh_compiled_module(name: str, backend: str) -> None:
    compiled, twin, x = _compiled_and_twin(name, backend)
    _perturb(compiled._orig_mod, seed=3)
    _perturb(twin, seed=3)
    fresh, fresh_twin, _ = _compiled_and_twin(name, backend)  # compiled and called before the load
    fresh.load_state_dict(compiled.state_dict())
    fresh_twin.load_state_dict(twin.state_dict())
    _same(fresh, fresh_twin, x)
    plain = MODELS[name][0]()
    plain.load_state_dict(compiled._orig_mod.state_dict())  # and back into an uncompiled module
    torch.testing.assert_close(plain.state_dict(), twin.state_dict())


DTYPE_CHANGES: dict[str, tuple[Callable[[nn.Module], Any], torch.dtype]] = {
    "double": (lambda m: m.double(), torch.float64),
    "to_float64": (lambda m: m.to(torch.float64), torch.float64),
    "half": (lambda m: m.half(), torch.float16),
    "to_bfloat16": (lambda m: m.to(dtype=torch.bfloat16), torch.bfloat16),
    "float_again": (lambda m: m.float(), torch.float32),
}


@EVERY_MODEL_AND_BACKEND
def test_dtype_changes_after_compiling(name: str, backend: str) -> None:
    compiled, twin, x = _compiled_and_twin(name, backend)
    for how, (change, dtype) in DTYPE_CHANGES.items():
        assert change(compiled) is compiled, how  # nn.Module's methods return the module itself
        change(twin)
        _same(compiled, twin, _float_input(x, dtype))
        twin.load_state_dict(compiled._orig_mod.state_dict())  # no rounding drift into the next step


@EVERY_MODEL_AND_BACKEND
def test_train_and_eval_flips(name: str, backend: str) -> None:
    compiled, twin, x = _compiled_and_twin(name, backend)
    for mode in (False, True, False, True):
        compiled.train(mode)
        twin.train(mode)
        assert compiled.training is mode and compiled._orig_mod.training is mode
        _same(compiled, twin, x)
    compiled.training = False  # the attribute itself (this module's only), as torch.compile's mirrors it
    twin.training = False
    assert compiled._orig_mod.training is False
    _same(compiled, twin, x)


def _replace_parameters(module: nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    for owner in list(module.modules()):
        for pname, p in list(owner.named_parameters(recurse=False)):
            setattr(owner, pname, nn.Parameter(torch.randn(p.shape, generator=gen, dtype=p.dtype)))


@EVERY_MODEL_AND_BACKEND
def test_parameters_replaced_after_compiling(name: str, backend: str) -> None:
    compiled, twin, x = _compiled_and_twin(name, backend)
    _replace_parameters(compiled._orig_mod, seed=4)
    _replace_parameters(twin, seed=4)
    _same(compiled, twin, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_attributes_set_on_the_compiled_module_reach_the_original(backend: str) -> None:
    """``compiled.weight = nn.Parameter(...)`` replaces the original's weight, as torch.compile's
    module does; ``del`` too."""
    compiled, twin, x = _compiled_and_twin("linear", backend)
    weight = nn.Parameter(torch.randn(2, 4))
    compiled.weight = weight
    twin.weight = nn.Parameter(weight.detach().clone())
    assert compiled._orig_mod.weight is weight and "weight" not in compiled._parameters
    _same(compiled, twin, x)
    compiled.note = "kept"
    assert compiled._orig_mod.note == "kept"
    del compiled.note
    assert not hasattr(compiled._orig_mod, "note")
    del compiled.bias
    compiled.bias = None
    twin.bias = None
    _same(compiled, twin, x)


class Regional(nn.Module):
    """A model holding a compiled block (regional compilation), and the block itself."""

    def __init__(self) -> None:
        super().__init__()
        self.plain = nn.Linear(4, 4)
        self.block = ember.compile(self.plain, backend="eager")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.block(x))


def test_compiled_module_inside_a_model_is_copied_with_it() -> None:
    """The model's deepcopy holds a compiled copy of the block, which computes with the copied
    block's parameters (one copy of them: the copy memo is shared with the model's)."""
    torch.manual_seed(0)
    model = Regional()
    x = torch.randn(3, 4)
    model(x)
    copied = copy.deepcopy(model)
    assert copied.block._orig_mod is copied.plain and copied.plain is not model.plain
    _perturb(copied.plain, seed=5)
    torch.testing.assert_close(copied(x), torch.relu(copied.plain(x)))
    torch.testing.assert_close(model(x), torch.relu(model.plain(x)))


def test_copies_keep_the_compile_settings() -> None:
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    compiled = ember.compile(nn.Linear(4, 2), backend=backend, fullgraph=True, dynamic=False)
    copied = copy.deepcopy(compiled)
    x = torch.randn(3, 4)
    copied(x)
    assert len(calls) == 1  # the copy compiled through the same backend
    assert copied._ember_settings == compiled._ember_settings == dict(
        backend=backend, mode=None, fullgraph=True, dynamic=False, options=None)


@ember.compile(backend="eager")
def compiled_at_module_level(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


def test_compiled_functions_pickle_and_copy_as_torch_compile_s() -> None:
    """A compiled function pickles by reference when it is what its module's name holds (the
    decorator), and deepcopy returns it as it is, both as for torch.compile's functions; a
    compiled lambda does not pickle, as a lambda does not."""
    x = torch.randn(3)
    assert pickle.loads(pickle.dumps(compiled_at_module_level)) is compiled_at_module_level
    assert copy.deepcopy(compiled_at_module_level) is compiled_at_module_level
    torch.testing.assert_close(compiled_at_module_level(x), x * 2 + 1)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(ember.compile(lambda t: t + 1, backend="eager"))
    torch_compiled = torch.compile(lambda t: t + 1, backend="eager")
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(torch_compiled)
