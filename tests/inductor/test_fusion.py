"""Fusion: what ends up in one kernel, read from the generated code and the fusion groups."""
from __future__ import annotations

import re

import torch
import torch.nn.functional as F

from helpers import check


def _kernel_code(compiled) -> str:
    src = compiled.compiled.source
    return src[src.index('extern "C" void kernel'):]


def _kernels(compiled) -> list[str]:
    src = compiled.compiled.source
    return re.findall(r'extern "C" void (kernel\d+)\(', src)


def test_sin_plus_cos_is_one_kernel_reading_x_once() -> None:
    compiled = check(lambda x: torch.sin(x) + torch.cos(x), torch.randn(1000, 33))
    src = compiled.compiled.source
    assert _kernels(compiled) == ["kernel0"]
    body = src[src.index('extern "C" void kernel0'):]
    assert len(re.findall(r"in_ptr0\[", body)) == 1
    assert "#pragma omp parallel for simd" in body


def test_pointwise_chain_is_one_kernel_without_temporaries() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        for _ in range(10):
            x = torch.relu(x * 1.01 + 0.1) - 0.05
        return x
    compiled = check(fn, torch.randn(64, 64))
    assert len(_kernels(compiled)) == 1
    assert compiled.compiled.wrapper_source.count("empty_strided") == 2  # call + call_checked


def test_softmax_is_at_most_two_kernels() -> None:
    compiled = check(lambda x: torch.softmax(x, -1), torch.randn(32, 100))
    assert len(_kernels(compiled)) <= 2


def test_softmax_computes_exp_once_per_element() -> None:
    """The sum stage keeps exp(x - max) in a per-row array that the normalising stage reads."""
    compiled = check(lambda x: torch.softmax(x, -1), torch.randn(32, 100))
    body = _kernel_code(compiled)
    assert body.count("e_exp(") == 1
    assert re.search(r"alignas\(64\) float row0\[100\];", body)
    assert re.search(r"row0\[r0\] = t\d+;", body) and re.search(r"= row0\[r0\];", body)


