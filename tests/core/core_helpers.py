"""Test helpers for the core: a backend that records graphs, and a no-fallback assertion."""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Iterator

import torch


class CountingBackend:
    """A ``(gm, example_inputs) -> callable`` backend that keeps every graph it is given."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list[Any]] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        return gm.forward

    @property
    def count(self) -> int:
        return len(self.graphs)

    def ops(self, index: int = -1) -> list[str]:
        gm = self.graphs[index]
        return [str(getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes
                if n.op in ("call_function", "call_method")]


@contextlib.contextmanager
def no_fallback() -> Iterator[None]:
    """Fail if ember warns that it ran something eagerly."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    messages = [str(w.message) for w in caught if str(w.message).startswith("ember:")]
    assert not messages, messages


@contextlib.contextmanager
def expect_fallback(fragment: str) -> Iterator[None]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    messages = [str(w.message) for w in caught if str(w.message).startswith("ember:")]
    assert any(fragment in m for m in messages), messages
