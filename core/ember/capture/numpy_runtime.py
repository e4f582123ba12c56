"""What graph nodes call to run numpy code on tensors: numpy's functions, array methods, attributes
and operators computed by ``torch._numpy`` (torch's numpy written in torch ops), so a backend
traces them into aten ops like any other torch code.

An array lives in the graph as the tensor holding its data; each function here wraps its tensor
arguments as ``torch._numpy`` arrays, calls, and hands back tensors. Names (``"linalg.norm"``,
``"sum"``, ``"add"``) rather than functions are the node arguments, so the graph's code prints.
"""
from __future__ import annotations

import contextlib
import operator
from typing import Any, Iterator

import torch
import torch._numpy as tnp
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map, tree_map_only


class _ExplicitFloat(TorchDispatchMode):
    """An op of integer (or bool) tensors whose floating result takes torch's default dtype
    (``int_array / 68``, ``sqrt`` of ints) computes on its inputs cast to that dtype, so that the
    dtype is written in the traced graph rather than read from the default when it runs."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        tensors = [a for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        if isinstance(out, torch.Tensor) and out.dtype.is_floating_point and tensors and not any(
                t.dtype.is_floating_point or t.dtype.is_complex for t in tensors):
            cast = tree_map_only(torch.Tensor, lambda t: t.to(out.dtype), (args, kwargs))
            out = func(*cast[0], **cast[1])
        return out


@contextlib.contextmanager
def _numpy_defaults() -> Iterator[None]:
    """numpy's default float (float64) for what torch would make in its own default dtype:
    ``int_array / 68`` is float64 in numpy, float32 through torch._numpy alone."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with _ExplicitFloat():
            yield
    finally:
        torch.set_default_dtype(before)


def _arrays(value: Any) -> Any:
    return tree_map_only(torch.Tensor, tnp.ndarray, value)


def _tensors(value: Any) -> Any:
    return tree_map(lambda v: v.tensor if isinstance(v, tnp.ndarray) else v, value)


def tnp_function(path: str) -> Any:
    """``torch._numpy``'s function of numpy's ``path`` (``"sum"``, ``"linalg.norm"``), or None."""
    owner: Any = tnp
    for part in path.split("."):
        owner = getattr(owner, part, None)
    return owner if callable(owner) else None


def numpy_function(path: str, *args: Any, **kwargs: Any) -> Any:
    """numpy's ``path`` function of ``args`` (arrays as tensors)."""
    with _numpy_defaults():
        return _tensors(tnp_function(path)(*args, **kwargs))


def numpy_method(name: str, array: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    """``array.name(*args, **kwargs)``, ``array`` a numpy array's tensor."""
    with _numpy_defaults():
        return _tensors(getattr(tnp.ndarray(array), name)(*_arrays(args), **_arrays(kwargs)))


def numpy_attr(name: str, array: torch.Tensor) -> Any:
    """``array.name`` (a view: ``T``, ``real``, ``imag``)."""
    return _tensors(getattr(tnp.ndarray(array), name))


def numpy_operator(name: str, left: Any, right: Any) -> Any:
    """``operator.name(left, right)`` with numpy's semantics (each tensor an array)."""
    with _numpy_defaults():
        return _tensors(getattr(operator, name)(*_arrays((left, right))))


def to_numpy(tensor: torch.Tensor) -> Any:
    """The numpy array a graph output stands for, sharing its memory."""
    return tensor.numpy(force=True)


def array_tensor(array: Any) -> torch.Tensor | None:
    """``torch.from_numpy(array)``, or None for an array torch cannot share (negative strides, a
    dtype torch has not) or must not write (read-only: numpy refuses ``a += 1`` on it): a guard on
    the tensor then fails rather than raising, and capture folds such an array instead."""
    if not array.flags.writeable:
        return None
    try:
        return torch.from_numpy(array)
    except (TypeError, ValueError, RuntimeError):
        return None


__all__ = ["array_tensor", "numpy_attr", "numpy_function", "numpy_method", "numpy_operator", "tnp_function",
           "to_numpy"]
