"""Layers of a compiled call step aside once they only pass calls on (``ember.settle``).

After the first call has been checked (``first_call``), the runner of the guard entry calls the
backend's callable itself; through the inductor, the runner calls the generated wrapper itself
for calls without grad (ember_aot's dispatch and the first-call check step aside). Observed with
``sys.setprofile``: which frame calls the callable on each call.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import torch

import ember
from ember.settle import Settling, settle


def _callers(is_target: Callable[[Any], bool], run: Callable[[], Any]) -> list[tuple[str, str]]:
    """(file, qualified name) of the caller of each call of a frame ``is_target`` accepts."""
    seen: list[tuple[str, str]] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and is_target(frame):
            caller = frame.f_back.f_code
            seen.append((caller.co_filename, caller.co_qualname))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen


def test_after_the_first_call_the_runner_calls_the_backends_callable() -> None:
    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        def compiled_graph(*args: Any) -> Any:
            return gm(*args)
        return compiled_graph

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x) + 1

    f = ember.compile(fn, backend=backend)
    x = torch.randn(4)
    is_graph = lambda frame: frame.f_code.co_name == "compiled_graph"  # noqa: E731
    first = _callers(is_graph, lambda: f(x))
    later = _callers(is_graph, lambda: (f(x), f(x)))
    assert [q for _, q in first] == ["check_first_call.<locals>.run"]
    assert later == [(__file__, "test_after_the_first_call_the_runner_calls_the_backends_callable.<locals>.fn")] * 2
    torch.testing.assert_close(f(x), fn(x))


def test_inductor_wrapper_is_called_by_the_runner_without_layers_between() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    compiled = ember.compile(model, options={"eager_fallback": False})

    def predict(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return compiled(x)

    x = torch.randn(2, 8)
    predict(x)
    is_wrapper = lambda frame: frame.f_code.co_filename.startswith("<ember_inductor wrapper")  # noqa: E731
    callers = _callers(is_wrapper, lambda: predict(x))
    # the runner's code reads as the frame capture started in: the call of the module, shared by
    # the compiled modules of its class (named after it)
    assert [q for _, q in callers] == ["Sequential"]
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))


def test_a_chain_of_layers_collapses_to_the_innermost_that_has_not_settled() -> None:
    slots: dict[str, Any] = {}

    class Layer:
        def __init__(self, target: Any) -> None:
            self.target, self.holders = target, Settling()

        def settle(self, setter: Any) -> None:
            self.holders.add(setter)

    inner = lambda: "inner"  # noqa: E731
    middle = Layer(inner)
    outer = Layer(middle)
    settle(outer, lambda f: slots.__setitem__("call", f))
    assert slots == {}
    outer.holders.done(middle)  # the outer layer settles: its holder calls the middle one
    assert slots["call"] is middle
    middle.holders.done(inner)  # and then the middle one: the holder now calls the innermost
    assert slots["call"] is inner
    late: dict[str, Any] = {}
    settle(outer, lambda f: late.__setitem__("call", f))  # a holder that comes later: at once
    assert late["call"] is inner
