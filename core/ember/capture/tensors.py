"""Tensors in captured code (:class:`~.values.TensorVar`): their attributes, methods, iteration,
``len``, truth and ``.grad`` stores.

Metadata (``shape``, ``dtype``...) is read from the fake tensor (a dynamic size through the
graph); views (``T``, ``real``...) and method calls become graph nodes; ``p.grad`` of a graph
input is read as it is at each call, and so is a Python attribute set on an input tensor (its
presence or absence guarded). Iteration unbinds the first dimension; the truth of a
tensor depends on its data, so it breaks the graph.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from . import numpy_arrays, scalar_tensors, unbacked
from .builder import wrap
from .dispatch import handles_attr, handles_call, handles_iter, handles_len, handles_store, handles_truth
from .exceptions import throw
from .sources import AttrSource
from .symbolic import constant_of, has_symbolic
from .torch_ops import GRAPH_BREAK_CALLS, UNSUPPORTED_TENSOR_ATTRS, UNSUPPORTED_TENSOR_METHODS
from .values import ConstVar, TensorVar, Var

if TYPE_CHECKING:
    from .frame import Frame

_TENSOR_METADATA = {
    "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_cpu", "is_leaf", "layout",
    "is_sparse", "is_quantized", "is_meta", "is_mps", "is_nested", "itemsize", "nbytes",
    "is_mkldnn", "is_complex_", "names",
}
_TENSOR_VIEW_ATTRS = {"T", "mT", "H", "mH", "real", "imag"}


class TensorMethod(Var):
    """``tensor.method`` before it is called."""

    def __init__(self, tensor: TensorVar, name: str) -> None:
        self.tensor = tensor
        self.name = name


@handles_call(TensorMethod)
def _call_tensor_method(frame: "Frame", fn: TensorMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if fn.name in GRAPH_BREAK_CALLS:
        frame.fail(f"Tensor.{fn.name}() runs autograd's engine (graph break)")
    if fn.name == "numpy":
        return numpy_arrays.from_tensor(frame, fn.tensor, args, kwargs)
    if fn.name in UNSUPPORTED_TENSOR_METHODS and not unbacked.captures(fn.name):
        frame.fail(f"Tensor.{fn.name}() needs the tensor's data (graph break)")
    if fn.name == "tolist" and unbacked.captures(fn.name) and not args and not kwargs:
        return unbacked.tolist(frame, fn.tensor)
    if fn.name.endswith("_") and not fn.name.endswith("__"):
        refuse_hidden_mutation(frame, fn.tensor, f"Tensor.{fn.name}")
    rewritten = scalar_tensors.rewrite(frame, fn.name, fn.tensor, args, kwargs)
    if rewritten is not None:
        return rewritten
    return frame.state.graph.call("call_method", fn.name, (fn.tensor, *args), kwargs)


def refuse_hidden_mutation(frame: "Frame", var: Var, what: str) -> None:
    """An in-place change of the storage of an input that requires grad, read as ``p.data`` (an
    EMA's ``p.data.mul_(0.9)``), is hidden from autograd: no graph that needs a backward can take
    it (ember_aot would run the whole graph eagerly), so the graph breaks at the change instead."""
    if isinstance(var, TensorVar) and var.fake.untyped_storage()._cdata in _hidden(frame):
        frame.fail(f"{what} changes a tensor that requires grad through .data (hidden from autograd)")


def _hidden(frame: "Frame") -> set[int]:
    """The storages read through ``.data`` of the graph being built (a subgraph keeps its own)."""
    graph = frame.state.graph
    if not hasattr(graph, "hidden_storages"):
        graph.hidden_storages = set()
    return graph.hidden_storages


def input_of(frame: "Frame", obj: Var) -> "tuple[Any, torch.Tensor] | None":
    """(source, tensor) of the graph input ``obj`` stands for (after in-place ops on it too)."""
    if not isinstance(obj, TensorVar):
        return None
    for source, node, tensor in frame.state.graph.inputs:
        if node is obj.node or node.meta.get("example_value") is obj.fake:
            return source, tensor
    return None


def _input_grad(frame: "Frame", source: Any, tensor: torch.Tensor) -> Var:
    """``p.grad`` of a tensor the graph takes as input (a parameter after ``backward``): the
    gradient is read as it is at each call, so it is an input too (or None, guarded); a
    gradient assigned earlier in the capture is read back as assigned."""
    stored = frame.state.side_effects.lookup_attr(tensor, "grad")
    if stored is not None:
        return stored
    return wrap(frame.state, tensor.grad, AttrSource(source, "grad"))


@handles_attr(TensorVar)
def _tensor_attr(frame: "Frame", obj: TensorVar, name: str) -> Var:
    found = input_of(frame, obj) if name == "grad" else None
    if found is not None:
        return _input_grad(frame, *found)
    if name == "data":  # the same storage, outside autograd: a detached alias, as torch.compile reads it
        if obj.fake.requires_grad and input_of(frame, obj) is not None:
            _hidden(frame).add(obj.fake.untyped_storage()._cdata)
        return frame.state.graph.call("call_method", "detach", (obj,), {})
    if name in UNSUPPORTED_TENSOR_ATTRS:
        frame.fail(f"Tensor.{name} is not supported in captured code")
    if name in _TENSOR_METADATA:
        value = getattr(obj.fake, name)
        if name == "shape" and has_symbolic(value):  # a dynamic size: computed by the graph
            return frame.state.graph.call("call_method", "size", (obj,), {})
        if has_symbolic(value):  # nbytes of a dynamic tensor: specialised (and guarded)
            value = int(value)
        return ConstVar(constant_of(value))
    if name in _TENSOR_VIEW_ATTRS:
        import operator  # noqa: F401  (getattr node)

        return frame.state.graph.call("call_function", getattr, (obj, ConstVar(name)), {})
    # Tensor.backward, item, tolist and friends become a TensorMethod too: the break happens at
    # the call, which then runs in Python (a break at the attribute left the bound method for a
    # resume function whose call broke again: two breaks for one ``.item()``)
    if not hasattr(obj.cls, name):
        return instance_attr(frame, obj, name)
    return TensorMethod(obj, name)


def instance_attr(frame: "Frame", obj: TensorVar, name: str) -> Var:
    """A Python attribute of the tensor object itself (``x.tag = 1``, HF's ``param._is_hf_initialized``):
    read from an input through its source (its absence guarded too); a tensor the graph made has none."""
    found = input_of(frame, obj)
    if found is not None:
        source, tensor = found
        own = getattr(tensor, "__dict__", {})
        if name in own:
            return wrap(frame.state, own[name], AttrSource(source, name))
        frame.state.guards.lacks(source, name)
    throw(AttributeError(f"{obj.cls.__name__!r} object has no attribute {name!r}"))
    raise AssertionError


@handles_store(TensorVar)
def _store_tensor_attr(frame: "Frame", obj: TensorVar, name: str, value: Any, default: bool) -> None:
    found = input_of(frame, obj) if name == "grad" else None
    if found is not None and (isinstance(value, TensorVar) or (isinstance(value, ConstVar) and value.value is None)):
        source, tensor = found  # replayed on the input itself (zero_grad's ``p.grad = None``)
        frame.state.side_effects.store_attr(ConstVar(tensor, source), tensor, name, value)
        return
    if name == "data" and value is obj:  # ``p.data = p``: Module.to/_apply of a tensor already converted
        return
    if name == "requires_grad" and obj.node.op != "placeholder" and isinstance(value, ConstVar):
        # a tensor made in the graph: ``requires_grad_`` there (an input's flag changes at a break)
        frame.state.graph.call("call_method", "requires_grad_", (obj, value), {})
        return
    frame.fail(f"assignment to attribute {name!r} of a {type(obj).__name__}")


@handles_iter(TensorVar)
def _iterate_tensor(frame: "Frame", var: TensorVar) -> list[Var]:
    if var.fake.dim() == 0:
        frame.fail("iteration over a 0-d tensor")
    result = frame.state.graph.call("call_method", "unbind", (var, ConstVar(0)), {})
    return list(result.items)


@handles_len(TensorVar)
def _tensor_len(frame: "Frame", var: TensorVar) -> Var:
    if var.fake.dim() == 0:
        frame.fail("len() of a 0-d tensor")
    return frame.state.graph.call("call_method", "size", (var, ConstVar(0)), {})


@handles_truth(TensorVar)
def _tensor_truth(frame: "Frame", var: TensorVar) -> bool:
    frame.fail("data-dependent branch: the condition is a tensor's value (e.g. `if x.sum() < 0:`)")
    raise AssertionError


__all__ = ["TensorMethod", "input_of", "instance_attr"]
