"""``flex_attention`` inside captured code is one graph, as under torch.compile.

Its score_mod (causal, a relative bias read from a captured tensor, ALiBi slopes indexed by the
head) and the mask_mod of a ``create_block_mask`` block mask (causal, sliding window) become
subgraphs of one ``flex_attention`` node; results equal eager's on the eager, aot_eager and
inductor backends (the inductor decomposes the node into torch's dense implementation). torch
refuses inputs that require grad in ``flex_attention`` on the CPU, so gradients are checked
through the operator itself (``torch.ops.higher_order.flex_attention``), forward and backward.
"""
import pytest
import torch
from torch._higher_order_ops.flex_attention import flex_attention as flex_attention_op
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import ember
from core_helpers import CountingBackend, assert_captured_like_torch

S = 16
BIAS = torch.randn(2 * S, generator=torch.Generator().manual_seed(5))
SLOPES = torch.tensor([0.5, 0.25])


def causal(score, b, h, q, kv):
    return torch.where(q >= kv, score, -float("inf"))


def relative_bias(score, b, h, q, kv):
    return score + BIAS[q - kv + S]


def alibi(score, b, h, q, kv):
    return score + SLOPES[h] * (kv - q)


def causal_mask(b, h, q, kv):
    return q >= kv


def sliding_window(b, h, q, kv):
    return (q >= kv) & (q - kv <= 4)


CAUSAL = create_block_mask(causal_mask, None, None, S, S, device="cpu", BLOCK_SIZE=8)
SLIDING = create_block_mask(sliding_window, None, None, S, S, device="cpu", BLOCK_SIZE=8)


def causal_score(q, k, v):
    return flex_attention(q, k, v, score_mod=causal)


def bias_causal_mask(q, k, v):
    return flex_attention(q, k, v, score_mod=relative_bias, block_mask=CAUSAL)


def alibi_sliding_window(q, k, v):
    return flex_attention(q, k, v, score_mod=alibi, block_mask=SLIDING) * 2


WINDOW = 4


def global_window(b, h, q, kv):
    return (q >= kv) & (q - kv <= WINDOW)


def mask_made_inside(q, k, v):
    mask = create_block_mask(global_window, None, None, S, S, device="cpu", BLOCK_SIZE=8)
    return flex_attention(q, k, v, score_mod=alibi, block_mask=mask)


def _qkv(requires_grad=False):
    def make():
        gen = torch.Generator().manual_seed(0)
        return tuple(torch.randn(1, 2, S, 8, generator=gen).requires_grad_(requires_grad) for _ in range(3))
    return make


@pytest.mark.parametrize("fn, backends", [
    (causal_score, ("inductor",)),
    (bias_causal_mask, ("aot_eager",)),
    (alibi_sliding_window, ("eager", "inductor")),
    (mask_made_inside, ("eager",)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_one_graph_results_equal(fn, backends, monkeypatch):
    monkeypatch.setenv("EMBER_INDUCTOR_STRICT", "1")  # the inductor compiles the node, not aten
    assert_captured_like_torch(fn, _qkv(), backends=backends)


def test_one_node_with_its_bodies_as_subgraphs():
    counting = CountingBackend()
    ember.compile(bias_causal_mask, backend=counting)(*_qkv()())
    (gm,) = counting.graphs
    (node,) = [n for n in gm.graph.nodes if n.target is flex_attention_op]
    score_mod = getattr(gm, node.args[3].target)
    assert "index" in str(score_mod.code)  # BIAS[q - kv + S] read as aten.index of a lifted buffer
    assert len(node.args[7]) == 1 and len(node.args[8]) == 0


def test_mask_made_inside_follows_what_its_mask_mod_reads(monkeypatch):
    """The block mask is made at capture time from the mask_mod's globals, which are guarded."""
    compiled = ember.compile(mask_made_inside, backend="eager")
    for window in (4, 9):
        monkeypatch.setitem(global_window.__globals__, "WINDOW", window)
        torch.testing.assert_close(compiled(*_qkv()()), mask_made_inside(*_qkv()()))


OPTIONS = {"BACKEND": "AUTO", "PRESCALE_QK": False, "ROWS_GUARANTEED_SAFE": False, "BLOCKS_ARE_CONTIGUOUS": False,
           "WRITE_DQ": True, "OUTPUT_LOGSUMEXP": True, "OUTPUT_MAX": False}


def operator_with_grad(q, k, v):
    out, _, _ = flex_attention_op(q, k, v, relative_bias, CAUSAL.as_tuple(), 0.5, OPTIONS)
    return out


def test_gradients_equal_through_the_operator(monkeypatch):
    monkeypatch.setenv("EMBER_INDUCTOR_STRICT", "1")
    assert_captured_like_torch(operator_with_grad, _qkv(requires_grad=True), backends=("aot_eager", "inductor"),
                               grad=True)


def learned_bias(q, k, v, table):
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[q_idx - kv_idx + S]
    return flex_attention(q, k, v, score_mod=score_mod)


def test_learned_bias_table_is_a_graph_break_with_gradients_equal():
    """Indexing a tensor that requires grad inside the score_mod is not captured yet (torch
    differentiates it through a scatter of its own): a graph break, never a wrong gradient."""
    def args():
        table = torch.randn(2 * S, generator=torch.Generator().manual_seed(7)).requires_grad_()
        return (*_qkv()(), table)
    expected_args, got_args = args(), args()
    learned_bias(*expected_args).sum().backward()
    ember.compile(learned_bias, backend="aot_eager")(*got_args).sum().backward()
    torch.testing.assert_close(got_args[-1].grad, expected_args[-1].grad)
