"""Control-flow higher-order operators as one node of the graph: cond, while_loop, scan, map, associative_scan.

The user-facing functions (``torch.cond``, ``torch._higher_order_ops.scan``...) are plain Python
that, when compiling, flatten their arguments and call the operator itself
(``torch.ops.higher_order.cond``...); capture inlines them and meets that call. Each callable
argument is speculated into a subgraph (:mod:`.subgraphs`) on fake arguments shaped as the
operator passes them (``scan``'s combine function gets one slice of each ``xs``); the values the
bodies lift from outside become extra operands (cond's operands, the others' additional inputs),
and the call is recorded as one ``call_function`` node whose bodies are ``get_attr`` submodules,
as torch.compile records it. The backends run it as torch's operator: eagerly, or traced by
make_fx (torch's own proxy, fake, functionalization and autograd rules of each operator).

A table maps each operator to how its bodies are called; a body that cannot be a subgraph makes
the call a graph break.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.fx
from torch._higher_order_ops.associative_scan import associative_scan_op
from torch._higher_order_ops.cond import cond_op
from torch._higher_order_ops.invoke_subgraph import invoke_subgraph_placeholder
from torch._higher_order_ops.map import map_impl
from torch._higher_order_ops.scan import scan_op
from torch._higher_order_ops.while_loop import while_loop_op

from torch._subclasses.fake_tensor import FakeTensorMode

from ..errors import Unsupported
from .builtin_calls import handles
from .dispatch import call
from .eager_checks import CheckedFakeTensorMode
from .subgraphs import Subgraph, flat_tensors, graph_attr, speculate
from .values import ConstVar, ListVar, TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


def rebuild(template: Var, items: list[Var]) -> Var:
    """``template`` (a tensor or nested tuple/list of them) with its tensors replaced, in order, by ``items``."""
    queue = iter(items)

    def walk(var: Var) -> Var:
        if isinstance(var, TensorVar):
            return next(queue)
        if isinstance(var, TupleVar):
            return TupleVar([walk(v) for v in var.items], tuple_type=var.tuple_type)
        if isinstance(var, ListVar):
            return ListVar([walk(v) for v in var.items])
        return var

    return walk(template)


def _aligned(sub: Subgraph, n_args: int, lifted: list[torch.fx.Node]) -> torch.fx.GraphModule:
    """``sub``'s module taking its ``n_args`` arguments and then every node of ``lifted``, in that
    order (it lifted some of them itself, maybe in another order)."""
    old = sub.module.graph
    placeholders = [n for n in old.nodes if n.op == "placeholder"]
    own = dict(zip(sub.lifted, placeholders[n_args:]))
    graph = torch.fx.Graph()
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    for i, node in enumerate(placeholders[:n_args]):
        mapping[node] = graph.placeholder(node.name)
        mapping[node].meta = dict(node.meta)
    for i, outer in enumerate(lifted):
        new = graph.placeholder(f"lifted_{i}")
        new.meta.update({k: outer.meta[k] for k in ("val", "example_value") if k in outer.meta})
        if outer in own:
            mapping[own[outer]] = new
    out = graph.graph_copy(old, mapping)
    graph.output(out)
    return torch.fx.GraphModule(sub.module, graph, class_name="EmberSubgraph")


def _union(subs: list[Subgraph]) -> list[torch.fx.Node]:
    seen: dict[torch.fx.Node, None] = {}
    for sub in subs:
        seen.update(dict.fromkeys(sub.lifted))
    return list(seen)


def _fake_rules() -> None:
    """Give ember's fake mode (a subclass, which operators look up by exact class) torch's fake rule
    of every higher-order operator (their fake rules call others: while_loop_stack_output)."""
    for op in list(torch._ops._higher_order_ops.values()):
        rule = op.python_key_table.get(FakeTensorMode)
        if rule is not None and CheckedFakeTensorMode not in op.python_key_table:
            op.py_impl(CheckedFakeTensorMode)(rule)


def emit(frame: "Frame", op: Any, args: tuple, fake_args: tuple, what: str) -> Var:
    """One node calling the operator ``op``: ``args`` are node arguments, ``fake_args`` the same with fakes."""
    builder = frame.state.graph
    _fake_rules()
    try:
        with builder.fake_mode:
            result = op(*fake_args)
    except Unsupported:
        raise
    except Exception as exc:
        raise Unsupported(f"{what} failed on fake tensors: {type(exc).__name__}: {exc}") from exc
    node = builder.locate(builder.graph.create_node("call_function", op, args))
    return builder.wrap_result(node, result)


def _fakes(nodes: list[torch.fx.Node]) -> list[Any]:
    return [n.meta["val"] for n in nodes]


def _slice(fake: torch.Tensor) -> torch.Tensor:
    return fake.select(0, 0).clone()


@handles(cond_op)
def _cond(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    pred, true_fn, false_fn, operands = _bound(frame, ("pred", "true_fn", "false_fn", "operands"), args, kwargs)
    items = operands.items if isinstance(operands, (TupleVar, ListVar)) else [operands]
    if isinstance(pred, ConstVar):  # a Python bool: torch.compile specialises on the branch
        return call(frame, true_fn if pred.value else false_fn, list(items), {})
    if not isinstance(pred, TensorVar):
        frame.fail(f"torch.cond with a {type(pred).__name__} predicate")
    flat = flat_tensors(frame, operands, "torch.cond's operands")
    fakes = [t.fake for t in flat]

    def as_items(new: list[Var]) -> list[Var]:
        rebuilt = rebuild(operands, new)
        return list(rebuilt.items) if isinstance(rebuilt, (TupleVar, ListVar)) else [rebuilt]

    subs = [speculate(frame, fn, fakes, f"torch.cond's {name} branch", as_items)
            for fn, name in ((true_fn, "true"), (false_fn, "false"))]
    lifted = _union(subs)
    true_gm, false_gm = (_aligned(s, len(flat), lifted) for s in subs)
    nodes = [t.node for t in flat] + lifted
    args_out = (pred.node, graph_attr(frame, true_gm, "cond_true"), graph_attr(frame, false_gm, "cond_false"),
                tuple(nodes))
    fake_args = (pred.fake, true_gm, false_gm, tuple(fakes + _fakes(lifted)))
    result = emit(frame, cond_op, args_out, fake_args, "torch.cond")
    return _shaped(subs[0], result)


def _shaped(sub: Subgraph, result: Var) -> Var:
    """The operator's flat result in the structure the body returned (one tensor: that tensor)."""
    items = result.items if isinstance(result, (TupleVar, ListVar)) else [result]
    return rebuild(sub.template, list(items))


