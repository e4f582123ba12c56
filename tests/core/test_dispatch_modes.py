"""Compiling under an active TorchDispatchMode, as torch.compile does (issue 45, item 12): a call
that misses the cache under a user's mode runs eagerly under it (one warning; fullgraph=True is
an error), and compiles once the mode is gone; a mode that ignores compile internals sees only
the compiled code's ops, never ember's own (capture, tracing, checks)."""
from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import ember
import ember.errors
from core_helpers import CountingBackend


class Substitute(TorchDispatchMode):
    """Answers every op with a tensor of its own."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return torch.full((3,), 7.0)


class Recording(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


class RecordingOutsideCompilation(Recording):
    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True


class SubstituteOutsideCompilation(Substitute):
    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True


def _fn(x):
    return (x + 1) * 2


def _ember_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if str(w.message).startswith("ember:")]


def test_a_mode_answering_with_its_own_tensors():
    backend = CountingBackend()
    compiled = ember.compile(_fn, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Substitute():
            got = [compiled(torch.ones(3)) for _ in range(2)]
    for g in got:
        torch.testing.assert_close(g, torch.full((3,), 7.0))
    assert backend.count == 0 and len(_ember_warnings(caught)) == 1, _ember_warnings(caught)
    assert "TorchDispatchMode (Substitute)" in _ember_warnings(caught)[0]
    torch.testing.assert_close(compiled(torch.ones(3)), torch.full((3,), 4.0))  # no mode: compiled now
    assert backend.count == 1
    with Substitute():  # an entry compiled before runs under the mode, as torch.compile's does
        under_mode = compiled(torch.ones(3))
    torch.testing.assert_close(under_mode, torch.full((3,), 7.0))
    theirs = CountingBackend()
    torch._dynamo.reset()
    with Substitute():
        torch.compile(_fn, backend=theirs)(torch.ones(3))
    assert theirs.count == 0


def test_fullgraph_under_a_mode_is_an_error_naming_it():
    with Substitute(), pytest.raises(ember.errors.Unsupported, match="TorchDispatchMode"):
        ember.compile(_fn, backend="eager", fullgraph=True)(torch.ones(3))


def test_a_recording_mode_sees_eagers_ops():
    with Recording() as eager_mode:
        _fn(torch.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Recording() as mode:
            got = ember.compile(_fn, backend="eager")(torch.ones(3))
    torch.testing.assert_close(got, torch.full((3,), 4.0))
    assert mode.ops == eager_mode.ops


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_mode_that_ignores_compile_internals_sees_only_the_compiled_code(backend):
    counting = CountingBackend()
    with RecordingOutsideCompilation() as mode:
        got = ember.compile(_fn, backend=counting if backend == "eager" else backend)(torch.ones(3))
    torch.testing.assert_close(got, torch.full((3,), 4.0))
    torch._dynamo.reset()
    with RecordingOutsideCompilation() as theirs:
        torch.compile(_fn, backend=backend)(torch.ones(3))
    assert mode.ops == theirs.ops
    assert backend != "eager" or counting.count == 1


def test_a_substituting_mode_that_ignores_compile_internals():
    with SubstituteOutsideCompilation():
        got = ember.compile(_fn, backend="aot_eager")(torch.ones(3))
    torch.testing.assert_close(got, torch.full((3,), 7.0))
