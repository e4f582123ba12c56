"""User ``torch.autograd.Function``s called from captured code (BLOOM's ``GeLUFunction.apply``).

``MyFunction.apply(...)`` becomes one node of the graph that calls ``apply`` itself: the backends
run the user's ``forward``, and autograd calls the user's ``backward`` for the gradient (the AOT
joint trace traces that ``backward``), never a derivative of ``forward``: a straight-through
estimator keeps its gradient. Where no gradient is recorded and a functorch transform runs the
graph (AOT's functionalization of an inference graph), a Function without ``setup_context``
cannot be applied, so its ``forward`` runs directly, as ``apply`` would run it.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch.autograd.function import FunctionCtx, _is_setup_context_defined
from torch.utils._pytree import tree_leaves

from .values import Var

if TYPE_CHECKING:
    from .frame import Frame

#: what ``MyFunction.apply`` (a classmethod) resolves to before it is bound
FUNCTION_APPLY = torch.autograd.Function.apply.__func__

_APPLIERS: "weakref.WeakKeyDictionary[type, Callable[..., Any]]" = weakref.WeakKeyDictionary()


def apply(frame: "Frame", cls: Any, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``cls.apply(*args, **kwargs)`` as a node of the graph."""
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        frame.fail(f"torch.autograd.Function.apply on a {type(cls).__name__}")
    return frame.state.graph.call("call_function", applier(cls), tuple(args), kwargs)


def applier(cls: type) -> Callable[..., Any]:
    """``cls.apply`` as a function of its own, one per class (fx would write a bound classmethod
    of torch's module as ``torch.autograd.function.apply``)."""
    found = _APPLIERS.get(cls)
    if found is not None:
        return found

    def run(*args: Any, **kwargs: Any) -> Any:
        if torch._C._are_functorch_transforms_active() and not _records_gradient(args, kwargs) \
                and not _is_setup_context_defined(cls.setup_context):
            return cls.forward(FunctionCtx(), *args, **kwargs)
        return cls.apply(*args, **kwargs)

    run.__name__ = run.__qualname__ = f"{cls.__name__}_apply"
    _APPLIERS[cls] = run
    return run


def _records_gradient(args: tuple, kwargs: dict) -> bool:
    return torch.is_grad_enabled() and any(
        isinstance(leaf, torch.Tensor) and leaf.requires_grad for leaf in tree_leaves((args, kwargs)))


__all__ = ["FUNCTION_APPLY", "applier", "apply"]
