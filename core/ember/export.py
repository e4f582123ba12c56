"""``ember.export(fn, *args)``: the single graph of a function, as a standalone GraphModule.

The returned module takes the same positional tensor arguments as ``fn`` (parameters and
buffers of modules it reads become attributes of the module) and returns what ``fn`` returns
when that is a tensor or a tuple/list of tensors. A graph break is an error naming it.
"""
from __future__ import annotations

import re
import types
from typing import Any, Callable

import torch
import torch.fx

from .capture import capture
from .capture.sources import LocalSource, Source
from .codegen import make_binder
from .compiled import format_unsupported
from .errors import Unsupported


def call_target(fn: Callable[..., Any]) -> tuple[types.FunctionType, tuple]:
    if isinstance(fn, torch.nn.Module):
        return type(fn).forward, (fn,)
    if isinstance(fn, types.MethodType):
        return fn.__func__, (fn.__self__,)
    if isinstance(fn, types.FunctionType):
        return fn, ()
    raise TypeError(f"ember.export expects a function or an nn.Module, got {type(fn).__name__}")


def export(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[torch.fx.GraphModule, list[str]]:
    """Capture ``fn`` on these arguments as one graph; returns ``(graph_module, guards)``."""
    func, bound = call_target(fn)
    L = make_binder(func)(*bound, *args, **kwargs)
    try:
        cap = capture(func, L, allow_breaks=False)
    except Unsupported as exc:
        raise Unsupported(f"ember.export needs a single graph, but capture broke:\n{format_unsupported(exc)}") from exc
    gm = cap.graph_module
    if gm is None:
        raise Unsupported("ember.export: the function does no tensor work")
    arg_names = list(L)[len(bound):]
    root = torch.nn.Module()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, source, tensor in zip(placeholders, cap.input_sources, cap.example_inputs):
        if isinstance(source, LocalSource) and source.name in arg_names:
            continue
        if _root_name(source) in arg_names:
            raise Unsupported(f"ember.export: graph input {source.describe()} is nested inside an argument; "
                              "pass tensors as direct arguments")
        name = re.sub(r"\W+", "_", source.describe()).strip("_")
        if isinstance(tensor, torch.nn.Parameter):
            root.register_parameter(name, tensor)
        else:
            root.register_buffer(name, tensor)
        with gm.graph.inserting_before(node):
            attr = gm.graph.create_node("get_attr", name)
        attr.meta = dict(node.meta)
        node.replace_all_uses_with(attr)
        gm.graph.erase_node(node)
    by_name = {s.name: n for n, s in zip(placeholders, cap.input_sources) if isinstance(s, LocalSource)}
    for name in arg_names:  # one placeholder per argument, in the function's order
        node = by_name.get(name)
        if node is None:
            with gm.graph.inserting_before(next(iter(gm.graph.nodes))):
                gm.graph.placeholder(name)
    _reorder_placeholders(gm.graph, arg_names, by_name)
    _fix_output(gm, cap.tail)
    graph = gm.graph
    graph.owning_module = None
    exported = torch.fx.GraphModule(root, graph, class_name="EmberExported")
    exported.graph.lint()
    return exported, cap.guards.describe()


def _root_name(source: Source) -> str | None:
    """The local variable a source chain starts from (None for globals and cells)."""
    while hasattr(source, "base"):
        source = source.base
    return source.name if isinstance(source, LocalSource) else None


def _reorder_placeholders(graph: torch.fx.Graph, names: list[str], by_name: dict[str, torch.fx.Node]) -> None:
    first = next(iter(graph.nodes))
    for name in names:
        node = by_name.get(name) or next(n for n in graph.nodes if n.op == "placeholder" and n.target == name)
        if node is not first:
            first.prepend(node)
        else:
            first = node.next
        first = node.next if node is first else first


def _fix_output(gm: torch.fx.GraphModule, tail: list[str]) -> None:
    """The graph returns a tuple of outputs; unwrap it when ``fn`` returned a single tensor."""
    if len(tail) != 2:
        raise Unsupported("ember.export: the function has side effects outside the graph")
    expr = "return " + tail[0].strip().removeprefix("___result = ")
    if re.fullmatch(r"return ___o\[0\]", expr):
        output = next(n for n in gm.graph.nodes if n.op == "output")
        output.args = (output.args[0][0],)
    elif not re.fullmatch(r"return \((___o\[\d+\], )*\)", expr):
        raise Unsupported(f"ember.export supports functions returning tensors or tuples of tensors ({expr})")
