"""The model zoo: transformers architectures nobody here wrote, from tiny configs, called as
their users call them (eval under ``no_grad``, a training step with ``loss.backward()``,
``generate`` with a compiled forward). Results always equal eager's (outputs, tokens,
gradients and which are None); capture (no eager fallback, graphs and breaks no more than
torch.compile's on the same call) may fall short only where zoo_expected.SHORTFALLS says so.

CI runs the models of zoo_expected.CI_SHARE; ``EMBER_ZOO=all`` runs every model, and
``EMBER_ZOO=inductor`` adds the results of every model's eval and train through the inductor
(slow: C++ kernels are built for each)."""
from __future__ import annotations

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
@pytest.mark.skipif(os.environ.get("EMBER_ZOO") != "inductor", reason="EMBER_ZOO=inductor runs it")
@pytest.mark.parametrize("name,mode", [(zoo.name, mode) for zoo in ZOO for mode in ("eval", "train")])
def test_zoo_inductor_matches_eager(name: str, mode: str) -> None:
    zoo = BY_NAME[name]
    assert_same(run_ember(zoo, mode, backend="inductor"), run_eager(zoo, mode), mode)


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
