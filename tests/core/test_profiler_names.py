"""A compiled call under ``torch.profiler``: each appears as a range named after the user's
function and the graph that ran (``ember: f graph 0``), a compile as ``ember: f capture and
compile``; before, a trace showed only the aten calls of ember's wrapper."""
from __future__ import annotations

import torch

import ember


def _names(calls) -> list[str]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        calls()
    return [e.key for e in prof.key_averages() if e.key.startswith("ember:")]


def scaled(x: torch.Tensor) -> torch.Tensor:
    return (x.sin() * 2).relu()


def test_compiled_calls_and_compiles_are_named_ranges() -> None:
    compiled = ember.compile(scaled, backend="eager")
    names = _names(lambda: [compiled(torch.randn(8)) for _ in range(3)])
    assert sorted(names) == ["ember: scaled capture and compile", "ember: scaled graph 0"]
    names = _names(lambda: (compiled(torch.randn(8)), compiled(torch.randn(8, dtype=torch.float64)),
                            compiled(torch.randn(8, dtype=torch.float64))))
    assert sorted(names) == ["ember: scaled capture and compile", "ember: scaled graph 0", "ember: scaled graph 1"]


def test_a_compiled_module_is_named_after_its_class() -> None:
    model = ember.compile(torch.nn.Linear(4, 2), backend="eager")
    model(torch.randn(3, 4))
    assert _names(lambda: model(torch.randn(3, 4))) == ["ember: Linear graph 0"]
