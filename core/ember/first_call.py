"""The first call of a compiled graph checks what the real kernels returned against the capture.

Capture and the AOT backends plan from fake tensors: output shapes, the tangents a backward is
traced for, the buffers it allocates, all come from torch's fake (meta) kernels. When one of
those kernels disagrees with the real op (torch 2.11's ``linalg_vector_norm`` over a size-1 dim
with ``keepdim=False`` keeps the dim), the forward values are right (real kernels) but the
backward, traced for the fake shapes, returns wrong gradients, silently. The first call of each
compiled graph therefore compares every tensor output's dtype and concrete sizes with the
capture's fake value; on a mismatch the graph runs eagerly from then on, with one warning naming
the output, and the call that found it is run again eagerly when the graph mutates nothing (its
results otherwise stand: their values come from the real kernels).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .settle import Settling
from .tracebacks import pass_through


def _expected_outputs(gm: torch.fx.GraphModule) -> list[Any]:
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    return [a.meta.get("val") if isinstance(a, torch.fx.Node) else None
            for a in pytree.tree_leaves(out.args[0])]


def _mismatch(expected: list[Any], produced: Any) -> str | None:
    """Why the real outputs differ from the fake ones, or None."""
    for i, (fake, real) in enumerate(zip(expected, pytree.tree_leaves(produced))):
        if not isinstance(fake, torch.Tensor) or not isinstance(real, torch.Tensor):
            continue
        same_sizes = fake.dim() == real.dim() and all(
            not isinstance(f, int) or f == r for f, r in zip(fake.shape, real.shape))
        if not same_sizes or fake.dtype != real.dtype:
            return (f"output {i} of the graph is {tuple(real.shape)} {real.dtype} where torch's fake "
                    f"kernels predicted {tuple(fake.shape)} {fake.dtype}, so the plan made from them is wrong")
    return None


def _mutates(gm: torch.fx.GraphModule) -> bool:
    """Whether the graph may write into a tensor (an in-place op), conservatively."""
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
            if name.endswith("_") and not name.endswith("__") or "out" in node.kwargs:
                return True
    return False


def check_first_call(compiled: Callable, gm: torch.fx.GraphModule, backend: str) -> Callable:
    """``compiled``, whose first call is checked against ``gm``'s fake outputs (module docstring)."""
    if compiled is gm.forward:  # the graph's own ops: nothing was planned from fakes
        return compiled
    expected = _expected_outputs(gm)
    if not any(isinstance(v, torch.Tensor) for v in expected):
        return compiled
    target = compiled
    checked = False
    holders = Settling()

    def run(*inputs: Any) -> Any:
        nonlocal target, checked
        if checked:
            return target(*inputs)
        result = target(*inputs)
        checked = True
        why = _mismatch(expected, result)
        if why is None:
            holders.done(target)
            return result
        target = gm.forward
        holders.done(target)
        warnings.warn(f"ember: backend {backend!r}: {why}; this graph runs eagerly from now on",
                      stacklevel=3)
        return result if _mutates(gm) else gm(*inputs)

    run.settle = holders.add  # type: ignore[attr-defined]  # after the check: the target itself
    return run


pass_through(check_first_call)  # its wrapper's frame is ember's, not the user's