@handles(while_loop_op)
def _while_loop(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    cond_fn, body_fn, carried, additional = _bound(
        frame, ("cond_fn", "body_fn", "carried_inputs", "additional_inputs"), args, kwargs)
    carried_t = flat_tensors(frame, carried, "while_loop's carried inputs")
    flat = carried_t + flat_tensors(frame, additional, "while_loop's additional inputs")
    n_carried = len(carried_t)
    fakes = [t.fake for t in flat]
    subs = [speculate(frame, cond_fn, fakes, "while_loop's condition", single=True),
            speculate(frame, body_fn, fakes, "while_loop's body")]
    lifted = _union(subs)
    cond_gm, body_gm = (_aligned(s, len(flat), lifted) for s in subs)
    carried_nodes = tuple(t.node for t in flat[:n_carried])
    extra_nodes = tuple([t.node for t in flat[n_carried:]] + lifted)
    args_out = (graph_attr(frame, cond_gm, "while_cond"), graph_attr(frame, body_gm, "while_body"),
                carried_nodes, extra_nodes)
    fake_args = (cond_gm, body_gm, tuple(fakes[:n_carried]), tuple(fakes[n_carried:] + _fakes(lifted)))
    return emit(frame, while_loop_op, args_out, fake_args, "while_loop")


def _scan_like(frame: "Frame", op: Any, fn: Var, leading: list[TensorVar], sliced: list[TensorVar],
               additional: list[TensorVar], what: str, stem: str, body_fakes: Callable[[list, list], list],
               pack: Callable[[Any, list, list, list], tuple], shaped: bool = False) -> Var:
    """scan, map and associative_scan: one body called on ``body_fakes(sliced slices, additional)``;
    ``shaped``: the result has the structure the body returned (map)."""
    slices = [_slice(t.fake) for t in sliced]
    extra = [t.fake for t in additional]
    with frame.state.graph.fake_mode:
        fakes = body_fakes(slices, extra)
    sub = speculate(frame, fn, fakes, what)
    lifted = sub.lifted
    gm = _aligned(sub, len(fakes), lifted)
    node_args = pack(graph_attr(frame, gm, stem), [t.node for t in leading], [t.node for t in sliced],
                     [t.node for t in additional] + lifted)
    fake_args = pack(gm, [t.fake for t in leading], [t.fake for t in sliced], extra + _fakes(lifted))
    result = emit(frame, op, node_args, fake_args, what)
    return _shaped(sub, result) if shaped else result


@handles(scan_op)
def _scan(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    fn, init, xs, additional = _bound(frame, ("combine_fn", "init", "xs", "additional_inputs"), args, kwargs)
    init_t = flat_tensors(frame, init, "scan's init")
    init_fakes = [t.fake.clone() for t in init_t]
    return _scan_like(
        frame, scan_op, fn, init_t, flat_tensors(frame, xs, "scan's xs"), flat_tensors(frame, additional, "scan's inputs"),
        "scan's combine function", "scan_combine", lambda s, e: init_fakes + s + e,
        lambda g, lead, sliced, extra: (g, list(lead), list(sliced), tuple(extra)))


@handles(map_impl)
def _map(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    fn, xs, pos_args = _bound(frame, ("f", "xs", "pos_args"), args, kwargs)
    return _scan_like(
        frame, map_impl, fn, [], flat_tensors(frame, xs, "map's xs"), flat_tensors(frame, pos_args, "map's arguments"),
        "map's function", "map_body", lambda s, e: s + e,
        lambda g, lead, sliced, extra: (g, list(sliced), tuple(extra)), shaped=True)


@handles(associative_scan_op)
def _associative_scan(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    fn, xs, additional = _bound(frame, ("combine_fn", "xs", "additional_inputs"), args, kwargs)
    return _scan_like(
        frame, associative_scan_op, fn, [], flat_tensors(frame, xs, "associative_scan's xs"),
        flat_tensors(frame, additional, "associative_scan's inputs"), "associative_scan's combine function",
        "associative_scan_combine", lambda s, e: s + [t.clone() for t in s] + e,
        lambda g, lead, sliced, extra: (g, list(sliced), tuple(extra)))


def _bound(frame: "Frame", names: tuple[str, ...], args: list[Var], kwargs: dict[str, Var]) -> list[Var]:
    values = list(args) + [kwargs[n] for n in names[len(args):] if n in kwargs]
    if len(values) != len(names) or set(kwargs) - set(names[len(args):]):
        frame.fail(f"higher-order operator called with unexpected arguments {names}")
    return values


__all__ = ["emit", "rebuild"]


@handles(invoke_subgraph_placeholder)
def _nested_compile_region(frame: "Frame", args: list[Var], kwargs: dict[str, Var]) -> Var:
    """A function marked ``torch.compiler.nested_compile_region``: its body is captured into the
    calling graph (inlined), as any function; compiled once and stamped out per call is not done
    here (a capture of the region's first call reused for the others would need a subgraph
    operator). Without this the marker's placeholder raised under capture and every call ran
    eagerly."""
    return call(frame, args[0], args[1:], kwargs)
