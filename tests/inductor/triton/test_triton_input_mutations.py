"""Graph inputs written in place by Triton kernels (``ember_inductor.mutation``), run in Triton's
interpreter: the cases of the C++ tests (``mutation_cases``), each equal to eager after every
call, and the pointwise update one kernel storing through the input's own pointer."""
from __future__ import annotations

import pytest
import torch

from triton_checks import interpreter_only  # noqa: E402

interpreter_only()
pytestmark = pytest.mark.usefixtures("triton_kernels")

import mutation_cases as cases  # noqa: E402
from mutation_cases import check_calls, compiled_graph  # noqa: E402


def test_pointwise_update_stores_into_the_inputs() -> None:
    compiled = check_calls(cases.momentum, torch.randn(1000), torch.randn(1000), torch.randn(1000))
    graph = compiled_graph(compiled)
    assert graph.kernel_count == 1 and "tl.store(out_ptr" in graph.source
    body = graph.wrapper_source.split("def call_checked")[0]
    assert "empty_strided" not in body and "copy_" not in body, body


@pytest.mark.parametrize("case, inputs", [
    (cases.old_value_transposed, lambda: [torch.randn(64, 48)]),
    (cases.self_transposed, lambda: [torch.randn(32, 32)]),
    (cases.column_normalized, lambda: [torch.rand(40, 40) + 0.5]),
    (cases.row_softmax, lambda: [torch.randn(8, 300)]),
    (cases.extern_reads, lambda: [torch.randn(16, 16), torch.randn(16, 16)]),
    (cases.swap, lambda: [torch.randn(50), torch.randn(50)]),
    (cases.step_counter, lambda: [torch.zeros(()), torch.randn(500), torch.randn(500)]),
    (cases.momentum, lambda: [torch.randn(30, 20).t(), torch.randn(20, 30), torch.randn(20, 60)[:, ::2]]),
], ids=["old-value-transposed", "self-transposed", "column-normalized", "row-softmax", "extern-reads",
        "swap", "step-counter", "strides"])
def test_hazards(case, inputs) -> None:
    check_calls(case, *inputs())


def test_symbolic_sizes() -> None:
    cases.check_symbolic_momentum((5, 300))
