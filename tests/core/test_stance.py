"""``ember.set_stance`` and the graph break markers (issue 49 item 1), each scenario run through
torch.compile with ``torch.compiler.set_stance`` and through ember with ``ember.set_stance``: the
same graphs compiled, the same calls of compiled code, the same errors."""
from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
import torch._dynamo

import ember
from ember.stance import STATE

COMPILERS = {
    "torch": (torch.compile, torch.compiler.set_stance),
    "ember": (ember.compile, ember.set_stance),
}


class Recorder:
    """A backend whose compiled graphs count their calls."""

    def __init__(self) -> None:
        self.graphs = 0
        self.runs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.graphs += 1

        def run(*args: Any) -> Any:
            self.runs += 1
            return gm.forward(*args)
        return run

    def seen(self) -> tuple[int, int]:
        return self.graphs, self.runs


def fn(x: torch.Tensor) -> torch.Tensor:
    return x.sin() * 2


def _both(scenario: Callable[[Callable, Callable, Recorder], list]) -> None:
    """Run ``scenario(compile, set_stance, recorder)`` with torch and with ember; the
    observations it returns must agree."""
    results = {}
    for name, (compile_fn, set_stance) in COMPILERS.items():
        torch._dynamo.reset()
        ember.reset()
        try:
            results[name] = scenario(compile_fn, set_stance, Recorder())
        finally:
            torch.compiler.set_stance("default")
            ember.set_stance("default")
    assert results["ember"] == results["torch"]


def _outcome(call: Callable[[], torch.Tensor], x: torch.Tensor) -> str:
    try:
        torch.testing.assert_close(call(), fn(x))
    except RuntimeError as exc:
        return "raised: recompile" if "recompile" in str(exc) else f"raised: {exc}"
    return "ok"


def test_force_eager_ignores_compiled_code_and_compiles_nothing() -> None:
    def scenario(compile_fn, set_stance, rec):
        f = compile_fn(fn, backend=rec)
        x = torch.randn(3)
        seen = [_outcome(lambda: f(x), x), rec.seen()]
        set_stance("force_eager")
        y = torch.randn(2, 2)
        seen += [_outcome(lambda: f(x), x), _outcome(lambda: f(y), y), rec.seen()]
        g = compile_fn(lambda t: t.cos(), backend=rec)
        g(x)
        seen.append(rec.seen())
        set_stance("default")
        seen += [_outcome(lambda: f(x), x), rec.seen()]
        return seen

    _both(scenario)


def test_eager_on_recompile_runs_cached_code_and_compiles_nothing_new() -> None:
    def scenario(compile_fn, set_stance, rec):
        f = compile_fn(fn, backend=rec)
        x, y = torch.randn(3), torch.randn(4, 5)
        f(x)
        seen = [rec.seen()]
        with set_stance("eager_on_recompile"):
            seen += [_outcome(lambda: f(x), x), rec.seen()]  # the entry still runs
            torch.testing.assert_close(f(y), fn(y))  # a recompile runs eagerly
            g = compile_fn(lambda t: t.cos(), backend=rec)
            torch.testing.assert_close(g(x), x.cos())  # so does a first compile
            seen.append(rec.seen())
        f(y)  # the stance is back: it compiles
        seen.append(rec.seen())
        return seen

    _both(scenario)


def test_fail_on_recompile_raises_on_every_compile() -> None:
    def scenario(compile_fn, set_stance, rec):
        f = compile_fn(fn, backend=rec)
        x = torch.randn(3)
        seen = []
        with set_stance("fail_on_recompile"):
            seen.append(_outcome(lambda: f(x), x))  # a first compile counts as one
        f(x)
        with set_stance("fail_on_recompile"):
            y, z = torch.randn(3), torch.randn(4, 5)
            seen.append(_outcome(lambda: f(y), y))  # a hit runs
            seen.append(_outcome(lambda: f(z), z))  # a recompile raises
        seen.append(rec.seen())
        return seen

    _both(scenario)


def test_the_failure_names_the_function_and_the_guard() -> None:
    f = ember.compile(fn, backend=Recorder())
    f(torch.randn(3))
    with ember.set_stance("fail_on_recompile"):
        with pytest.raises(RuntimeError, match="fail_on_recompile") as raised:
            f(torch.randn(4, 5))
    assert "fn (" in str(raised.value) and "shape=(3,)" in str(raised.value)


def test_a_decorator_holds_the_stance_only_inside() -> None:
    def scenario(compile_fn, set_stance, rec):
        f = compile_fn(fn, backend=rec)
        x = torch.randn(3)

        @set_stance("force_eager")
        def eager_step() -> torch.Tensor:
            return f(x)

        seen = [rec.seen()]
        eager_step()
        seen.append(rec.seen())
        f(x)
        seen.append(rec.seen())
        eager_step()
        seen.append(rec.seen())
        return seen

    _both(scenario)
    assert STATE.name == "default"


def test_compiled_modules_follow_the_stance() -> None:
    def scenario(compile_fn, set_stance, rec):
        model = compile_fn(torch.nn.Linear(3, 2), backend=rec)
        x = torch.randn(4, 3)
        with set_stance("force_eager"):
            model(x)
        seen = [rec.seen()]
        model(x)
        seen.append(rec.seen())
        with set_stance("force_eager"):
            model(x)
        seen.append(rec.seen())
        return seen

    _both(scenario)


def test_an_unknown_stance_is_an_error() -> None:
    with pytest.raises(ValueError, match="eager_on_recompile"):
        ember.set_stance("force_compile")
    assert STATE.name == "default"


@pytest.mark.parametrize("marker", ["torch", "ember"])
def test_graph_break_markers(marker: str) -> None:
    graph_break = torch._dynamo.graph_break if marker == "torch" else ember.graph_break

    def broken(x: torch.Tensor) -> torch.Tensor:
        x = x.sin() + 1
        graph_break()
        return x.cos() * 2

    def scenario(compile_fn, set_stance, rec):
        x = torch.randn(3)
        torch.testing.assert_close(compile_fn(broken, backend=rec)(x), broken(x))
        try:
            compile_fn(broken, backend=Recorder(), fullgraph=True)(x)
        except Exception as exc:  # torch's Unsupported, ember's Unsupported
            return [rec.seen(), "graph_break" in str(exc) or "graph break" in str(exc).lower()]
        return [rec.seen(), "no error"]

    if marker == "torch":
        _both(scenario)
    else:  # torch.compile does not know ember's marker: as torch's own under torch.compile
        assert scenario(ember.compile, ember.set_stance, Recorder()) == [(2, 2), True]
