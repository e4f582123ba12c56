"""``ember.explain``: what capture made of a function, for a user tuning graph breaks.

    out = ember.explain(fn)(*args, **kwargs)
    print(out)                     # graphs, breaks with reasons and source lines, ops, guards

The seed tutorials' older form ``ember.explain(fn, *args)`` returns the same object, which also
unpacks as ``explanation, out_guards, graphs, ops_per_graph, break_reasons, explanation_verbose``.

It also says what share of the call's tensor ops ran in graphs: every torch call that returns a
tensor is counted as it runs (a ``TorchFunctionMode``), inside a captured graph or outside one (in
Python between graphs, at graph breaks, in functions that fell back to eager); calls made while
ember captures (on fake tensors) and the ops autograd's engine runs for ``backward()`` are not
counted.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from . import compiled as compiled_mod
from .api import compile as ember_compile


@dataclasses.dataclass
class BreakReason:
    reason: str
    user_stack: list[tuple[str, int, str, str]]  # (file, line, function, source line), outermost first

    @property
    def location(self) -> str:
        if not self.user_stack:
            return "<unknown>"
        filename, line, _, _ = self.user_stack[-1]
        return f"{filename}:{line}"

    def __str__(self) -> str:
        lines = [self.reason]
        for filename, line, name, source in self.user_stack:
            lines.append(f'  File "{filename}", line {line}, in {name}')
            if source:
                lines.append(f"    {source}")
        return "\n".join(lines)


@dataclasses.dataclass
class ExplainOutput:
    graphs: list[torch.fx.GraphModule]
    graph_count: int
    graph_break_count: int
    break_reasons: list[BreakReason]
    ops_per_graph: list[list[Any]]
    out_guards: list[list[str]]
    compile_times: str
    fallbacks: list[BreakReason] = dataclasses.field(default_factory=list)
    ops_in_graphs: int = 0  # tensor ops run inside captured graphs during the call
    ops_outside_graphs: int = 0  # tensor ops run eagerly: between graphs, at breaks, in fallbacks

    @property
    def graph_op_share(self) -> float:
        """The share of the call's tensor ops that ran in graphs (1.0 for a call with none)."""
        total = self.ops_in_graphs + self.ops_outside_graphs
        return self.ops_in_graphs / total if total else 1.0

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {sum(len(ops) for ops in self.ops_per_graph)}",
                 f"Tensor Ops Run In Graphs: {self.graph_op_share:.0%} ({self.ops_in_graphs} in graphs, "
                 f"{self.ops_outside_graphs} eagerly)", "Break Reasons:"]
        for i, reason in enumerate(self.break_reasons, 1):
            lines.append(f"  Break Reason {i}:")
            lines.extend("    " + line for line in str(reason).splitlines())
        if self.fallbacks:
            lines.append("Ran eagerly (not captured):")
            for reason in self.fallbacks:
                lines.extend("    " + line for line in str(reason).splitlines())
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines.extend(f"    {_op_name(op)}" for op in ops)
        lines.append("Out Guards:")
        for i, guards in enumerate(self.out_guards, 1):
            lines.append(f"  Guards {i}:")
            lines.extend(f"    {g}" for g in guards)
        lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines)

    @property
    def explanation(self) -> str:
        return (f"ember produced {self.graph_count} graphs with {self.graph_break_count} graph breaks "
                f"and {sum(len(o) for o in self.ops_per_graph)} ops")

    def __iter__(self) -> Iterator[Any]:
        """The seed tutorials' 6-tuple: explanation, out_guards, graphs, ops_per_graph,
        break_reasons, explanation_verbose."""
        return iter((self.explanation, self.out_guards, self.graphs, self.ops_per_graph,
                     self.break_reasons, str(self)))


def _op_name(op: Any) -> str:
    return op if isinstance(op, str) else getattr(op, "__name__", repr(op))


class _OpCounter(TorchFunctionMode):
    """Counts the torch calls that return a tensor, in graphs (``graph_depth`` > 0) or not,
    except while ember captures."""

    def __init__(self) -> None:
        super().__init__()
        self.in_graphs = 0
        self.outside = 0
        self.graph_depth = 0
        self.capturing = 0

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if (not self.capturing and getattr(func, "__name__", "") != "__get__"
                and any(isinstance(leaf, torch.Tensor) for leaf in tree_leaves(out))):
            if self.graph_depth:
                self.in_graphs += 1
            else:
                self.outside += 1
        return out


def _run_explained(fn: Callable[..., Any], args: tuple, kwargs: dict) -> ExplainOutput:
    graphs: list[torch.fx.GraphModule] = []
    guards: list[list[str]] = []
    breaks: list[BreakReason] = []
    fallbacks: list[BreakReason] = []
    times: list[tuple[str, float]] = []

    def observe(event: str, details: dict) -> None:
        if event == "graph":
            graphs.append(details["graph"])
            guards.append(details["guards"])
        elif event == "break":
            breaks.append(BreakReason(details["reason"], details["user_stack"]))
        elif event == "fallback":
            fallbacks.append(BreakReason(details["reason"], details["user_stack"]))
        elif event == "compiled":
            times.append((details["function"], details["seconds"]))
        elif event == "capturing":
            counter.capturing += 1 if details["active"] else -1

    def record(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        def run_graph(*graph_args: Any) -> Any:
            counter.graph_depth += 1
            try:
                return gm.forward(*graph_args)
            finally:
                counter.graph_depth -= 1

        return run_graph

    counter = _OpCounter()
    compiled = ember_compile(fn, backend=record)
    compiled_mod.OBSERVERS.append(observe)
    try:
        with counter:
            compiled(*args, **kwargs)
    finally:
        compiled_mod.OBSERVERS.remove(observe)
    ops = [[n.target for n in g.graph.nodes if n.op in ("call_function", "call_method")] for g in graphs]
    return ExplainOutput(
        graphs=graphs,
        graph_count=len(graphs),
        graph_break_count=len(breaks),
        break_reasons=breaks,
        ops_per_graph=ops,
        out_guards=guards,
        compile_times=", ".join(f"{name}: {seconds:.4f} s" for name, seconds in times),
        fallbacks=fallbacks,
        ops_in_graphs=counter.in_graphs,
        ops_outside_graphs=counter.outside,
    )


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``explain(fn)(*args)`` (or ``explain(fn, *args)``): run once and report the captures."""
    if args or kwargs:
        return _run_explained(fn, args, kwargs)

    def run(*call_args: Any, **call_kwargs: Any) -> ExplainOutput:
        return _run_explained(fn, call_args, call_kwargs)

    return run
