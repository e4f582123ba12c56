"""Graph inputs written by the C++ kernel that computes their new value (``ember_inductor.mutation``):
no new buffer and no copy for a pointwise update, and for each hazard (a reader of the old value
in another kernel, reads at other elements, reductions over the input, aten ops reading it
before and after, the input returned, two inputs swapped, dtype, strides, symbolic sizes,
indices loaded from memory) the results and the inputs equal eager's after every call."""
from __future__ import annotations

import re

import pytest

import torch

import mutation_cases as cases
from mutation_cases import check_calls, compiled_graph


def _call_body(graph) -> str:
    return graph.wrapper_source.split("def call_checked")[0]


def test_pointwise_update_is_one_kernel_writing_the_inputs() -> None:
    compiled = check_calls(cases.momentum, torch.randn(1000), torch.randn(1000), torch.randn(1000))
    graph = compiled_graph(compiled)
    body = _call_body(graph)
    assert graph.kernel_count == 1
    assert "empty_strided" not in body and "copy_" not in body, body
    (plan,) = compiled.plans.values()
    assert plan.mutated_inputs == [] and sorted(plan.inputs_mutated_in_graph) == [0, 2]


def test_reader_of_the_old_value_runs_before_the_write() -> None:
    check_calls(cases.old_value_transposed, torch.randn(64, 48))


def test_reads_at_other_elements_keep_their_own_buffer() -> None:
    compiled = check_calls(cases.self_transposed, torch.randn(32, 32))
    assert re.search(r"arg0\.copy_\(b\d+\)", _call_body(compiled_graph(compiled)))
    check_calls(cases.shifted, torch.randn(100))


def test_reductions_over_the_input() -> None:
    check_calls(cases.column_normalized, torch.rand(40, 40) + 0.5)
    check_calls(cases.row_softmax, torch.randn(8, 300))


def test_aten_ops_read_the_old_and_the_new_value() -> None:
    check_calls(cases.extern_reads, torch.randn(16, 16), torch.randn(16, 16))


def test_returned_input_is_the_input() -> None:
    x = torch.randn(10)
    compiled = check_calls(cases.returned, x)
    assert compiled(x) is x


def test_swapped_inputs() -> None:
    check_calls(cases.swap, torch.randn(50), torch.randn(50))


def test_dtype_and_strides() -> None:
    check_calls(cases.converted, torch.randn(20), torch.randn(20, dtype=torch.float64))
    check_calls(cases.momentum, torch.randn(30, 20).t(), torch.randn(20, 30), torch.randn(20, 60)[:, ::2])


def test_counter_read_by_every_update() -> None:
    check_calls(cases.step_counter, torch.zeros(()), torch.randn(500), torch.randn(500))


def test_loaded_indices() -> None:
    check_calls(cases.gathered, torch.randn(64), torch.randint(0, 64, (64,)))


def test_symbolic_sizes() -> None:
    cases.check_symbolic_momentum((5, 64, 1000))


def test_empty_input() -> None:
    check_calls(cases.momentum, torch.randn(0), torch.randn(0), torch.randn(0))


def _add_then_read(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a.add_(1)
    return b * 2


@pytest.mark.parametrize("inputs", [
    lambda base: (base, base),        # the same tensor twice
    lambda base: (base[0], base[0]),  # two views of one row
    lambda base: (base[0], base[1]),  # views of one storage, apart
], ids=["same-tensor", "same-view", "views-of-one-storage"])
def test_aliased_inputs_as_eager(inputs) -> None:
    import ember
    from ember_inductor.backend import inductor

    base = torch.randn(2, 8)
    ref = base.clone()
    compiled = ember.compile(_add_then_read, backend=lambda gm, ex: inductor(gm, ex, options={"strict": True}))
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(compiled(*inputs(base)), _add_then_read(*inputs(ref)))
            torch.testing.assert_close(base, ref)


def test_tied_weights_step() -> None:
    import ember
    from ember_inductor.backend import inductor

    def model() -> torch.nn.Module:
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10, bias=False))
        m[1].weight = m[0].weight  # tied
        return m
    m, ref = model(), model()
    opt, ref_opt = (torch.optim.SGD(x.parameters(), lr=0.1, momentum=0.9) for x in (m, ref))
    step = ember.compile(lambda: opt.step(), backend=lambda gm, ex: inductor(gm, ex, options={"strict": True}))
    ids = torch.tensor([[1, 2, 3, 4]])
    for _ in range(3):
        for x in (m, ref):
            x(ids).square().sum().backward()
        step()
        ref_opt.step()
        opt.zero_grad()
        ref_opt.zero_grad()
        for a, b in zip(m.parameters(), ref.parameters()):
            torch.testing.assert_close(a, b)
