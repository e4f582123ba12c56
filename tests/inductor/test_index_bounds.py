"""Indirect indices out of range raise as in eager (issue 23: never a silently wrong result).

Each op is compiled once and called with indices in range, out of range and negative: the values
match eager's where eager computes, the exception is eager's type (with a message naming the
bound) where eager raises. An index the inductor can prove in range (an ``arange``) is not checked.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F

from helpers import assert_same, check, compile_fn

X = torch.arange(12.0).reshape(4, 3)  # dimension 0 has size 4, dimension 1 size 3


def _idx(*values: int) -> torch.Tensor:
    return torch.tensor(values)


# (op, fn(x, idx), index of a valid shape for fn, whether the inductor lowers it itself)
CASES: dict[str, tuple[Callable, Callable[..., torch.Tensor], bool]] = {
    "gather": (lambda x, i: torch.gather(x, 0, i.view(1, 3)) * 2, _idx, True),
    "take_along_dim": (lambda x, i: torch.take_along_dim(x, i.view(3, 1), 0) + 1, _idx, True),
    "index_select": (lambda x, i: torch.index_select(x, 0, i) + 1, _idx, True),
    "embedding": (lambda x, i: F.embedding(i, x) + 1, _idx, True),
    "index": (lambda x, i: x[i] + 1, _idx, True),
    "index_dim1": (lambda x, i: x[:, i] + 1, _idx, True),
    "index_two": (lambda x, i: x[i, i.clamp(0, 2)] + 1, _idx, True),
    "scatter": (lambda x, i: torch.scatter(x, 0, i.view(1, 3), torch.ones(1, 3)), _idx, False),
    "scatter_add": (lambda x, i: torch.scatter_add(x, 0, i.view(1, 3), torch.ones(1, 3)), _idx, False),
    "index_put": (lambda x, i: torch.index_put(x, (i,), torch.ones(3, 3), accumulate=True), _idx, False),
}


def _outcome(fn: Callable, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return exc


@pytest.mark.parametrize("name", list(CASES))
def test_out_of_range_and_negative_indices_behave_like_eager(name: str) -> None:
    fn, make, lowered = CASES[name]
    compiled = compile_fn(fn, X, make(1, 3, 0))
    if lowered:
        assert compiled.compiled.fallback_ops == [], compiled.compiled.fallback_ops
    for values in [(1, 3, 0), (2, 0, 1), (1, 7, 0), (-1, 0, 2), (0, -5, 1), (3, 2, -4)]:
        index = make(*values)
        expected, actual = _outcome(fn, X, index), _outcome(compiled, X, index)
        if not isinstance(expected, Exception):
            assert not isinstance(actual, Exception), (values, actual)
            assert_same(actual, expected)
            continue
        assert type(actual) is type(expected), (values, actual, expected)
        if lowered:
            assert re.fullmatch(r"index -?\d+ is out of bounds for dimension [01] with size [34]", str(actual)), actual


def test_gather_on_dimension_one_names_its_size() -> None:
    compiled = compile_fn(lambda x, i: torch.gather(x, 1, i), X, torch.zeros(4, 2, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        compiled(X, torch.full((4, 2), 3))
    assert_same(compiled(X, torch.full((4, 2), 2)), torch.gather(X, 1, torch.full((4, 2), 2)))


def test_a_failure_does_not_stick() -> None:
    """The kernel's error record is cleared when raised: the next call with good indices works."""
    fn = lambda w, i: F.embedding(i, w) * 3  # noqa: E731
    w = torch.randn(5, 8)
    compiled = compile_fn(fn, w, _idx(0, 4, 2))
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 5"):
        compiled(w, _idx(0, 9, 2))
    assert_same(compiled(w, _idx(4, 1, 2)), fn(w, _idx(4, 1, 2)))


def test_no_check_where_the_index_is_an_arange() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x[torch.arange(4)] + torch.index_select(x, 1, torch.arange(1, 3)).sum(1, keepdim=True)
    compiled = compile_fn(fn, X)
    assert_same(compiled(X), fn(X))
    assert "ember_bad_index" not in compiled.compiled.source
    checked = compile_fn(lambda x, i: x[i] + 1, X, _idx(0, 1))
    assert "ember_bad_index(" in checked.compiled.source


def test_bert_with_an_id_outside_the_vocabulary_raises_like_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    import ember
    monkeypatch.setenv("EMBER_INDUCTOR_EAGER_FALLBACK", "0")  # every call runs the compiled graph
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=99, max_position_embeddings=64)
    model = transformers.BertModel(config).eval()
    ids = torch.randint(0, 99, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    compiled = ember.compile(model, backend="inductor")
    with torch.no_grad():
        torch.testing.assert_close(compiled(input_ids=ids, attention_mask=mask).last_hidden_state,
                                   model(input_ids=ids, attention_mask=mask).last_hidden_state)
        bad = ids.clone()
        bad[1, 3] = 99
        with pytest.raises(IndexError):
            model(input_ids=bad, attention_mask=mask)
        with pytest.raises(IndexError, match="index 99 is out of bounds for dimension 0 with size 99"):
            compiled(input_ids=bad, attention_mask=mask)
        torch.testing.assert_close(compiled(input_ids=ids, attention_mask=mask).last_hidden_state,
                                   model(input_ids=ids, attention_mask=mask).last_hidden_state)


def test_scatter_of_one_index_per_line_is_a_pointwise_kernel() -> None:
    """``scatter`` with one index per line (nll_loss's one-hot gradient) is lowered as a
    pointwise kernel, values and src alike, and an index out of range still raises as eager's."""
    target = torch.tensor([[3], [0], [9], [5]])

    def one_hot(x: torch.Tensor, t: torch.Tensor, src: torch.Tensor) -> tuple:
        grad = torch.zeros_like(x).scatter(1, t, -1.0) * x.exp()
        return grad, x.scatter(1, t, src), x.t().scatter(0, t.t(), 2.5)

    check(one_hot, torch.randn(4, 10), target, torch.randn(4, 3))
    with pytest.raises(RuntimeError):
        compile_fn(one_hot, torch.randn(4, 10), target, torch.randn(4, 3))(
            torch.randn(4, 10), torch.tensor([[3], [0], [10], [5]]), torch.randn(4, 3))
