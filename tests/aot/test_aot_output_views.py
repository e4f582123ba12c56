"""Outputs that are views, modified in place by the caller, then differentiated (issue 45, item 10).

wav2vec2's CTC training step compiles a graph whose output ``hidden_states`` is a view of one of
its temporaries, then (after a graph break) writes ``hidden_states[mask_time_indices] = ...``.
The compiled graph returned the view from its ``autograd.Function``, and autograd refused the
in-place write ("Output 0 of AOTFunctionBackward is a view and is being modified inplace"):
the training step crashed where eager writes into the view. Each case here returns views (of a
temporary, of an input, several of one base, the outputs of one ``unbind``/``split``/``chunk``),
the caller writes into the first output in place (or not), and the result, the input and the
gradients must be eager's; where eager refuses the write (an output of ``unbind`` that requires
grad), the compiled function refuses it too, with the same message.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import pytest
import torch

import ember


def transpose(x):
    y = x * 2
    return y.t(), y.sum()


def flat_view(x):
    y = x * 2
    return y.view(-1), y.sum()


def row(x):
    y = x * 2
    return y[0], (y * 3).sum()


def only_a_view(x):
    return (x * 2).transpose(0, 1)


def masked_rows(x):
    """wav2vec2's ``hidden_states``: a transposed projection (the caller masks time steps)."""
    return (x.sin() * 2).transpose(0, 1)


def product_transposed(x):
    """A view of an aten call's result: the inductor returns it as an ``as_strided`` view."""
    return (x @ x).t()


def unbind(x):
    y = x * 2
    return y.unbind(0)


def chunk(x):
    y = x * 2
    return y.chunk(2, 0)


def split(x):
    y = x.sin()
    return torch.split(y, [1, 3], 1)


def base_and_row(x):
    y = x * 2
    return y, y[1]


def rows_of_one_base(x):
    y = x.cos()
    return y[0], y[2:]


def input_view(x):
    return x.view(-1), x * 2


def input_unbind(x):
    return x.unbind(1)


CASES = [transpose, flat_view, row, only_a_view, masked_rows, product_transposed, unbind, chunk, split, base_and_row, rows_of_one_base,
         input_view, input_unbind]


def _write(out: torch.Tensor) -> None:
    mask = torch.zeros(out.shape[0], dtype=torch.bool)
    mask[::2] = True
    out[mask] = 7.0  # wav2vec2: hidden_states[mask_time_indices] = masked_spec_embed
    out.mul_(3)


def _run(fn: Callable, requires_grad: bool, in_place: bool) -> tuple[Any, ...]:
    """(outputs, input after the call, gradient) of ``fn``; ("raises", message) if autograd refuses."""
    leaf = torch.linspace(-2, 2, 16).reshape(4, 4).requires_grad_(requires_grad)
    x = leaf * 1 if requires_grad else leaf.clone()  # not a leaf: its views may be written in place
    try:
        outs = fn(x)
        outs = outs if isinstance(outs, tuple) else (outs,)
        if in_place:
            _write(outs[0])
        loss = sum(((o.float() * (k + 1)).sum() for k, o in enumerate(outs)), torch.zeros(()))
        if requires_grad:
            loss.backward()
    except RuntimeError as exc:
        return "raises", re.sub(r"Output 0 of \w+", "Output 0 of <node>", str(exc))
    return [o.detach().clone() for o in outs], x.detach().clone(), leaf.grad


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("requires_grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("in_place", [True, False], ids=["written", "read"])
@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_view_outputs_written_in_place_as_in_eager(fn, requires_grad, in_place, backend):
    expected = _run(fn, requires_grad, in_place)
    got = _run(ember.compile(fn, backend=backend, fullgraph=True, options=_options(backend)), requires_grad, in_place)
    if expected[0] == "raises":
        assert got == expected
        return
    assert got[0] != "raises", got[1]
    torch.testing.assert_close(got, expected)


def _options(backend: str) -> dict | None:
    return {"eager_fallback": False} if backend == "inductor" else None


def test_unbind_outputs_written_in_place_are_refused_without_running_eagerly(caplog):
    """The base of outputs that alias each other is the tensor they view: ``unbind``'s outputs
    made functionalization return an output as the base, whose layout did not match, and the
    graph ran eagerly ("the compiled graph returned a base with another layout")."""
    compiled = ember.compile(unbind, backend="aot_eager", fullgraph=True)
    with caplog.at_level("WARNING", logger="ember"):
        got = _run(compiled, False, True)
    torch.testing.assert_close(got, _run(unbind, False, True))
    assert not [r for r in caplog.records if r.name.startswith("ember")], caplog.text
