"""The layout contract of extern (aten) kernels, forward and backward through ``ember.compile``.

An extern kernel gets its inputs with the strides eager gives it (those the aten graph's fake
tensors recorded), and returns outputs with the strides the wrapper was generated for. Inputs
here are transposed or permuted views of computed values, as in attention and NHWC code: before
the contract the kernels got contiguous copies, returned other strides than their fakes, and the
wrapper's first-call check sent the whole graph back to aten with a warning.
"""
from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F

import ember


def _attention(q, k, v):
    """Heads split by a view + transpose of computed values, merged back by a transpose."""
    b, n, _ = q.shape
    heads = lambda t: t.view(b, n, 2, 8).transpose(1, 2)  # noqa: E731
    out = F.scaled_dot_product_attention(heads(q * 2), heads(k + 1), heads(v.tanh()), is_causal=True)
    return out.transpose(1, 2).reshape(b, n, 16)


def _sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _matmuls_and_rows(a, b, c, d, w, lw, lb):
    """mm, bmm and linear on transposed/permuted operands; layer norm and sort of transposes."""
    return (a.sin().t() @ b.cos().t(), torch.bmm((c * 2).permute(1, 0, 2), (d + 1).permute(1, 2, 0)),
            F.linear((c * 2).permute(1, 0, 2), w), F.layer_norm((b * 2).t(), (4,), lw, lb),
            torch.sort((a * 2).t(), 1)[0])


def _nhwc(x, w, wt):
    """Convolution (and its backward), transposed convolution and pooling of an NHWC view."""
    x = (x * 2).permute(0, 3, 1, 2)
    return F.conv2d(x, w, padding=1), F.conv_transpose2d(x.exp(), wt), F.max_pool2d(x, 2)


def _padded_rows(x, w):
    """Rows padded to 8 elements and sliced back (SDPA's ``preprocess_mask`` on an attention bias),
    saved for the backward by the product: the forward must hand the backward those strides (the
    saved bias reached Whisper's and CLIP's backward dense, ran with aten, and CUDA's attention
    backward refused it); as an output it keeps them too."""
    b = F.pad(x * 2, (0, 2))[..., :6]
    return torch.bmm(b, w), b


CASES = {
    "padded_rows_saved": (_padded_rows, [(3, 6, 6), (3, 6, 5)]),
    "sdpa": (_sdpa, [(2, 2, 5, 8)] * 3),
    "sdpa_transposed_heads": (_attention, [(2, 6, 16)] * 3),
    "matmuls_and_rows": (_matmuls_and_rows, [(5, 3), (4, 5), (4, 3, 5), (6, 3, 5), (4, 5), (4,), (4,)]),
    "nhwc": (_nhwc, [(2, 6, 6, 3), (4, 3, 3, 3), (3, 4, 3, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_extern_kernel_gets_eager_layouts(name, caplog):
    fn, shapes = CASES[name]
    g = torch.Generator().manual_seed(0)
    values = [torch.randn(s, generator=g) for s in shapes]
    got = [v.clone().requires_grad_() for v in values]
    ref = [v.clone().requires_grad_() for v in values]
    compiled = ember.compile(fn, backend="inductor", options={"eager_fallback": False})
    with caplog.at_level(logging.WARNING, logger="ember.inductor"):
        out = compiled(*got)
    expected = fn(*ref)
    assert "running this graph with aten" not in caplog.text, caplog.text
    out, expected = (out, expected) if isinstance(expected, tuple) else ((out,), (expected,))
    loss = ref_loss = 0
    for o, e in zip(out, expected):
        assert o.stride() == e.stride()
        torch.testing.assert_close(o, e, rtol=1e-4, atol=1e-5)
        weight = torch.randn(e.shape, generator=g)
        loss, ref_loss = loss + (o * weight).sum(), ref_loss + (e * weight).sum()
    loss.backward()
    ref_loss.backward()
    assert "running this graph with aten" not in caplog.text, caplog.text
    for a, b in zip(got, ref):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


def test_first_call_failure_of_a_compiled_graph_runs_it_with_aten(caplog, monkeypatch):
    # On CUDA, the mem-efficient SDPA kernel refused a bias whose row stride (13) was not a
    # multiple of 4 and the error reached the user's generate(). A first call that fails where
    # the aten graph runs is now that graph's fallback, with one warning; an error the aten
    # graph raises too (the program's own) is raised as it is.
    from torch.fx.experimental.proxy_tensor import make_fx
    from ember_inductor.compile_fx import CompiledGraph, compile_aten_graph

    x = torch.randn(8, 8)
    gm = make_fx(lambda a: (a.sin() @ a,), tracing_mode="fake")(x)
    compiled = compile_aten_graph(gm, [x], strict=False)
    assert isinstance(compiled, CompiledGraph)

    def refuse(args):
        raise RuntimeError("attn_bias is not correctly aligned (strideH)")

    monkeypatch.setattr(compiled, "_call", refuse)
    with caplog.at_level(logging.WARNING, logger="ember.inductor"):
        out = compiled(x)
    torch.testing.assert_close(out[0], x.sin() @ x)
    assert "failed on its first call" in caplog.text

    bad = make_fx(lambda a, i: (a[i],), tracing_mode="fake")(x, torch.tensor([1]))
    compiled = compile_aten_graph(bad, [x, torch.tensor([1])], strict=False)
    with pytest.raises(IndexError):
        compiled(x, torch.tensor([9]))


def test_buffers_take_strides_with_gaps_and_never_overlapping_ones():
    from ember_inductor.extern_layout import non_overlapping
    assert non_overlapping([2, 1, 6, 6], [48, 48, 8, 1])      # a padded bias
    assert non_overlapping([3, 6, 6], [48, 1, 8])             # its transpose
    assert non_overlapping([2, 4, 6, 6], [144, 1, 24, 4])     # channels last
    assert not non_overlapping([2, 4, 6], [24, 0, 1])         # broadcast
    assert not non_overlapping([4, 6], [4, 1])                # rows overlap
    assert non_overlapping([4, 6], [1, 4])                    # column major
    assert not non_overlapping([4, 6], [1, 3])                # columns overlap
    assert non_overlapping([1, 6], [0, 1])                    # a size-1 dimension has no stride


def test_kernel_rules_ask_more_than_eager_strides_only_where_kernels_need_it():
    from ember_inductor.extern_layout import wanted
    efficient = torch.ops.aten._scaled_dot_product_efficient_attention.default
    f32 = torch.float32
    assert wanted(efficient, 3, [2, 4, 1, 13], [13, 0, 13, 1], f32, True) == ([16, 0, 16, 1], 8)  # bias rows aligned
    assert wanted(efficient, 0, [2, 4, 5, 8], [160, 8, 32, 1], f32, True) == ([160, 8, 32, 1], 1)  # eager's q
    assert wanted(efficient, 0, [2, 4, 5, 8], [160, 40, 1, 5], f32, True) == ([160, 40, 8, 1], 1)  # rows dense
    assert wanted(torch.ops.aten.mm.default, 0, [4, 6], [1, 4], f32, False) == ([1, 4], 1)  # C++ graphs: eager's
