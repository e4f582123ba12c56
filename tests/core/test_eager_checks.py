"""Calls eager refuses but torch's fake (meta) kernels accept: capture must break the graph so
that the call runs eagerly and raises eager's error, never hand a backend a graph that computes
it (inductor and onnxrt computed ``x - True``)."""
from __future__ import annotations

import pytest
import torch

import ember
from core_helpers import CountingBackend

REFUSED = {
    "sub_python_bool": lambda x, i: (x + 2, x - True),
    "rsub_python_bool": lambda x, i: (x * 2, True - x),
    "sub_bool_tensor": lambda x, i: (x.sin(), (x > 0) - x),
    "torch_sub_bool": lambda x, i: (x.cos(), torch.sub(x, True)),
    "inplace_sub_bool": lambda x, i: (x.exp(), x.clone().sub_(True)),
    "bitwise_and_float": lambda x, i: (x.abs(), (x * 2) & 1),
}
ACCEPTED = {
    "sub_int": lambda x, i: x - 1,
    "bitwise_and_int": lambda x, i: (i & 1) + x,
    "bool_xor_bool": lambda x, i: (x > 0) ^ True,
    "add_bool": lambda x, i: x + True,
}


def _args() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(5), torch.arange(5)


def _graph_ops(backend: CountingBackend) -> list[str]:
    return [op for k in range(backend.count) for op in backend.ops(k)]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_call_raises_eagers_error_and_is_not_compiled(name):
    fn = REFUSED[name]
    x, i = _args()
    with pytest.raises(Exception) as eager:
        fn(x, i)
    backend = CountingBackend()
    with pytest.raises(type(eager.value)) as compiled:
        ember.compile(fn, backend=backend)(x, i)
    assert str(compiled.value) == str(eager.value)
    ops = _graph_ops(backend)
    # the work before the refused call is still compiled, the refused call is not
    assert ops and not {"sub", "rsub", "sub_", "and_", "__and__", "bitwise_and"} & set(ops), ops


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_calls_stay_in_one_graph(name):
    fn = ACCEPTED[name]
    x, i = _args()
    backend = CountingBackend()
    torch.testing.assert_close(ember.compile(fn, backend=backend)(x, i), fn(x, i))
    assert backend.count == 1
