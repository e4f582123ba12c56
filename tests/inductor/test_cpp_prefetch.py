"""A C++ row kernel prefetches the next row of what it reads row by row
(``CppKernel._prefetch_next_row``): one prefetch per 64-byte line, at the start of each row."""
from __future__ import annotations

import re

import torch

from helpers import assert_same, compile_fn


def _prefetches(source: str) -> list[str]:
    return re.findall(r"__builtin_prefetch\((.*)\);", source)


def test_softmax_and_layer_norm_prefetch_the_next_row_of_their_input_only() -> None:
    x, w, b = torch.randn(64, 300), torch.randn(300), torch.randn(300)
    softmax = lambda x, w, b: torch.softmax(x, -1)  # noqa: E731
    layer_norm = lambda x, w, b: torch.nn.functional.layer_norm(x, (300,), w, b)  # noqa: E731
    for fn in (softmax, layer_norm):
        compiled = compile_fn(fn, x, w, b)
        assert_same(compiled(x, w, b), fn(x, w, b))
        source = compiled.compiled.source
        # the input's next row, one line (16 floats) apart; not the weight and bias, the same
        # for every row
        assert _prefetches(source) == ["in_ptr0 + (300 + pf + (300 * x0))"], _prefetches(source)
        assert "for (int64_t pf = 0; pf < 300; pf += 16)" in source


def test_no_prefetch_where_a_row_is_not_contiguous_or_there_is_one_row() -> None:
    x = torch.randn(300, 64)
    for fn in (lambda x: x.sum(0), lambda x: torch.softmax(x.flatten(), -1)):
        compiled = compile_fn(fn, x)
        assert_same(compiled(x), fn(x))
        assert not _prefetches(compiled.compiled.source)


def test_half_precision_rows_prefetch_every_32_elements() -> None:
    x = torch.randn(64, 300, dtype=torch.bfloat16)
    compiled = compile_fn(lambda x: torch.softmax(x, -1), x)
    assert_same(compiled(x), torch.softmax(x, -1))
    assert "pf += 32)" in compiled.compiled.source
