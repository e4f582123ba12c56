"""The model zoo: transformers architectures nobody here wrote, from tiny configs, called as
their users call them (eval under ``no_grad``, a training step with ``loss.backward()``,
``generate`` with a compiled forward). Results always equal eager's (outputs, tokens,
gradients and which are None); capture (no eager fallback, graphs and breaks no more than
torch.compile's on the same call) may fall short only where zoo_expected.SHORTFALLS says so.

CI runs the models of zoo_expected.CI_SHARE, also through the inductor (C++ kernels on the CPU);
``EMBER_ZOO=all`` runs every model, ``EMBER_ZOO=inductor`` every model through the inductor too
(slow: kernels are built for each), and ``pytest -m gpu`` every model through the inductor on CUDA."""
from __future__ import annotations

import functools
import os

import pytest
import torch

pytest.importorskip("transformers")

from zoo_expected import CI_SHARE, SHORTFALLS  # noqa: E402
from zoo_harness import (CaptureShortfall, Result, assert_same, observe_ember, run_eager,  # noqa: E402
                         run_ember, run_torch_compile, shortfall)
from zoo_models import BY_NAME, ZOO, build, inputs  # noqa: E402


def _cases() -> list:
    everything = os.environ.get("EMBER_ZOO") in ("all", "inductor")
    cases = []
    for zoo in ZOO:
        if not everything and zoo.name not in CI_SHARE:
            continue
        for mode in zoo.modes:
            reason = SHORTFALLS.get((zoo.name, mode))
            marks = [pytest.mark.xfail(strict=True, raises=CaptureShortfall, reason=reason)] if reason else []
            cases.append(pytest.param(zoo.name, mode, marks=marks, id=f"{zoo.name}-{mode}"))
    return cases


@pytest.mark.parametrize("name,mode", _cases())
def test_zoo(name: str, mode: str) -> None:
    zoo = BY_NAME[name]
    expected = run_eager(zoo, mode)
    got = run_ember(zoo, mode)
    assert_same(got, expected, mode)  # a wrong result is a failure, never an expected one
    if got.capture.fallback:  # short whatever torch.compile does: spare its run
        raise CaptureShortfall(f"eager fallback: {got.capture.first_reason}")
    reason = shortfall(got.capture, run_torch_compile(zoo, mode))
    if reason:
        raise CaptureShortfall(reason)


@pytest.mark.slow
def _inductor_cases(device: str) -> list:
    """CI's share of models on the CPU (``EMBER_ZOO=inductor``: every model); every model on CUDA."""
    everything = device == "cuda" or os.environ.get("EMBER_ZOO") == "inductor"
    marks = [pytest.mark.gpu] if device == "cuda" else []
    return [pytest.param(zoo.name, mode, marks=marks, id=f"{zoo.name}-{mode}")
            for zoo in ZOO if everything or zoo.name in CI_SHARE for mode in zoo.modes]


def _check_inductor(name: str, mode: str, device: str) -> None:
    """Outputs, tokens and gradients (None ones too) through ``backend="inductor"`` equal eager's,
    and no part of the call fell back to eager."""
    zoo = BY_NAME[name]
    got = run_ember(zoo, mode, backend="inductor", device=device)
    assert not got.capture.fallback, got.capture.first_reason
    exact = functools.cache(lambda: run_eager(zoo, mode, device, torch.float64))
    assert_same(got, run_eager(zoo, mode, device), mode, exact)


@pytest.mark.parametrize("name,mode", _inductor_cases("cpu"))
def test_zoo_inductor_matches_eager(name: str, mode: str) -> None:
    _check_inductor(name, mode, "cpu")


@pytest.mark.parametrize("name,mode", _inductor_cases("cuda"))
def test_zoo_inductor_cuda_matches_eager(name: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    _check_inductor(name, mode, "cuda")


def test_table_lists_only_zoo_cases() -> None:
    """A shortfall entry names a model and mode of the zoo (the table only shrinks)."""
    cases = {(zoo.name, mode) for zoo in ZOO for mode in zoo.modes}
    assert set(SHORTFALLS) <= cases, set(SHORTFALLS) - cases
    assert set(CI_SHARE) <= set(BY_NAME)


def test_sliding_window_generate_does_not_recompile_per_token() -> None:
    """Mistral's sliding-window cache counts its tokens in an int attribute
    (``cumulative_length``): the int becomes symbolic once it varies, so that ``generate`` of 6
    tokens compiles 3 graphs (prefill, first step, symbolic steps) as torch.compile does, not one
    per token until the cache limit sends the forward to eager."""
    zoo = BY_NAME["mistral"]
    batch = inputs(zoo, "generate")

    def generate(wrap) -> torch.Tensor:
        model = build(zoo, "generate")
        model.forward = wrap(model.forward)
        return model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6,
                              do_sample=False)

    expected = generate(lambda fn: fn)
    got = observe_ember(lambda wrap: Result([generate(wrap)], {}), "eager")
    assert torch.equal(got.outputs[0], expected)
    assert not got.capture.fallback, got.capture.first_reason
    assert (got.capture.graphs, got.capture.breaks) == (3, 0)
