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


def torch_compile_graph_count(fn: Callable[..., Any], *args: Any) -> int:
    """How many graphs torch.compile captures for ``fn(*args)`` (for comparison only)."""
    import torch._dynamo

    counting = CountingBackend()
    torch._dynamo.reset()
    torch.compile(fn, backend=counting)(*args)
    torch._dynamo.reset()
    return counting.count


def assert_captured_like_torch(fn: Callable[..., Any], make_args: Callable[[], tuple],
                               backends: tuple[str, ...] = ("eager", "aot_eager", "inductor"),
                               grad: bool = False) -> None:
    """``fn`` compiled by ember: as many graphs as torch.compile, no eager fallback, and on every
    backend results (and, with ``grad``, the gradients of the inputs that require them, None
    included) equal to eager's."""
    import ember

    def run(call: Callable[..., Any]) -> tuple[Any, list[Any]]:
        args = make_args()
        out = call(*args)
        grads: list[Any] = []
        if grad:
            sum(t.sum() for t in torch.utils._pytree.tree_leaves(out)).backward()
            grads = [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        return out, grads

    expected, expected_grads = run(fn)
    assert_like = torch.testing.assert_close
    counting = CountingBackend()
    with no_fallback():
        ember.compile(fn, backend=counting)(*make_args())
    assert counting.count == torch_compile_graph_count(fn, *make_args())
    for backend in backends:
        with no_fallback():
            out, grads = run(ember.compile(fn, backend=backend))
        assert_like(out, expected)
        assert [g is None for g in grads] == [g is None for g in expected_grads]
        assert_like([g for g in grads if g is not None], [g for g in expected_grads if g is not None])
