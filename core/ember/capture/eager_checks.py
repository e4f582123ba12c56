"""Argument checks that eager kernels make and torch's fake (meta) kernels leave out.

Capture runs each torch call on fake tensors to learn its result; an error there breaks the
graph, so that the call runs eagerly and raises the real error where the program would. Some of
torch's meta kernels accept arguments the real kernel refuses: ``x - True`` or ``t.bool() - x``
(the C++ ``sub_check``; the meta kernel, ``torch._refs.sub``, refuses only two bool tensors),
``x & 1`` on a float tensor (the CPU and CUDA kernels have no floating-point version). Without
this module the graph would compute what eager refuses. :class:`CheckedFakeTensorMode` repeats
these checks at the aten level, where Python scalars still have their own type, with eager's
messages.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

aten = torch.ops.aten


def _is_bool(value: Any) -> bool:
    return value.dtype == torch.bool if isinstance(value, torch.Tensor) else isinstance(value, bool)


def _sub_check(a: Any, b: Any, *rest: Any, **kwargs: Any) -> None:
    """``aten::sub`` / ``rsub``: no bool operand (``native::sub_check``)."""
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _integral_check(name: str) -> Callable[..., None]:
    """Bitwise ops: every operand integral or bool (the kernels have no other dtype)."""
    def check(a: Any, b: Any, *rest: Any, **kwargs: Any) -> None:
        for value in (a, b):
            floating = (value.dtype.is_floating_point or value.dtype.is_complex
                        if isinstance(value, torch.Tensor) else isinstance(value, (float, complex)))
            if floating:
                kind = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
                raise RuntimeError(f'"{name}" is not implemented for {kind} operands')
    return check


#: aten overload packet -> check of its arguments, raising eager's error.
CHECKS: dict[Any, Callable[..., None]] = {
    aten.sub: _sub_check, aten.sub_: _sub_check, aten.rsub: _sub_check,
    **{packet: _integral_check(packet.__name__.rstrip("_"))
       for packet in (aten.bitwise_and, aten.bitwise_and_, aten.bitwise_or, aten.bitwise_or_,
                      aten.bitwise_xor, aten.bitwise_xor_)},
}


class CheckedFakeTensorMode(FakeTensorMode):
    """A ``FakeTensorMode`` that raises, before computing a fake result, where eager would."""

    def dispatch(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                 kwargs: Mapping[str, Any] | None = None) -> Any:
        check = CHECKS.get(func.overloadpacket) if hasattr(func, "overloadpacket") else None
        if check is not None and len(args) >= 2:
            check(*args, **(kwargs or {}))
        return super().dispatch(func, types, args, kwargs)
