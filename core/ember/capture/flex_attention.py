"""``flex_attention`` inside captured code: one higher-order node, its score_mod and mask_mod as subgraphs.

``torch.nn.attention.flex_attention.flex_attention`` is inlined (its checks run on fake tensors, a
``BlockMask`` made outside the compiled function is an object whose tensors are inputs); while
compiling it calls the operator ``torch.ops.higher_order.flex_attention`` with the score_mod, the
block mask as a tuple that ends with its mask_mod, the scale and the kernel options. Here that
call becomes one node, as torch.compile records it: the score_mod is speculated
(:mod:`.subgraphs`) on scalar fakes ``(score, b, h, q_idx, kv_idx)`` (the score a scalar of the
query's dtype, requiring grad when the query does; the indices int32 scalars), the mask_mod on
``(b, h, q_idx, kv_idx)`` (torch's ``noop_mask`` when the mask has none), and the tensors each
reads from outside (a bias table, a document-id vector) become the operator's
``score_mod_other_buffers`` / ``mask_mod_other_buffers``. Inside the bodies, indexing a tensor
by a scalar tensor (``bias[h]``) is recorded as ``aten.index``, as torch's
``TransformGetItemToIndex`` does, so the body runs under the operator's vmap.

A block mask made inside the captured code is evaluated at capture time (:mod:`.block_masks`).
The backends run the node as torch's operator: eagerly (torch's dense implementation and its
autograd rule), or traced by make_fx into the forward and ``flex_attention_backward`` nodes; the
inductor decomposes it into that dense computation (``ember_inductor.flex_attention``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch._higher_order_ops.flex_attention import flex_attention as flex_attention_op
from torch.nn.attention import flex_attention as flex_module

from .builtin_calls import handles
from .constants import NotConstant, python_value
from .graph import to_arg, to_fake
from .hops import emit
from .subgraphs import Subgraph, graph_attr, speculate
from .values import ConstVar, TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame

_NAMES = ("query", "key", "value", "score_mod", "block_mask", "scale", "kernel_options",
          "score_mod_other_buffers", "mask_mod_other_buffers")


def _bound(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> dict[str, Var]:
    values = dict(zip(_NAMES, args))
    for name, var in kwargs.items():
        if name not in _NAMES or name in values:
            frame.fail(f"flex_attention called with an unexpected argument {name!r}")
        values[name] = var
    if any(n not in values for n in _NAMES[:7]):
        frame.fail("flex_attention called without all of its arguments")
    return values


def _scalars(query: torch.Tensor, with_score: bool) -> list[torch.Tensor]:
    """The fake arguments the operator passes its bodies: (score,) b, h, q_idx, kv_idx."""
    indices = [query.new_empty((), dtype=torch.int32) for _ in range(4)]
    if not with_score:
        return indices
    return [query.new_empty((), requires_grad=query.requires_grad), *indices]


def _no_buffers(frame: "Frame", var: Var | None, what: str) -> None:
    if var is None:
        return
    try:
        if python_value(var) == ():
            return
    except NotConstant:
        pass
    frame.fail(f"flex_attention called with {what} already given")


def _indexes_a_trained_tensor(sub: Subgraph) -> bool:
    """Does the body index a tensor from outside that requires grad (a learned bias table)? torch's
    own capture differentiates that read through a scatter with a vmap rule of its own; ``aten.index``
    under the operator's vmapped backward cannot be, so such a call is a graph break."""
    placeholders = [n for n in sub.module.graph.nodes if n.op == "placeholder"]
    lifted = placeholders[len(placeholders) - len(sub.lifted):] if sub.lifted else []
    return any(getattr(p.meta.get("val"), "requires_grad", False)
               and any(u.target is torch.ops.aten.index.Tensor and u.args[0] is p for u in p.users)
               for p in lifted)


@handles(flex_attention_op)
def _flex_attention(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    bound = _bound(frame, args, kwargs)
    query, key, value = bound["query"], bound["key"], bound["value"]
    if not all(isinstance(t, TensorVar) for t in (query, key, value)):
        frame.fail("flex_attention of a query, key or value that is not a tensor")
    _no_buffers(frame, bound.get("score_mod_other_buffers"), "score_mod_other_buffers")
    _no_buffers(frame, bound.get("mask_mod_other_buffers"), "mask_mod_other_buffers")
    block_mask = bound["block_mask"]
    if not isinstance(block_mask, TupleVar) or not block_mask.items:
        frame.fail("flex_attention's block mask is not a tuple")
    mask_mod = block_mask.items[-1]
    if isinstance(mask_mod, ConstVar) and mask_mod.value is None:
        mask_mod = ConstVar(flex_module.noop_mask)
    with frame.state.graph.fake_mode:
        score_fakes, mask_fakes = _scalars(query.fake, True), _scalars(query.fake, False)
    score = speculate(frame, bound["score_mod"], score_fakes, "flex_attention's score_mod", single=True,
                      index_by_tensors=True)
    mask = speculate(frame, mask_mod, mask_fakes, "flex_attention's mask_mod", single=True,
                     index_by_tensors=True)
    if _indexes_a_trained_tensor(score) or _indexes_a_trained_tensor(mask):
        frame.fail("flex_attention's score_mod or mask_mod indexes a tensor that requires grad")
    rest = TupleVar(list(block_mask.items[:-1]))
    try:
        options = python_value(bound["kernel_options"])
        scale = python_value(bound["scale"])
    except NotConstant:
        frame.fail("flex_attention's scale or kernel options are not known at capture time")
    node_args = (query.node, key.node, value.node, graph_attr(frame, score.module, "score_mod"),
                 (*to_arg(rest), graph_attr(frame, mask.module, "mask_fn")), scale, options,
                 tuple(score.lifted), tuple(mask.lifted))
    fake_args = (query.fake, key.fake, value.fake, score.module, (*to_fake(rest), mask.module), scale, options,
                 tuple(n.meta["val"] for n in score.lifted), tuple(n.meta["val"] for n in mask.lifted))
    return emit(frame, flex_attention_op, node_args, fake_args, "flex_attention")


__all__: list[str] = []
