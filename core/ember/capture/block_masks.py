"""Block masks of ``flex_attention`` made inside captured code: evaluated at capture time.

``create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE)`` depends only on its
arguments and on what the mask_mod reads. When the arguments are constants and the mask_mod,
speculated on scalar index fakes (:mod:`.subgraphs`), reads no tensor from outside (so its result
is a function of Python values the speculation guarded: its code, closure and globals), the mask
is made now, for real, and its tensors become constants of the graph: what torch.compile computes
in the graph on every call, computed once per compiled entry. A mask_mod that reads a tensor (a
document-id vector) makes the call a graph break. ``flex_attention`` called without a block mask
builds its one-block mask the same way (``_create_empty_block_mask``, from the query's device).
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import torch
from torch.nn.attention import flex_attention as flex_module

from . import objects
from .builtin_calls import handles
from .constants import NotConstant, python_value
from .subgraphs import speculate
from .values import ConstVar, TensorVar, Var

if TYPE_CHECKING:
    from .frame import Frame


def _as_var(frame: "Frame", mask: Any) -> Var:
    """A ``BlockMask`` built by captured code over ``mask``'s fields, its tensors read as constants."""
    graph = frame.state.graph
    fields: dict[str, Var] = {}
    for name in list(inspect.signature(flex_module.BlockMask.__init__).parameters)[1:]:
        field = getattr(mask, name)
        if isinstance(field, torch.Tensor):
            fields[name] = graph.wrap_result(graph.bind_constants(field), graph.fake_mode.from_tensor(field))
        else:
            fields[name] = ConstVar(field)
    return objects.construct(frame, flex_module.BlockMask, [], fields)


@handles(flex_module._create_empty_block_mask)
def _empty_block_mask(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    """The one-block mask of a call without one, made on the query's device (guarded with the query)."""
    query = args[0] if args else kwargs.get("query")
    if not isinstance(query, TensorVar):
        frame.fail("flex_attention's empty block mask for a query that is not a tensor")
    stub = torch.empty(0, device=query.fake.device)
    return _as_var(frame, flex_module._create_empty_block_mask(stub, stub))


@handles(flex_module.create_block_mask)
def _create_block_mask(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    try:
        bound = inspect.signature(flex_module.create_block_mask).bind(*args, **kwargs)
        values = {name: python_value(var) for name, var in bound.arguments.items()}
    except (TypeError, NotConstant):
        frame.fail("create_block_mask with arguments that are not constants")
    device = torch.device(values.get("device", "cuda"))
    with frame.state.graph.fake_mode:
        indices = [torch.empty((), dtype=torch.int32, device=device) for _ in range(4)]
    body = speculate(frame, bound.arguments["mask_mod"], indices, "create_block_mask's mask_mod", single=True,
                     index_by_tensors=True)
    if body.lifted:
        frame.fail("create_block_mask with a mask_mod that reads tensors (the mask depends on their values)")
    return _as_var(frame, flex_module.create_block_mask(**values))


__all__: list[str] = []
