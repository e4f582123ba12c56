"""Accumulating writes as Triton atomic adds (``lowering/scatter.py``), run in Triton's interpreter.

The embedding's weight gradient and ``index_put(accumulate=True)`` (``index_add`` decomposes to
it) are a buffer filled first and one kernel of atomic adds; repeated indices must all land, the
padding row stay zero, half-precision values be added in float32, and deterministic algorithms
keep aten's kernel.
"""
from __future__ import annotations

from typing import Any

import pytest
import torch

from triton_checks import interpreter_only  # noqa: E402

interpreter_only()
pytestmark = pytest.mark.usefixtures("triton_kernels")

from helpers import train_embeddings  # noqa: E402
from triton_checks import check, kernel_source  # noqa: E402

aten = torch.ops.aten


def _ids() -> torch.Tensor:
    return torch.tensor([[3, 0, 3, 7, 1, 0, 10, 3], [3, 3, 3, 2, 9, 0, 10, 10]])  # repeats, padding 0


@pytest.mark.parametrize("padding_idx", [0, -1])
def test_embedding_backward_is_one_kernel_of_atomic_adds(padding_idx: int) -> None:
    fn = lambda g, i: aten.embedding_dense_backward(g, i, 11, padding_idx, False) * 2  # noqa: E731
    compiled = check(fn, torch.randn(2, 8, 6), _ids())
    src = kernel_source(compiled)
    assert src.count("tl.atomic_add(") == 1, src
    assert compiled.compiled.kernel_count == 3  # zeros, the adds, the product


def test_half_precision_gradients_are_added_in_float32() -> None:
    """512 adds into one row: CUDA's eager kernel sums bf16 gradients in float32 (5.125 here);
    the CPU's adds in bf16 and drifts to 4.0, so the reference is the float32 sum."""
    from ember_inductor.backend import compile_inference

    ids = torch.zeros(512, dtype=torch.int64)
    grad = torch.full((512, 4), 0.01).bfloat16()
    compiled = compile_inference(lambda g, i: aten.embedding_dense_backward(g, i, 3, -1, False), [grad, ids])
    out = compiled(grad, ids)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out[0], grad.float().sum(0).bfloat16(), rtol=0, atol=0)
    assert out[1:].abs().sum() == 0
    assert "tl.atomic_add(" in kernel_source(compiled)


def test_scale_grad_by_freq_keeps_aten() -> None:
    fn = lambda g, i: aten.embedding_dense_backward(g, i, 11, -1, True)  # noqa: E731
    compiled = check(fn, torch.randn(2, 8, 6), _ids(), lowered=False)
    assert compiled.compiled.fallback_ops == ["aten.embedding_dense_backward.default"]


def test_deterministic_algorithms_keep_aten() -> None:
    torch.use_deterministic_algorithms(True)
    try:
        fn = lambda g, i: aten.embedding_dense_backward(g, i, 11, 0, False)  # noqa: E731
        compiled = check(fn, torch.randn(2, 8, 6), _ids(), lowered=False)
    finally:
        torch.use_deterministic_algorithms(False)
    assert "tl.atomic_add(" not in kernel_source(compiled)


@pytest.mark.parametrize("case", ["rows", "middle", "negative", "broadcast values", "index_add"])
def test_index_put_with_accumulate(case: str) -> None:
    x = torch.randn(6, 5, 4)
    idx = torch.tensor([1, 4, 1, 1, 0])
    cases: dict[str, Any] = {
        "rows": (lambda x, i, v: aten.index_put(x, [i], v, True), (x, idx, torch.randn(5, 5, 4))),
        "middle": (lambda x, i, v: aten.index_put(x, [None, i], v, True), (x, idx, torch.randn(6, 5, 4))),
        "negative": (lambda x, i, v: aten.index_put(x, [i], v, True), (x, idx - 6, torch.randn(5, 5, 4))),
        "broadcast values": (lambda x, i, v: aten.index_put(x, [i], v, True), (x, idx, torch.randn(4))),
        "index_add": (lambda x, i, v: torch.index_add(x, 1, i, v, alpha=2), (x, idx, torch.randn(6, 5, 4))),
    }
    fn, inputs = cases[case]
    src = kernel_source(check(fn, *inputs))
    assert "tl.atomic_add(" in src
    assert inputs[0].equal(x)  # the input itself is never written


def test_training_step_with_embeddings(extern_ops: list[str]) -> None:
    """Token and position embeddings trained through ember: one graph, the weight gradients from
    atomic adds (no aten ``embedding_dense_backward``), as eager's, the padding row zero."""
    assert train_embeddings(_ids()) == 1
    assert "aten.embedding_dense_backward.default" not in extern_ops, extern_ops
    assert not any("index_put" in e for e in extern_ops), extern_ops


def test_autotuning_adds_into_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Autotuning launches each configuration 11 times on the call's own tensors: a scatter's
    target is given to those launches as a copy, or the first result would hold every add."""
    from ember_inductor.codegen import triton_runtime
    from ember_inductor.codegen.triton_configs import LaunchConfig

    def adding(index: int) -> Any:
        def launch(target: torch.Tensor, values: torch.Tensor) -> None:
            target.add_(values)
        return launch

    def timing(launch: Any, args: Any, flush: Any) -> float:
        for _ in range(triton_runtime.AUTOTUNE_REPS + 1):
            launch(*args)
        return float(args[0].sum())

    monkeypatch.setattr(triton_runtime, "_l2_flush_buffer", lambda: None)
    monkeypatch.setattr(triton_runtime.TritonLauncher, "_time", staticmethod(timing))
    configs = [LaunchConfig((("XBLOCK", 64),), 4, 1), LaunchConfig((("XBLOCK", 128),), 4, 1)]
    for accumulated, expected in (((0,), 0.0), ((), 2.0 * 2 * (triton_runtime.AUTOTUNE_REPS + 1))):
        launcher = triton_runtime.TritonLauncher("k", "f", {"out_ptr0": "*fp32", "in_ptr1": "*fp32"}, configs,
                                                 [(1, 1, 1)] * 2, [True, True], accumulated=accumulated)
        launcher.binaries = {0: None, 1: None}
        monkeypatch.setattr(launcher, "_make_launch", adding)
        target = torch.zeros(2)
        launcher._autotune([target, torch.ones(2)], save=False)
        assert float(target.sum()) == expected


def test_switching_deterministic_algorithms_recompiles(extern_ops: list[str]) -> None:
    """The guard checks the setting: a graph of atomic adds is not reused once the user asks for
    deterministic algorithms, and the graph compiled then runs aten's kernel."""
    import ember
    from ember_inductor.backend import inductor

    graphs = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(gm)
        return inductor(gm, example_inputs)

    fn = lambda x, i, v: torch.index_add(x, 0, i, v) * 2  # noqa: E731
    x, idx, v = torch.randn(6, 4), torch.tensor([1, 4, 1, 1, 0]), torch.randn(5, 4)
    compiled = ember.compile(fn, backend=counting)
    torch.testing.assert_close(compiled(x, idx, v), fn(x, idx, v))
    assert len(graphs) == 1 and not extern_ops
    torch.use_deterministic_algorithms(True)
    try:
        torch.testing.assert_close(compiled(x, idx, v), fn(x, idx, v))
    finally:
        torch.use_deterministic_algorithms(False)
    assert len(graphs) == 2
    assert any("index_put" in e for e in extern_ops), extern_ops
