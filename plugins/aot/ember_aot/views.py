"""Outputs that are views, as autograd sees them in eager.

- A tensor the compiled forward returns may be a view of one of its own temporaries (``y.t()``,
  ``y[0]``, the inductor's ``as_strided`` of a buffer). Returned as it is from the
  ``autograd.Function``, autograd refuses an in-place op on it ("Output 0 of AOTFunction is a
  view and is being modified inplace"), where eager's view of a temporary takes one: wav2vec2's
  ``hidden_states[mask_time_indices] = ...`` on such an output crashed its training step.
  :func:`not_a_view` hands the Function the same data as a tensor of its own; the analysis has
  made sure nothing the caller sees aliases it (aliased outputs are regenerated outside).
- Outputs one ``unbind``/``split``/``chunk`` call made are, for autograd, the outputs of one node
  that returns several views: eager refuses an in-place op on any of them. :class:`MultiView`
  regenerates them from their source in one call of a Function returning several views, which
  autograd treats the same way; its backward adds their gradients into the source's.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

Layout = tuple[tuple[int, ...], tuple[int, ...], int]  # size, stride, offset from the source's


def not_a_view(t: Any) -> Any:
    """``t``, or its data as a tensor that is no view (sharing its version counter) if it is one."""
    return t.detach() if isinstance(t, torch.Tensor) and t._is_view() else t


class MultiView(torch.autograd.Function):
    """Views of ``source`` at ``layouts``, returned together (see the module docstring)."""

    @staticmethod
    def forward(ctx, source: torch.Tensor, layouts: Sequence[Layout]) -> tuple:  # type: ignore[override]
        ctx.layouts = layouts
        ctx.source = (source.size(), source.stride(), source.dtype, source.device)
        base = source.storage_offset()
        return tuple(source.as_strided(size, stride, base + offset) for size, stride, offset in layouts)

    @staticmethod
    def backward(ctx, *grads: torch.Tensor | None) -> tuple:  # type: ignore[override]
        size, stride, dtype, device = ctx.source
        grad = torch.empty_strided(size, stride, dtype=dtype, device=device).zero_()
        for (vsize, vstride, offset), g in zip(ctx.layouts, grads):
            if g is not None:
                grad.as_strided(vsize, vstride, offset).add_(g)
        return grad, None
