"""Matrix products on the GPU get operands and results whose leading strides are multiples of 16
bytes (``extern_layout.MATRIX``), in the Triton graphs a GPU runs (here in Triton's interpreter).

cuBLAS runs a product on its fast kernels only when every matrix's leading stride is so aligned;
GPT-2's 50257-word vocabulary makes the logits (rows of 50257) and their gradient unaligned, and
ember's bf16 training step ran its vocabulary products on Turing-era ``*_align1`` kernels where
torch.compile (which pads them) got Hopper's (issue 47). The rows are now padded where ember lays
them out: a product's result allocated padded and passed as ``out=``, an operand computed by a
kernel written padded. A graph output keeps eager's strides.
"""
from __future__ import annotations

import re

import pytest
import torch

import ember
from triton_checks import interpreter_only

interpreter_only()
pytestmark = pytest.mark.usefixtures("triton_kernels")

VOCAB, DIM = 101, 64


def _logits_loss(x: torch.Tensor, w: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A language model's head: bf16 logits over an odd vocabulary, a float32 cross entropy."""
    logits = x.to(torch.bfloat16) @ w.to(torch.bfloat16).t()
    return torch.nn.functional.cross_entropy(logits.float(), labels)


def _wrappers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from ember_inductor.codegen.wrapper import WrapperCodegen
    sources: list[str] = []
    generate = WrapperCodegen.generate

    def spy(self):
        source = generate(self)
        sources.append(source.split("def call_checked")[0])
        return source
    monkeypatch.setattr(WrapperCodegen, "generate", spy)
    return sources


def _compiled_loss_matches_eager(rows: int) -> None:
    """``_logits_loss`` of ``rows`` rows compiled: its loss and both gradients equal eager's."""
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(rows, DIM, generator=g), torch.randn(VOCAB, DIM, generator=g) * 0.1
    labels = torch.randint(0, VOCAB, (rows,), generator=g)
    got = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    ref = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    loss = ember.compile(_logits_loss, options={"eager_fallback": False})(*got, labels)
    loss.backward()
    expected = _logits_loss(*ref, labels)
    expected.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-3, atol=1e-3)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a.grad, b.grad, rtol=2e-2, atol=2e-3)


def test_vocabulary_products_get_aligned_rows_and_match_eager(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))  # no stored plan: the wrappers are generated
    sources = _wrappers(monkeypatch)
    _compiled_loss_matches_eager(32)
    forward, backward = sources
    assert re.search(r"(b\d+) = empty_strided\(\(32, 101, \), \(104, 1, \), dtype=torch.bfloat16\)\n"
                     r"    c\d+\(.*, out=\1\)", forward), forward
    bf16 = re.findall(r"empty_strided\(\((\d+), (\d+), \), \((\d+), (\d+), \), dtype=torch.bfloat16\)", backward)
    # the logits' gradient, aligned as the two products read it (row- and column-major). Since the
    # one-hot gradient is a pointwise kernel, the gradient's reduction kernel also writes it
    # unaligned for the transposed copy: an extra copy, on products too small to be padded
    assert ("32", "101", "104", "1") in bf16 and ("101", "32", "1", "104") in bf16, backward
    assert len([b for b in bf16 if "101" in b[2:]]) <= 1, backward


def test_logits_returned_keep_eager_strides() -> None:
    def logits(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (x.sin().to(torch.bfloat16) @ w.to(torch.bfloat16).t()) * 2
    x, w = torch.randn(8, DIM), torch.randn(VOCAB, DIM) * 0.1
    out = ember.compile(logits, options={"eager_fallback": False})(x, w)
    expected = logits(x, w)
    assert out.stride() == expected.stride()
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=3e-2)


def test_the_matrix_rule() -> None:
    from ember_inductor.extern_layout import output_strides, wanted
    mm, bmm = torch.ops.aten.mm.default, torch.ops.aten.bmm.default
    bf16 = torch.bfloat16
    assert wanted(mm, 0, [32, 101], [101, 1], bf16, True) == ([104, 1], 8)       # rows padded
    assert wanted(mm, 0, [101, 32], [1, 101], bf16, True) == ([1, 104], 8)       # columns padded
    assert wanted(mm, 1, [64, 101], [1, 64], bf16, True) == ([1, 64], 8)         # aligned: as it is
    assert wanted(mm, 0, [32, 101], [101, 1], torch.float32, True) == ([104, 1], 4)
    assert wanted(mm, 0, [32, 101], [101, 1], bf16, False) == ([101, 1], 1)      # C++ graphs: eager's
    assert wanted(bmm, 0, [3, 5, 7], [35, 7, 1], bf16, True) == ([40, 8, 1], 8)  # batches follow
    assert wanted(bmm, 0, [3, 5, 7], [0, 7, 1], bf16, True) == ([0, 8, 1], 8)    # a broadcast stays
    assert output_strides(mm, [32, 101], [101, 1], bf16, True) == [104, 1]
    assert output_strides(mm, [32, 64], [64, 1], bf16, True) is None


def test_misaligned_product_dimensions_are_padded_with_zeros(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """A 16-bit product with a dimension that is not a multiple of 8 (the vocabulary's 101 here,
    GPT-2's 50257) runs padded with zeros and sliced back (``pad_matmul``): forward and both
    gradients, results equal to eager's. Small products are left alone outside this test."""
    from ember_inductor import compile_fx, pad_matmul

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pad_matmul, "MIN_FLOPS", 0)
    padded: list[int] = []
    monkeypatch.setattr(compile_fx, "pad_matmuls", lambda gm: padded.append(pad_matmul.pad_matmuls(gm)) or padded[-1])
    _compiled_loss_matches_eager(30)
    assert padded == [1, 2]  # the logits' product; the two products of its gradient


def test_the_padding_pass_keeps_the_product() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    from ember_inductor import pad_matmul

    def products(x: torch.Tensor, w: torch.Tensor, g: torch.Tensor) -> tuple:
        xb, wb = x.to(torch.bfloat16), w.to(torch.bfloat16)
        return xb @ wb.t(), g @ wb, g.t() @ xb

    x, w = torch.randn(30, DIM), torch.randn(VOCAB, DIM)
    g = torch.randn(30, VOCAB).to(torch.bfloat16)
    gm = make_fx(products, tracing_mode="fake")(x, w, g)
    assert pad_matmul.pad_matmuls(gm) == 0  # too small to be worth it
    pad_matmul.MIN_FLOPS, saved = 0, pad_matmul.MIN_FLOPS
    try:
        assert pad_matmul.pad_matmuls(gm) == 3
    finally:
        pad_matmul.MIN_FLOPS = saved
    shapes = [tuple(a.meta["val"].shape) for n in gm.graph.nodes if n.target is torch.ops.aten.mm.default
              for a in n.args[:2]]
    assert all(d % 8 == 0 for s in shapes for d in s), shapes
    pads = [n for n in gm.graph.nodes if n.target is torch.ops.aten.constant_pad_nd.default]
    # one pad of each operand: g for ``g @ wb`` and ``g.t() @ xb`` (the second reads it transposed),
    # wb for ``xb @ wb.t()`` and ``g @ wb``, xb (30 rows) for the first and last
    assert sorted(tuple(p.meta["val"].shape) for p in pads) == [(32, DIM), (32, 104), (104, DIM)], pads
    for a, b in zip(gm(x, w, g), products(x, w, g)):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b)
