"""Tensor methods given a 0-d tensor where they take a Python number, rewritten into tensor ops.

``param.addcdiv_(exp_avg, denom, value=-step_size)`` takes a number; under compilation the
optimizers pass a 0-d tensor (``_get_value`` keeps the ``step`` tensor instead of calling
``.item()``), which the kernel would turn into a number by reading the tensor's data. As
torch.compile does, these calls become the ops they stand for, with the 0-d tensor as an
operand: ``self.addcdiv_(a, b, value=v)`` is ``self.add_(a / b * v)``, ``self.add_(o, alpha=v)``
is ``self.add_(o * v)``. The foreach kernels take their scalars as one 1-d tensor
(``_stack_if_compiling``), which fake tensors cannot run: ``_foreach_addcdiv_(xs, as, bs, s)``
is ``_foreach_add_(xs, _foreach_mul(_foreach_div(as, bs), s.unbind()))``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .values import ConstVar, ListVar, TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame

#: method -> (keyword that takes a number, the op combining the two tensor operands or None)
_REWRITES = {
    "addcdiv": ("value", torch.div), "addcdiv_": ("value", torch.div),
    "addcmul": ("value", torch.mul), "addcmul_": ("value", torch.mul),
    "add": ("alpha", None), "add_": ("alpha", None), "sub": ("alpha", None), "sub_": ("alpha", None),
}


def rewrite(frame: "Frame", name: str, tensor: TensorVar, args: list[Var], kwargs: dict[str, Var]) -> Var | None:
    """The rewritten call when ``name`` got a tensor for its number argument, else None."""
    rule = _REWRITES.get(name)
    if rule is None or not isinstance(kwargs.get(rule[0]), TensorVar) or len(kwargs) != 1:
        return None
    keyword, combine = rule
    graph = frame.state.graph
    if combine is not None:
        if len(args) != 2:
            return None
        operand = graph.call("call_function", combine, (args[0], args[1]), {})
    elif len(args) == 1:
        operand = args[0]
    else:
        return None
    scaled = graph.call("call_function", torch.mul, (operand, kwargs[keyword]), {})
    method = "sub" if name.startswith("sub") else "add"
    return graph.call("call_method", method + ("_" if name.endswith("_") else ""), (tensor, scaled), {})


_FOREACH_REWRITES = {torch._foreach_addcdiv_: torch._foreach_div, torch._foreach_addcmul_: torch._foreach_mul}


def rewrite_function(frame: "Frame", fn: object, args: list[Var], kwargs: dict[str, Var]) -> Var | None:
    """The rewritten foreach call when its scalars came as a tensor, else None."""
    try:
        combine = _FOREACH_REWRITES.get(fn)
    except TypeError:  # unhashable
        return None
    if combine is None or kwargs or len(args) != 4 or not isinstance(args[3], TensorVar):
        return None
    graph = frame.state.graph
    operands = graph.call("call_function", combine, (args[1], args[2]), {})
    scalars = graph.call("call_method", "unbind", (args[3], ConstVar(0)), {})
    if not isinstance(scalars, TupleVar):
        return None
    scaled = graph.call("call_function", torch._foreach_mul, (operands, ListVar(list(scalars.items))), {})
    return graph.call("call_function", torch._foreach_add_, (args[0], scaled), {})


__all__ = ["rewrite", "rewrite_function"]
