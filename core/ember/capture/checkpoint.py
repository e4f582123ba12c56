"""``torch.utils.checkpoint.checkpoint(fn, *args)`` inside captured code: one higher-order node.

The function is speculated into a subgraph (:mod:`.subgraphs`) and the call recorded as torch's
``tag_activation_checkpoint`` operator over it, as torch.compile records it: run eagerly, the
operator is torch's non-reentrant checkpoint of the subgraph, so the backward recomputes the
function's activations instead of keeping them; traced by make_fx, its nodes carry torch's
recompute tags. A ``context_fn`` other than the default, or arguments that are not tensors,
make the call a graph break.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch.utils.checkpoint
from torch._higher_order_ops.wrap import tag_activation_checkpoint

from .builtin_calls import handles
from .constants import NotConstant, python_value
from .hops import emit, rebuild
from .subgraphs import graph_attr, speculate
from .values import TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame

#: options of checkpoint that the operator decides itself (it is always non-reentrant when traced)
_OPTIONS = {"use_reentrant", "preserve_rng_state", "determinism_check", "debug", "early_stop"}


@handles(torch.utils.checkpoint.checkpoint)
def _checkpoint(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    if not args:
        frame.fail("torch.utils.checkpoint.checkpoint without a function")
    fn, operands = args[0], list(args[1:])
    if "context_fn" in kwargs or set(kwargs) - _OPTIONS:
        frame.fail("torch.utils.checkpoint.checkpoint with a context_fn or keyword arguments for the function")
    try:
        for value in kwargs.values():
            python_value(value)
    except NotConstant:
        frame.fail("torch.utils.checkpoint.checkpoint's options are not constants")
    if not all(isinstance(a, TensorVar) for a in operands):
        frame.fail("torch.utils.checkpoint.checkpoint of arguments that are not all tensors")
    tensors = [a for a in operands if isinstance(a, TensorVar)]
    sub = speculate(frame, fn, [t.fake for t in tensors], "the function given to torch.utils.checkpoint")
    lifted_fakes = [node.meta["val"] for node in sub.lifted]
    node_args = (graph_attr(frame, sub.module, "checkpointed"), *(t.node for t in tensors), *sub.lifted)
    fake_args = (sub.module, *(t.fake for t in tensors), *lifted_fakes)
    result = emit(frame, tag_activation_checkpoint, node_args, fake_args, "torch.utils.checkpoint")
    items = result.items if isinstance(result, TupleVar) else [result]
    return rebuild(sub.template, list(items))


__all__: list[str] = []
