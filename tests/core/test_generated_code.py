"""Generated code always builds: in-place operators on Python values, guard sources with no
literal form, and a failure to build any generated code falling back to eager with one warning."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Optional

import pytest
import torch

import ember
import ember.compiled
from ember.capture.sources import AttrSource, ItemSource, LocalSource, literal
from ember.guards import GuardSet
from ember.guard_writer import GuardWriter
from core_helpers import CountingBackend, no_fallback


def _ember_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if str(w.message).startswith("ember:")]


def test_augmented_assignment_to_a_python_value_is_not_in_place():
    def fn(x, scale):
        total = 0
        total += (x > 0).to(torch.long) * 3  # T5's _relative_position_bucket
        acc = ()
        acc += (x.sin(),)
        scale *= x.cos()
        return total, acc, scale

    backend = CountingBackend()
    x = torch.randn(5)
    with no_fallback():
        got = ember.compile(fn, backend=backend, fullgraph=True)(x, 2.0)
    expected = fn(x, 2.0)
    torch.testing.assert_close(got, expected)
    assert type(got[1]) is tuple
    assert "iadd" not in backend.ops() and "imul" not in backend.ops(), backend.ops()


def test_augmented_assignment_to_a_tensor_stays_in_place():
    def fn(x):
        y = x.clone()
        y += 1
        return y

    backend = CountingBackend()
    x = torch.randn(3)
    torch.testing.assert_close(ember.compile(fn, backend=backend, fullgraph=True)(x), x + 1)
    assert "iadd" in backend.ops()


def test_vmap_after_another_compiled_case_matches_eager():
    torch.manual_seed(0)
    x, w = torch.randn(4, 3), torch.randn(3)

    def first(x):
        return torch.func.vmap(torch.sin)(x)

    def per_row(x, w):
        return torch.func.vmap(lambda row: (row * w).sin().sum())(x)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap itself is run eagerly (a fallback warning)
        torch.testing.assert_close(ember.compile(first, backend="eager")(x), first(x))
        compiled = ember.compile(per_row, backend="eager")
        for _ in range(2):
            torch.testing.assert_close(compiled(x, w), per_row(x, w))
    # the guards of the first call (which read `Callable[[Any], bool]`) pass on the second
    assert len(compiled.__ember__.entries) == 1


class _OpaqueKey:
    def __repr__(self) -> str:
        return "<not python>"


@pytest.mark.parametrize("key", [_OpaqueKey(), (int, "a"), float("nan"), "quo'te\"{brace}", (1, (2.5, None))],
                         ids=["object", "tuple-with-class", "nan", "quotes-and-braces", "nested-tuple"])
def test_guard_on_a_key_with_no_literal_form_compiles_and_checks(key):
    d = {key: 3.5, "plain": float("inf")}
    obj = type("Obj", (), {})()
    setattr(obj, "not an-identifier", 7)
    guards = GuardSet()
    guards.equals(ItemSource(LocalSource("d"), key), 3.5)
    guards.equals(ItemSource(LocalSource("d"), "plain"), float("inf"))
    guards.equals(AttrSource(LocalSource("o"), "not an-identifier"), 7)
    guard, reasons = guards.compile()
    assert guard({"d": d, "o": obj}) == ()
    assert guard({"d": {**d, key: 4.0}, "o": obj}) is None
    assert guard({"d": {**d, "plain": 1.0}, "o": obj}) is None
    assert guard({"d": d, "o": type("Other", (), {})()}) is None
    assert len(reasons({"d": {**d, key: 4.0}, "o": obj})) == 1


def test_literal_only_for_values_that_evaluate_back():
    assert literal((1, "a", None, 2.5, b"x")) == "(1, 'a', None, 2.5, b'x', )"
    assert literal(()) == "()"
    for value in (float("nan"), float("-inf"), bool, [1], (int,), _OpaqueKey(), 2**20000):
        assert literal(value) is None, value


def _break_guard_writer(monkeypatch):
    monkeypatch.setattr(GuardWriter, "write", lambda self, name, checks, inputs: f"def {name}(L):\n    0 += 1\n")


def _break_graph_code(monkeypatch):
    def recompile(self):
        raise SyntaxError("'literal' is an illegal expression for augmented assignment")

    monkeypatch.setattr(torch.fx.GraphModule, "recompile", recompile)


def _break_runner(monkeypatch):
    def make_runner(compiled, tail, namespace, *where):
        exec(compile("def ___run(L, ___inputs):\n    return ___o[\n", "<ember ___run>", "exec"), {})

    monkeypatch.setattr(ember.compiled, "make_runner", make_runner)


@pytest.mark.parametrize("what,breaker", [("guard", _break_guard_writer), ("graph code", _break_graph_code),
                                          ("runner", _break_runner)])
def test_generated_code_that_does_not_build_falls_back_with_one_warning(monkeypatch, what, breaker):
    def fn(x, n):
        return (x * n).relu() + 1

    breaker(monkeypatch)
    compiled = ember.compile(fn, backend="eager")
    x = torch.randn(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # the fallback entry is cached: one warning
            torch.testing.assert_close(compiled(x, 2), fn(x, 2))
    messages = _ember_warnings(caught)
    assert len(messages) == 1, messages
    assert f"generated {what} failed to build" in messages[0] and "fn" in messages[0] and "runs eagerly" in messages[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a new capture: its own fallback warning, where it has one
        torch.testing.assert_close(compiled(x, 3), fn(x, 3))


def test_fullgraph_reports_generated_code_that_does_not_build(monkeypatch):
    _break_runner(monkeypatch)
    with pytest.raises(ember.Unsupported, match="generated runner failed to build"):
        ember.compile(lambda x: x + 1, backend="eager", fullgraph=True)(torch.randn(2))


def test_type_hint_subscription_needs_no_guard_of_its_own():
    def fn(x):
        hint = Optional[Callable[[Any], bool]]  # a new object on every evaluation
        return x + 1 if hint is not None and list[int] is not None else x

    compiled = ember.compile(fn, backend="eager")
    x = torch.randn(2)
    with no_fallback():
        for _ in range(3):
            torch.testing.assert_close(compiled(x), x + 1)
    assert len(compiled.__ember__.entries) == 1


def test_infinite_float_argument_is_guarded_by_value_and_compiles_once():
    def fn(x, bound):
        return x.clamp(max=bound)

    compiled = ember.compile(fn, backend="eager")
    x = torch.randn(3)
    with no_fallback():
        for bound in (float("inf"), float("inf"), float("-inf"), float("-inf")):
            torch.testing.assert_close(compiled(x, bound), fn(x, bound))
    assert len(compiled.__ember__.entries) == 2
