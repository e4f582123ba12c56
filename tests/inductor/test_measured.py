"""A CPU graph slower compiled than eager falls back to eager after its first calls (measured)."""
from __future__ import annotations

import logging
import time

import pytest
import torch

import ember
from ember_inductor.measured import TRIALS, FasterOf


def _recorder(name: str, calls: list, delay: float = 0.0):
    def run(*args):
        calls.append(name)
        if delay:
            time.sleep(delay)
        return args[0] + 1
    return run


@pytest.mark.parametrize("slow", ["compiled", "eager"])
def test_the_faster_candidate_stays(slow: str) -> None:
    calls: list[str] = []
    delays = {"compiled": 0.0, "eager": 0.0, slow: 0.005}
    chooser = FasterOf(_recorder("compiled", calls, delays["compiled"]),
                       _recorder("eager", calls, delays["eager"]), "test graph")
    x = torch.zeros(3)
    for _ in range(2 + 2 * TRIALS):
        assert torch.equal(chooser(x), x + 1)
    assert calls == ["compiled", "eager"] * (1 + TRIALS)  # first calls untimed, then alternating
    faster = "eager" if slow == "compiled" else "compiled"
    assert chooser.choice == faster
    calls.clear()
    for _ in range(3):
        chooser(x)
    assert calls == [faster] * 3


@pytest.mark.parametrize("slow", ["compiled", "eager"])
def test_the_holder_calls_the_choice_itself(slow: str) -> None:
    """``ember.settle``: once chosen, the guard entry's runner calls the faster one directly."""
    delays = {"compiled": 0.0, "eager": 0.0, slow: 0.005}
    compiled, eager = _recorder("compiled", [], delays["compiled"]), _recorder("eager", [], delays["eager"])
    chooser = FasterOf(compiled, eager, "test graph")
    held: list = []
    chooser.settle(held.append)
    x = torch.zeros(3)
    for _ in range(2 + 2 * TRIALS - 1):
        chooser(x)
    assert held == []  # not chosen yet
    chooser(x)
    assert held == [eager if slow == "compiled" else compiled]


def test_calls_needing_grad_always_run_compiled() -> None:
    calls: list[str] = []
    chooser = FasterOf(_recorder("compiled", calls, 0.005), _recorder("eager", calls), "test graph")
    w = torch.zeros(3, requires_grad=True)
    chooser(w)
    assert calls == ["compiled"] and chooser.choice is None  # not counted as a trial call
    x = torch.zeros(3)
    for _ in range(2 + 2 * TRIALS):
        chooser(x)
    assert chooser.choice == "eager"
    calls.clear()
    chooser(w)
    with torch.no_grad():
        chooser(w)
    assert calls == ["compiled", "eager"]


def test_a_graph_drawing_random_numbers_stays_compiled() -> None:
    calls: list[str] = []

    def compiled(x):
        calls.append("compiled")
        time.sleep(0.005)
        return x + torch.rand(3)
    chooser = FasterOf(compiled, _recorder("eager", calls), "test graph")
    chooser(torch.zeros(3))
    assert chooser.choice == "compiled"
    for _ in range(4):
        chooser(torch.zeros(3))
    assert calls == ["compiled"] * 5


def _ops(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    y.mul_(0.5)  # an input mutated in place
    return torch.softmax(x * y, dim=-1) + torch.sin(x).sum(0)


@pytest.mark.parametrize("fallback", [True, False])
def test_compiled_model_matches_eager_through_the_choice(fallback: bool, caplog) -> None:
    fn = ember.compile(_ops, backend="inductor", options={"eager_fallback": fallback})
    x = torch.randn(64, 32)
    y_ref, y = torch.randn(64, 32), None
    y = y_ref.clone()
    with caplog.at_level(logging.INFO, logger="ember.inductor"):
        for _ in range(2 + 2 * TRIALS + 2):
            expected = _ops(x, y_ref)
            torch.testing.assert_close(fn(x, y), expected)
            torch.testing.assert_close(y, y_ref)
    chosen = [r.getMessage() for r in caplog.records if "median of" in r.getMessage()]
    assert len(chosen) == (1 if fallback else 0), chosen


def test_dropout_in_training_mode_stays_compiled(caplog) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Dropout(0.5))
    fn = ember.compile(model, backend="inductor")
    x = torch.randn(8, 16)
    with caplog.at_level(logging.INFO, logger="ember.inductor"), torch.no_grad():
        for _ in range(6):
            out = fn(x)
            kept = out != 0
            torch.testing.assert_close(out[kept], (model[0](x) * 2)[kept])
    assert any("draws random numbers" in r.getMessage() for r in caplog.records)
