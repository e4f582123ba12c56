"""What ``ember.aot_compile`` packages: one graph of a call, its weights, and how its outputs rebuild the result.

The call is captured as ``ember.export`` captures it (one graph, a break is an error), under
no_grad. Each graph input is either a tensor argument of the call or a weight (a parameter,
buffer or other tensor the function read), kept by a name made from its source. The result's
structure comes from running the graph once and the capture's own tail code on its outputs:
the result's leaves (``torch.utils._pytree``) are graph outputs, found by identity, or plain
constants. What the tail does besides rebuilding the result (e.g. attributes a model sets on
itself) is not part of the package.
"""
from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any, Callable

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .capture import capture
from .codegen import make_binder, make_runner
from .compiled import format_unsupported
from .errors import Unsupported
from .export import call_target

#: Leaves of a result that a package keeps as constants.
_CONSTANTS = (bool, int, float, str, type(None))


@dataclasses.dataclass
class Captured:
    gm: torch.fx.GraphModule
    example_inputs: list[torch.Tensor]
    inputs: list[tuple[str, str]]  # per graph input: ("arg", argument name) or ("weight", name)
    weights: dict[str, torch.Tensor]
    arg_names: list[str]  # the call's tensor arguments: positional ones, then keywords
    out_spec: pytree.TreeSpec
    out_leaves: list[dict[str, Any]]  # per leaf: {"output": graph output index} or {"constant": v}


def capture_call(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Captured:
    """Capture ``fn(*args, **kwargs)`` (tensors only) as one inference graph (see module docstring)."""
    for name, value in [*enumerate(args), *kwargs.items()]:
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"ember.aot_compile takes tensor arguments only; argument {name} is "
                            f"{type(value).__name__}")
    func, bound = call_target(fn)
    L = make_binder(func)(*bound, *args, **kwargs)
    arg_names = _positional_names(fn, len(args)) + list(kwargs)
    by_id = {id(value): name for name, value in reversed(list(zip(arg_names, [*args, *kwargs.values()])))}
    with torch.no_grad():
        try:
            cap = capture(func, L, allow_breaks=False)
        except Unsupported as exc:
            raise Unsupported(f"ember.aot_compile needs a single graph, but capture broke:\n"
                              f"{format_unsupported(exc)}") from exc
        if cap.graph_module is None:
            raise Unsupported("ember.aot_compile: the function does no tensor work")
        inputs, weights = _classify(cap.input_sources, cap.example_inputs, by_id, _state_names(fn))
        outputs = cap.graph_module(*cap.example_inputs)
        runner = make_runner(lambda *_: outputs, cap.tail, dict(cap.consts.values), func.__code__)
        result = runner(L, cap.example_inputs)
    leaves, spec = pytree.tree_flatten(result)
    return Captured(cap.graph_module, list(cap.example_inputs), inputs, weights, arg_names, spec,
                    [_leaf(leaf, outputs) for leaf in leaves])


def _state_names(fn: Any) -> dict[int, str]:
    """A module's parameters and buffers by id: their ``state_dict`` names."""
    if not isinstance(fn, torch.nn.Module):
        return {}
    named = [*fn.named_parameters(remove_duplicate=False), *fn.named_buffers(remove_duplicate=False)]
    return {id(t): name for name, t in reversed(named)}


def _positional_names(fn: Any, count: int) -> list[str]:
    """Names for the first ``count`` positional arguments: the signature's (seen through
    ``functools.wraps``), else ``arg0``, ``arg1``..."""
    try:
        params = list(inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:count] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names if len(names) == count else [f"arg{i}" for i in range(count)]


def _classify(sources: list, examples: list, args_by_id: dict[int, str],
              state_names: dict[int, str]) -> tuple[list, dict[str, torch.Tensor]]:
    """Per graph input ("arg", name) for the call's tensor arguments (found by identity) or
    ("weight", name), and the weights by name: a module's own by their ``state_dict`` names,
    other tensors by their sources."""
    inputs, weights = [], {}
    for source, tensor in zip(sources, examples):
        if not isinstance(tensor, torch.Tensor):
            raise Unsupported(f"ember.aot_compile: graph input {source.describe()} is not a tensor")
        if id(tensor) in args_by_id:
            inputs.append(("arg", args_by_id[id(tensor)]))
            continue
        name = state_names.get(id(tensor)) or re.sub(r"\W+", "_", source.describe()).strip("_")
        weights[name] = tensor.detach()
        inputs.append(("weight", name))
    return inputs, weights


def _leaf(leaf: Any, outputs: tuple) -> dict[str, Any]:
    if isinstance(leaf, torch.Tensor):
        index = next((i for i, out in enumerate(outputs) if out is leaf), None)
        if index is None:
            raise Unsupported("ember.aot_compile: the result holds a tensor that the graph does not compute "
                              "(an input returned as it is)")
        return {"output": index}
    if not isinstance(leaf, _CONSTANTS):
        raise Unsupported(f"ember.aot_compile: the result holds a {type(leaf).__name__}, which a package "
                          "cannot keep")
    return {"constant": leaf}


__all__ = ["Captured", "capture_call"]
