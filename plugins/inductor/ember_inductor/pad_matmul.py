"""Matrix products with a dimension that is not a multiple of 8, padded with zeros (GPU graphs).

cuBLAS runs a 16-bit product on its Hopper kernels only when every dimension suits their
vector width; aligning the rows' strides (``extern_layout``) is not enough. GPT-2's vocabulary of
50257 words made its logits product and that product's two gradients run on Turing-era
``cutlass_75_*_align1`` kernels on the H200: 11.4 ms of a 47 ms training step, where
torch.compile's padded products took about 2 ms. Here ``mm(a, b)`` with ``a`` of M x K and ``b``
of K x N becomes ``mm(pad(a), pad(b))[:M, :N]``, each misaligned dimension padded with zeros to
the next multiple of 8 (zeros add nothing to the sums: the kept block is the same product). The
pads are pointwise kernels the inductor fuses with what makes the operands (the weight's cast to
bfloat16); the result is a view. Only large 16-bit products are padded: for a small one the
copies would cost more than the fast kernel saves.
"""
from __future__ import annotations

import logging

import torch
import torch.fx

log = logging.getLogger("ember.inductor")
aten = torch.ops.aten

MULTIPLE = 8
MIN_FLOPS = 1 << 30  # 2*M*N*K below this: not worth two copies


def _padded(n: int) -> int:
    return -(-n // MULTIPLE) * MULTIPLE


def _sizes(node: torch.fx.Node) -> tuple[int, int, int] | None:
    """(M, K, N) of an ``mm`` worth padding, or None."""
    if node.op != "call_function" or node.target is not aten.mm.default:
        return None
    a, b = (arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None for arg in node.args[:2])
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype not in (torch.bfloat16, torch.float16):
        return None
    if not all(isinstance(s, int) for s in (*a.shape, *b.shape)):  # symbolic sizes: left as they are
        return None
    (m, k), n = a.shape, b.shape[1]
    if all(d % MULTIPLE == 0 for d in (m, k, n)) or 2 * m * n * k < MIN_FLOPS:
        return None
    return m, k, n


def pad_matmuls(gm: torch.fx.GraphModule) -> int:
    """Rewrite ``gm`` (an aten graph whose nodes carry fake ``meta["val"]``) in place; the number
    of products padded."""
    done = 0
    pads: dict[tuple[torch.fx.Node, tuple[int, ...]], torch.fx.Node] = {}
    for node in list(gm.graph.nodes):
        sizes = _sizes(node)
        if sizes is None:
            continue
        m, k, n = sizes
        a, b = node.args[:2]
        mode = a.meta["val"].fake_mode
        with gm.graph.inserting_before(node), mode:
            a2 = _pad(gm.graph, a, [0, _padded(k) - k, 0, _padded(m) - m], pads)
            b2 = _pad(gm.graph, b, [0, _padded(n) - n, 0, _padded(k) - k], pads)
            product = _call(gm.graph, aten.mm.default, (a2, b2))
            rows = _call(gm.graph, aten.slice.Tensor, (product, 0, 0, m)) if _padded(m) != m else product
            out = _call(gm.graph, aten.slice.Tensor, (rows, 1, 0, n)) if _padded(n) != n else rows
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
        done += 1
    if done:
        gm.recompile()
        log.debug("padded %d matrix products to multiples of %d", done, MULTIPLE)
    return done


def _pad(graph: torch.fx.Graph, value: torch.fx.Node, pads: list[int],
         made: dict[tuple[torch.fx.Node, tuple[int, ...]], torch.fx.Node]) -> torch.fx.Node:
    """``value`` padded (``constant_pad_nd``'s order: last dimension first); a transpose is padded
    through (its operand padded, then transposed), and one pad serves every product that asks for
    it: the logits' gradient feeds the gradients of both the hidden states and the weight, as
    itself and as its transpose, so both read one padded buffer (column-major for the second)."""
    if not any(pads):
        return value
    if value.op == "call_function" and (value.target is aten.t.default or (
            value.target is aten.permute.default and list(value.args[1]) == [1, 0])):
        inner = _pad(graph, value.args[0], [pads[2], pads[3], pads[0], pads[1]], made)
        return _call(graph, aten.permute.default, (inner, [1, 0]))
    key = (value, tuple(pads))
    if key not in made:
        made[key] = _call(graph, aten.constant_pad_nd.default, (value, pads, 0.0))
    return made[key]


def _call(graph: torch.fx.Graph, target: torch._ops.OpOverload, args: tuple) -> torch.fx.Node:
    node = graph.call_function(target, args)
    fakes = tuple(a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args)
    node.meta["val"] = target(*fakes)
    return node


__all__ = ["pad_matmuls"]
