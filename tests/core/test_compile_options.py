"""A typo in ``options=`` is an error naming the valid keys, for every backend that takes
options (issue 45 item 14, issue 49 item 6), raised by ``ember.compile`` itself, before anything
runs: the inductor used to ignore unknown keys, and onnxrt and tvm refused them only when a graph
compiled, where the refusal became an eager fallback with a warning."""
from __future__ import annotations

import pytest
import torch

import ember
from ember.backends import REGISTRY
from ember.plugin import BackendSpec

TAKING_OPTIONS = sorted(name for name, entry in REGISTRY.entries().items()
                        if entry.spec.accepts_options and entry.available)


def test_every_first_party_backend_that_takes_options_declares_them() -> None:
    assert {"inductor", "onnxrt", "tvm"} & set(TAKING_OPTIONS)
    for name in TAKING_OPTIONS:
        assert REGISTRY.entries()[name].spec.option_names(), name


@pytest.mark.parametrize("backend", TAKING_OPTIONS)
@pytest.mark.parametrize("target", ["function", "module"])
def test_an_unknown_option_is_an_error_naming_the_valid_ones(backend: str, target: str) -> None:
    valid = REGISTRY.entries()[backend].spec.option_names()
    model = torch.nn.Linear(2, 2) if target == "module" else (lambda x: x + 1)
    with pytest.raises(ValueError, match="unknown option") as raised:
        ember.compile(model, backend=backend, options={"bogus": 1, valid[0]: None})
    message = str(raised.value)
    assert "'bogus'" in message and backend in message
    assert all(key in message for key in valid)


def test_valid_options_are_accepted() -> None:
    x = torch.randn(3)
    compiled = ember.compile(lambda t: t * 2, backend="inductor", options={"strict": True, "eager_fallback": False})
    torch.testing.assert_close(compiled(x), x * 2)


def test_a_backend_that_declares_no_option_names_checks_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    def own(gm, example_inputs, mode=None, options=None):
        seen.append(options)
        return gm.forward

    monkeypatch.setitem(REGISTRY._user, "own_options", REGISTRY._user.get("own_options"))
    REGISTRY.register(BackendSpec(name="own_options", compiler=own, accepts_options=True))
    x = torch.randn(3)
    ember.compile(lambda t: t + 1, backend="own_options", options={"anything": 1})(x)
    assert seen == [{"anything": 1}]
