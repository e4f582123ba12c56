"""Speculation: a callable run by the interpreter into a graph of its own (a higher-order op's body).

``torch.cond``'s branches, ``while_loop``'s condition and body, ``scan``'s combine function: each
is interpreted like any inlined call, but its torch calls go to a child graph whose placeholders
are the body's arguments. What the body reads from outside it (a tensor of the enclosing graph
through a closure, a parameter of a module) is *lifted*: it becomes one more placeholder of the
child graph, and the caller passes the outer value as an extra operand. New inputs of the
compiled function are added to the outermost graph, so they are lifted like any outer value.

A body that changes Python state outside itself (an attribute, a global, a captured list), that
breaks the graph, or that returns something other than tensors cannot be a subgraph: the
speculation is undone and the higher-order call is a graph break.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from ..errors import Unsupported
from .dispatch import call
from .graph import GraphBuilder
from .values import ConstVar, ListVar, TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


class SubgraphBuilder(GraphBuilder):
    """A graph builder sharing its parent's fake tensors, inputs and frames, with its own graph."""

    def __init__(self, parent: GraphBuilder) -> None:  # pylint: disable=super-init-not-called
        self.parent = parent
        self.graph = torch.fx.Graph()
        self.shape_env, self.fake_mode = parent.shape_env, parent.fake_mode
        self.inputs, self.symbolic_inputs = parent.inputs, parent.symbolic_inputs
        self._input_vars = parent._input_vars
        self._last_placeholder = None
        self._fake_vars = dict(parent._fake_vars)
        self.frames = parent.frames
        self.constants = {}

    def add_input(self, *args: Any, **kwargs: Any) -> TensorVar:
        return self.parent.add_input(*args, **kwargs)

    def add_symint_input(self, *args: Any, **kwargs: Any) -> Var:
        return self.parent.add_symint_input(*args, **kwargs)

    def argument(self, fake: torch.Tensor, name: str) -> TensorVar:
        """A placeholder standing for one argument of the body."""
        node = self._placeholder_named(name)
        node.meta["val"] = node.meta["example_value"] = fake
        return self._track(TensorVar(node, fake))

    def _placeholder_named(self, name: str) -> torch.fx.Node:
        where = (self.graph.inserting_after(self._last_placeholder) if self._last_placeholder is not None
                 else self.graph.inserting_before(next(iter(self.graph.nodes), None)))
        with where:
            node = self.graph.placeholder(name)
        self._last_placeholder = node
        return node


@dataclasses.dataclass
class Subgraph:
    """A speculated body: its graph module, the outer nodes it lifted (extra trailing arguments,
    in order), and its outputs' fake tensors."""

    module: torch.fx.GraphModule
    lifted: list[torch.fx.Node]
    outputs: list[torch.Tensor]
    #: what the body returned (its tensors are the outputs, in order): the structure to rebuild
    template: Var


def flat_tensors(frame: "Frame", var: Var, what: str) -> list[TensorVar]:
    """The tensors of a tuple/list (nested) of tensors, in order; anything else fails."""
    if isinstance(var, TensorVar):
        return [var]
    if isinstance(var, (TupleVar, ListVar)):
        return [t for item in var.items for t in flat_tensors(frame, item, what)]
    if isinstance(var, ConstVar) and var.value in ((), []):
        return []
    frame.fail(f"{what} holds a {type(var).__name__}, not only tensors")
    raise AssertionError


def speculate(frame: "Frame", fn: Var, fakes: list[torch.Tensor], what: str, pass_as: Any = None,
              single: bool = False, index_by_tensors: bool = False) -> Subgraph:
    """Run ``fn`` on fresh arguments with the fake tensors ``fakes`` into a child graph.
    ``pass_as(args)``: how the argument Vars are passed (default: positionally, one per fake);
    ``single``: the body returns one tensor, which the graph returns as itself (else a tuple);
    ``index_by_tensors``: see :attr:`GraphBuilder.index_by_tensors`."""
    state = frame.state
    parent = state.graph
    child = SubgraphBuilder(parent)
    child.index_by_tensors = index_by_tensors
    effects = state.side_effects.copy()
    state.graph = child
    try:
        args = [child.argument(f, f"arg{i}") for i, f in enumerate(fakes)]
        call_args = pass_as(args) if pass_as is not None else args
        result = call(frame, fn, call_args, {})
        outputs = flat_tensors(frame, result, f"the result of {what}")
        if _changed(effects, state.side_effects):
            frame.fail(f"{what} changes Python state outside itself")
        if single and not isinstance(result, TensorVar):
            frame.fail(f"{what} returns a {type(result).__name__}, not a tensor")
        child.graph.output(outputs[0].node if single else tuple(t.node for t in outputs))
        lifted = _lift(child)
    except Unsupported as exc:
        state.side_effects = effects
        _discard(child.graph)
        raise Unsupported(f"{what} cannot be captured as a subgraph: {exc}") from exc
    except BaseException:
        state.side_effects = effects
        _discard(child.graph)
        raise
    finally:
        state.graph = parent
    root = torch.nn.Module()
    for name, value in child.constants.items():
        setattr(root, name, value)
    module = torch.fx.GraphModule(root, child.graph, class_name="EmberSubgraph")
    return Subgraph(module, lifted, [t.fake for t in outputs], result)


def _changed(before: Any, after: Any) -> bool:
    return (before.attrs.keys() != after.attrs.keys() or before.globals.keys() != after.globals.keys()
            or before.containers.keys() != after.containers.keys()
            or any(after.attrs[k] is not v for k, v in before.attrs.items())
            or any(after.globals[k] is not v for k, v in before.globals.items()))


def _lift(child: SubgraphBuilder) -> list[torch.fx.Node]:
    """Replace every node of another graph that ``child``'s nodes use by a new placeholder."""
    graph = child.graph
    lifted: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in list(graph.nodes):
        for used in list(node.all_input_nodes):
            if used.graph is graph:
                continue
            inner = lifted.get(used)
            if inner is None:
                inner = child._placeholder_named(f"lifted_{used.name}")
                inner.meta.update({k: used.meta[k] for k in ("val", "example_value") if k in used.meta})
                lifted[used] = inner
            node.replace_input_with(used, inner)
    return list(lifted)


def _discard(graph: torch.fx.Graph) -> None:
    """Erase a failed speculation's nodes (they are users of outer nodes until then)."""
    for node in reversed(list(graph.nodes)):
        graph.erase_node(node)  # fx drops the node from its inputs' users


def graph_attr(frame: "Frame", module: torch.fx.GraphModule, stem: str) -> torch.fx.Node:
    """A ``get_attr`` node of the current graph reading ``module`` (kept as the graph's constant)."""
    graph = frame.state.graph
    name = f"{stem}_{len(graph.constants)}"
    graph.constants[name] = module
    return graph.graph.get_attr(name)


__all__ = ["Subgraph", "SubgraphBuilder", "flat_tensors", "graph_attr", "speculate"]
