"""``torch._foreach_*`` ops as one op per tensor, so that the inductor fuses each tensor's chain.

An optimizer step (``foreach=True``, torch's default) is a handful of foreach ops, each a pass over
every parameter. Run as aten kernels in a compiled graph, each pass reads and writes all the state
(and, functionalized, one more copy per in-place op): AdamW on the CPU took 2-3x eager's time.
Split into per-tensor ops, one parameter's update (``exp_avg``, ``exp_avg_sq``, the parameter)
becomes one fused loop. The table is made from the ops' schemas: a ``Tensor[]`` or ``Scalar[]``
argument is taken item by item, any other argument is passed to every item's op. Reductions
(``_foreach_norm``, ``_foreach_max``, ``_foreach_powsum``) and ``_foreach_mm`` stay aten kernels.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

aten = torch.ops.aten

KEPT = ("norm", "max", "powsum", "mm")  # reductions and products: their own kernels
# per-item op where the foreach op's own name does not give it; addcmul/addcdiv with a tensor
# of scalars take one element of it per item, which aten's Scalar ``value`` cannot
ITEM_OPS: dict[str, Callable[..., Any]] = {
    "zero": aten.zeros_like.default,
    "addcmul.Tensor": lambda x, a, b, s: x + s * (a * b),
    "addcdiv.Tensor": lambda x, a, b, s: x + s * (a / b),
}


def _item(name: str, overload: str) -> Callable[..., Any]:
    return ITEM_OPS.get(f"{name}.{overload}") or ITEM_OPS.get(name) or getattr(aten, name)


def _item_arguments(item_op: Callable[..., Any]) -> tuple[int, list[str]]:
    """How many arguments the per-item op takes by position, and the names of its keyword-only
    ones (``addcmul``'s ``value``, ``add``'s ``alpha``), from its first overload's schema."""
    if not isinstance(item_op, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return 99, []
    overload = item_op if isinstance(item_op, torch._ops.OpOverload) else getattr(item_op, item_op.overloads()[0])
    arguments = overload._schema.arguments
    return sum(not a.kwarg_only for a in arguments), [a.name for a in arguments if a.kwarg_only]


def _decomposition(op: torch._ops.OpOverload, item_op: Callable[..., Any], tensor_scalars: bool) -> Callable:
    arguments = op._schema.arguments
    listed = [str(a.type) in ("List[Tensor]", "List[number]") for a in arguments]
    if tensor_scalars:  # a tensor of one scalar per item
        listed[-1] = True
    positional, keywords = _item_arguments(item_op)

    def split(*args: Any, **kwargs: Any) -> list[Any]:
        values = list(args) + [kwargs.get(a.name, a.default_value) for a in arguments[len(args):]]
        count = len(next(v for v, is_list in zip(values, listed) if is_list))
        out = []
        for i in range(count):
            items = [v[i] if is_list else v for v, is_list in zip(values, listed)]
            out.append(item_op(*items[:positional], **dict(zip(keywords, items[positional:]))))
        return out

    return split


def foreach_decompositions() -> dict[Any, Callable]:
    """Every functional ``aten._foreach_*`` overload but the kept ones -> its per-tensor form."""
    table: dict[Any, Callable] = {}
    for full in torch._C._dispatch_get_all_op_names():
        if not full.startswith("aten::_foreach_"):
            continue
        packet_name, _, overload = full[len("aten::"):].partition(".")
        name = packet_name[len("_foreach_"):]
        if name.endswith("_") or overload.endswith("out") or name in KEPT:
            continue
        op = getattr(getattr(aten, packet_name), overload or "default")
        if not hasattr(aten, name) and name not in ITEM_OPS:
            continue
        table[op] = _decomposition(op, _item(name, overload or "default"),
                                   tensor_scalars=f"{name}.{overload}" in ITEM_OPS)
    return table


__all__ = ["foreach_decompositions"]