def test_softmax_multiplies_by_the_reciprocal_of_the_row_sum() -> None:
    """One division per row, not per element (float and double sums, as eager's softmax);
    integer sums keep their division."""
    compiled = check(lambda x: torch.softmax(x, -1), torch.randn(32, 100))
    body = _kernel_code(compiled)
    assert re.search(r"float (acc\d+)_inv = float\(1\) / \1;", body)
    assert re.search(r"\? t\d+ \* (acc\d+)_inv : t\d+ / \1\)", body)  # the division only if 1 / sum overflows
    ints = check(lambda x: x // x.sum(-1, keepdim=True).clamp(min=1), torch.randint(0, 9, (8, 50)))
    assert "_inv" not in _kernel_code(ints)
    doubles = check(lambda x: x / x.sum(-1, keepdim=True), torch.rand(8, 50, dtype=torch.float64) + 0.5)
    assert re.search(r"double (acc\d+)_inv = double\(1\) / \1;", _kernel_code(doubles))


def test_division_by_a_denormal_row_sum_matches_eager() -> None:
    """1 / 8e-40 overflows float: that row divides, so x / sum stays finite."""
    x = torch.full((4, 8), 1e-40)
    fn = lambda t: t / t.sum(-1, keepdim=True)  # noqa: E731
    compiled = check(fn, x)  # compares with eager
    assert "_inv" in _kernel_code(compiled)
    torch.testing.assert_close(compiled(x), torch.full((4, 8), 0.125))


def test_row_reuse_is_skipped_for_long_rows() -> None:
    long_rows = check(lambda x: torch.softmax(x, -1), torch.randn(2, 20000))
    assert _kernel_code(long_rows).count("e_exp(") == 2


def test_float64_softmax_keeps_exp_in_a_double_row() -> None:
    """A float64 kernel keeps its row in doubles; a float value kept beside float64 data (a
    float softmax stored as float64) is read back as the float it was computed as."""
    doubles = check(lambda x: torch.softmax(x, -1), torch.randn(4, 50, dtype=torch.float64))
    body = _kernel_code(doubles)
    assert len(re.findall(r"= e_exp\(", body)) == 1 and "alignas(64) double row0[50];" in body
    mixed = check(lambda x: torch.softmax(x, -1).double(), torch.randn(4, 50))
    body = _kernel_code(mixed)
    assert "alignas(64) double row0[50];" in body
    assert re.search(r"= static_cast<decltype\(e_exp\(t\d+\)\)>\(row0\[r0\]\);", body)


def test_a_value_rounded_to_bfloat16_is_stored_without_rounding_again() -> None:
    """softmax in bfloat16 computes in float and rounds its result once, in the store."""
    for dtype, conv in ((torch.bfloat16, "bf16"), (torch.float16, "half")):
        body = _kernel_code(check(lambda x: torch.softmax(x, -1), torch.randn(8, 64).to(dtype)))
        stored = re.findall(rf"out_ptr\d+\[.*\] = float_to_{conv}\((t\d+)\);", body)
        assert stored, body
        for var in stored:  # the store converts the float value, not its rounded copy
            assert not re.search(rf"auto {var} = {conv}_to_float\(", body), body


def test_layer_norm_is_at_most_two_kernels() -> None:
    compiled = check(lambda x, w, b: F.layer_norm(x, (100,), w, b), torch.randn(32, 100),
                     torch.randn(100), torch.randn(100))
    assert len(_kernels(compiled)) <= 2


def test_layer_norm_sums_each_row_once() -> None:
    """The layer norm's decomposition asks for ``var`` and ``mean`` of the same row: one sum of
    the row serves both (a second identical sum cost an add per element in the variance loop)."""
    compiled = check(lambda x, w, b: F.layer_norm(x, (100,), w, b), torch.randn(32, 100),
                     torch.randn(100), torch.randn(100))
    src = compiled.compiled.source
    assert len(re.findall(r"acc\d+ \+= t\d+;", src)) == 2, src  # the row's sum, the deviations'


def test_a_sum_the_graph_returns_keeps_eager_strides_beside_a_variance() -> None:
    """Only reductions kept inside a value are shared: a sum returned by the graph is its own
    buffer, laid out as eager lays it out (here following a permuted input), not the variance's."""
    x = torch.randn(4, 5, 6).permute(2, 1, 0)
    fn = lambda x: (x.var(1, keepdim=True) + 1, x.sum(1, keepdim=True))  # noqa: E731
    compiled = check(fn, x)
    assert compiled(x)[1].stride() == fn(x)[1].stride()


def test_mean_std_normalisation_is_one_kernel() -> None:
    compiled = check(lambda x: (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True),
                     torch.randn(16, 256))
    assert len(_kernels(compiled)) == 1


def test_matmul_epilogue_fuses_around_extern() -> None:
    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.gelu(x @ w + b) * 2 + 1
    compiled = check(fn, torch.randn(8, 16), torch.randn(16, 32), torch.randn(32))
    assert len(_kernels(compiled)) == 1
    assert "aten.mm" in compiled.compiled.wrapper_source or "c0" in compiled.compiled.wrapper_source


def test_linear_bias_fuses_into_the_consumer_kernel() -> None:
    """addmm whose result only feeds kernels: a plain matmul, the bias added in the consumer."""
    compiled = check(lambda x, w, b: torch.relu(F.linear(x, w, b)) * 2,
                     torch.randn(8, 16), torch.randn(32, 16), torch.randn(32))
    wrapper = compiled.compiled.wrapper_source
    assert re.search(r"= linear\(\w+, \w+\)\n", wrapper), wrapper
    assert len(_kernels(compiled)) == 1


def test_linear_feeding_an_output_keeps_the_bias_in_the_matmul() -> None:
    compiled = check(lambda x, w, b: F.linear(x, w, b).t(), torch.randn(8, 16), torch.randn(32, 16),
                     torch.randn(32))
    assert _kernels(compiled) == []  # no separate kernel adds the bias


def test_matmul_with_a_strided_weight_is_not_rewritten_as_linear() -> None:
    """Only a whole dense (N, K) weight read transposed becomes ``linear``."""
    w = torch.randn(32, 40)[:, ::2]
    compiled = check(lambda x, w, b: F.linear(x, w, b) + 1, torch.randn(8, 20), w, torch.randn(32))
    assert "linear(" not in compiled.compiled.wrapper_source


def test_extern_arguments_are_views_made_in_cpp_or_the_buffers_themselves() -> None:
    """A whole transposed buffer is ``.t()`` (a C method) and a view with the buffer's own
    layout is the buffer, where ``reinterpret`` is a Python call per argument and call; a view
    of part of a buffer keeps ``reinterpret``."""
    def fn(a: torch.Tensor, b: torch.Tensor) -> tuple:
        return (a.t() @ b).cos(), (a.t().t() @ b).exp(), (a.sin() @ b[:, :3]).tanh()
    compiled = check(fn, torch.randn(16, 16), torch.randn(16, 8))
    wrapper = compiled.compiled.wrapper_source.split("def call_checked")[0]
    products = [line for line in wrapper.splitlines() if "= c" in line]
    assert len(products) == 3, wrapper
    assert ".t()" in products[0] and "reinterpret" not in products[0], wrapper
    assert "reinterpret" not in products[1] and ".t()" not in products[1], wrapper
    assert "reinterpret" in products[2], wrapper


def test_sibling_reductions_share_a_kernel() -> None:
    compiled = check(lambda x: (x.sum(1), x.amax(1), (x * x).sum(1)), torch.randn(16, 64))
    assert len(_kernels(compiled)) == 1


def test_dead_code_is_removed() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        unused = torch.exp(x).sum()  # noqa: F841
        return x + 1
    compiled = check(fn, torch.randn(10))
    assert "e_exp" not in _kernel_code(compiled)


def test_expensive_values_are_not_recomputed(monkeypatch) -> None:
    from ember_inductor.codegen import cpp_streams
    monkeypatch.setattr(cpp_streams, "STREAMS", 1)  # one copy of the chain (test_cpp_streams has four)

    def fn(x: torch.Tensor) -> tuple:
        y = x
        for _ in range(12):
            y = torch.tanh(y) * 1.1 + torch.sin(y)
        return y + 1, y * 2, y.sum(0)
    compiled = check(fn, torch.randn(16, 16))
    assert _kernel_code(compiled).count("e_tanh(") == 12


def test_fusion_groups_reported(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("EMBER_DEBUG", "1")
    monkeypatch.setenv("EMBER_DEBUG_DIR", str(tmp_path))
    check(lambda x: torch.softmax(x * 2, -1), torch.randn(8, 40))
    (folder,) = list(tmp_path.iterdir())
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["aten_graph.py", "fusion.txt", "ir.txt", "kernels.cpp", "wrapper.py"]
    assert (folder / "fusion.txt").read_text().count("kernel over") == 1


def test_one_element_kernels_share_one_launch() -> None:
    """Unrelated one-element results (a training step's batch norms each add 1 to their
    ``num_batches_tracked``) are computed by one kernel, not one launch each; a larger kernel
    stays apart."""
    def counts(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, x: torch.Tensor) -> tuple:
        return a + 1, b + 1, c * 2, x.sin()
    compiled = check(counts, torch.tensor(3), torch.tensor(4), torch.tensor(1.5), torch.randn(100))
    assert len(_kernels(compiled)) == 2


def test_a_value_read_per_row_is_recomputed_not_written(monkeypatch, tmp_path) -> None:
    """nll_loss's gradient (a one-hot row scaled by the loss's tangent) is read by the row sum and
    by the log-softmax gradient: it reads only a label and two scalars per row, so both recompute
    it and the backward writes no tokens x vocabulary buffer but the gradient (and its transpose
    for the weight's product). It used to count as five loads, and was written (GPT-2: 1.65 GB)."""
    import ember
    from ember_inductor.codegen.wrapper import WrapperCodegen

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    sources: list[str] = []
    generate = WrapperCodegen.generate
    monkeypatch.setattr(WrapperCodegen, "generate", lambda self: sources.append(generate(self)) or sources[-1])

    def loss_of(h: torch.Tensor, w: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(h @ w.t(), labels)

    h, w = torch.randn(64, 16, requires_grad=True), torch.randn(999, 16, requires_grad=True)
    labels = torch.randint(0, 999, (64,))
    ember.compile(loss_of, backend="inductor")(h, w, labels).backward()
    ref = [t.detach().requires_grad_() for t in (h, w)]
    loss_of(*ref, labels).backward()
    torch.testing.assert_close(h.grad, ref[0].grad)
    torch.testing.assert_close(w.grad, ref[1].grad)
    backward = sources[-1].split("def call_checked")[0]
    assert len(re.findall(r"empty_strided\(\((64, 999|999, 64), \)", backward)) <= 2, backward
