"""Helpers for the onnxrt tests: build ember-style graphs (params lifted to inputs), compare."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.fx

from ember_onnxrt.backend import onnxrt


class _FunctionalLeaf:
    """``module(*args)`` with the module's parameters and buffers passed in as arguments."""

    def __init__(self, module: torch.nn.Module, n_args: int) -> None:
        self.module, self.n_args = module, n_args
        self.names = [n for n, _ in module.named_parameters()] + [n for n, _ in module.named_buffers()]
        self.__name__ = f"functional_{type(module).__name__}"

    def tensors(self) -> list[torch.Tensor]:
        return [t for _, t in self.module.named_parameters()] + [t for _, t in self.module.named_buffers()]

    def __call__(self, *args: Any) -> Any:
        inputs, state = args[: self.n_args], dict(zip(self.names, args[self.n_args:]))
        return torch.func.functional_call(self.module, state, inputs)


def lift_params(module: torch.nn.Module) -> tuple[torch.fx.GraphModule, list[torch.Tensor]]:
    """symbolic_trace ``module`` and lift its parameters and buffers to trailing placeholders,
    as ember's capture does. Leaf modules (Conv2d, BatchNorm2d, ...) become calls of a function
    taking their weights as arguments. Returns the graph and the tensors to pass after the
    user inputs."""
    gm = torch.fx.symbolic_trace(module)
    graph = gm.graph
    last = [n for n in graph.nodes if n.op == "placeholder"][-1]
    tensors: list[torch.Tensor] = []

    def lift(tensor: torch.Tensor, name: str) -> torch.fx.Node:
        nonlocal last
        with graph.inserting_after(last):
            last = graph.placeholder(name.replace(".", "_"))
        tensors.append(tensor)
        return last

    lifted: dict[str, torch.fx.Node] = {}
    for node in list(graph.nodes):
        if node.op == "get_attr":
            if node.target not in lifted:
                lifted[node.target] = lift(_fetch(module, node.target), node.target)
            node.replace_all_uses_with(lifted[node.target])
            graph.erase_node(node)
        elif node.op == "call_module":
            leaf = _FunctionalLeaf(module.get_submodule(node.target), len(node.args))
            weights = [lift(t, f"{node.target}_{i}") for i, t in enumerate(leaf.tensors())]
            with graph.inserting_before(node):
                call = graph.call_function(leaf, (*node.args, *weights))
            node.replace_all_uses_with(call)
            graph.erase_node(node)
    graph.lint()
    return torch.fx.GraphModule(torch.nn.Module(), graph), tensors


def _fetch(module: torch.nn.Module, target: str) -> torch.Tensor:
    value: Any = module
    for part in target.split("."):
        value = getattr(value, part)
    return value


def leaf_graph(fn: Callable[..., Any], n_inputs: int) -> torch.fx.GraphModule:
    """A graph of ``n_inputs`` placeholders and one call of ``fn`` (for code fx cannot trace,
    like transformers models: the backend traces through ``fn`` itself)."""
    graph = torch.fx.Graph()
    inputs = [graph.placeholder(f"arg{i}") for i in range(n_inputs)]
    graph.output(graph.call_function(fn, tuple(inputs)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def compile_fn(fn: Callable[..., Any] | torch.fx.GraphModule, args: Sequence[Any], **options: Any):
    gm = fn if isinstance(fn, torch.fx.GraphModule) else torch.fx.symbolic_trace(fn)
    return onnxrt(gm, list(args), options=options)


def assert_close(actual: Any, expected: Any, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)
        return
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e, rtol, atol)


def all_in_onnxruntime(compiled: Any) -> bool:
    """Whether every compiled signature ran entirely in onnxruntime sessions."""
    places = compiled.placements()
    return bool(places) and all(p.get("sessions") and not p["eager_ops"] and not p["failed_partitions"]
                                for p in places)


def check(fn: Callable[..., Any], *args: Any, rtol: float = 1e-4, atol: float = 1e-5,
          fully_onnx: bool = True, **options: Any):
    """Compile ``fn`` with onnxrt and compare with eager on ``args``; returns the compiled fn.
    With ``fully_onnx``, also require that no operator fell back to PyTorch."""
    compiled = compile_fn(fn, args, **options)
    with torch.no_grad():
        expected = fn(*args)
        assert_close(compiled(*args), expected, rtol, atol)
    if fully_onnx:
        assert all_in_onnxruntime(compiled), compiled.placements()
    return compiled
