"""The wrapper binds and checks only the outputs of an aten call that something reads or returns.

An aten kernel may leave an output undefined (None in Python) where its meta kernel returned a
tensor: cuDNN attention's logsumexp in inference, on an H100/H200 where torch prefers cuDNN for
attention. The wrapper used to bind every output and check its layout on the first call, and died
there (``'NoneType' object has no attribute 'shape'`` in ``_check_layout``): gpt-fast's decoding
step and transformers' static-cache ``generate()`` crashed on the GPU (issue 45, item 8).
"""
from __future__ import annotations

import re

import pytest
import torch

import ember
from helpers import compile_fn
from undefined_outputs import first_of_pair, second_of_pair


def _compiled(fn):
    return ember.compile(fn, backend="inductor", fullgraph=True, options={"eager_fallback": False, "strict": True})


def test_an_output_left_undefined_and_never_read_is_not_bound() -> None:
    x = torch.randn(16)
    compiled = _compiled(first_of_pair)
    torch.testing.assert_close(compiled(x), first_of_pair(x))
    x2 = torch.randn(16)
    torch.testing.assert_close(compiled(x2), first_of_pair(x2))


def test_reading_an_undefined_output_fails_on_the_none_as_eager_does() -> None:
    """The output read is checked: None is reported as a layout mismatch, the graph runs with aten
    and fails as eager does, on the None operand of the add, not in the wrapper."""
    x = torch.randn(16)
    with pytest.raises(TypeError, match="NoneType"):
        second_of_pair(x)
    with pytest.raises(RuntimeError, match="got None"):
        ember.compile(second_of_pair, backend="inductor", options={"eager_fallback": False})(x)


def test_wrapper_binds_only_the_outputs_read() -> None:
    source = compile_fn(first_of_pair, torch.randn(16)).compiled.wrapper_source
    assert re.findall(r"= r\d+\[(\d+)\]", source) == ["0", "0"], source  # in call and call_checked
