"""Symbolic sizes in ember_aot: graphs whose placeholders carry sizes as symbols (issue 25).

The core hands a backend a *dynamic* graph when some placeholder's ``meta["val"]`` has free size
symbols (fake tensors with ``torch.SymInt`` sizes, or a ``SymInt`` for an int input), all from
one ``ShapeEnv`` owned by the capture's ``FakeTensorMode``. ember_aot then traces with fakes
that carry those symbols (``symbolic_inputs``), so its forward and backward graphs hold size
arithmetic as nodes and are valid for every size the core's guards admit.

What the runtime needs as numbers (the layout of a tangent to make, of an output view to
regenerate, a size the graph returns) is a sympy expression over the symbols; ``SizeProgram``
compiles such expressions once into one Python function that reads the symbols' values off the
call's inputs. Heuristics (bytes saved, memory) read a symbol's *hint* (the size it had when the
graph was captured) and never add a guard; decisions that change the graph compare sizes only
when the answer is known for every admitted size (``known_equal``).
"""
from __future__ import annotations

import contextlib
import operator
from typing import Any, Callable, Iterator, Sequence

import sympy
import torch
import torch.fx
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import free_symbols, statically_known_true
from torch.utils import _pytree as pytree
from torch.utils._sympy.functions import FloorDiv, Mod, PythonMod
from torch.utils._sympy.printers import PythonPrinter

from .analysis import as_non_leaf
from .errors import AOTUnsupported

SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)
#: the hint of a symbol the shape environment has none for (unbacked sizes)
FALLBACK_HINT = 4096

#: Whether this torch's symbolic tracing is the one ember_aot and the inductor are checked
#: against (CI's torch 2.13). On torch 2.11 (the GPU machine) a joint trace pins sizes: there
#: ``torch.matmul`` with gradients reads its operands' sizes through ``aten.size.default``,
#: whose fake-tensor handler makes ints of them, so the shape environment replaces the sequence
#: symbol by the example's value (``Eq(s36, 5)``, traced 2026-11-27 with the symbolic tests
#: forced on: 8 of 51 failed, a view of the example's size at other sizes and a NaN loss). So
#: there a dynamic graph that needs gradients is compiled per concrete shape instead (correct,
#: one compile per size), and a graph first compiled without them is traced symbolically but
#: runs its calls that need gradients eagerly.
SYMBOLIC_TRACING = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)


def is_symbolic(value: Any) -> bool:
    """A ``SymInt``/``SymFloat``/``SymBool`` whose value is an expression of size symbols."""
    return isinstance(value, SYMBOLIC) and bool(free_symbols(value))


def _placeholders(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "placeholder"]




def fake_mode_of(gm: torch.fx.GraphModule) -> FakeTensorMode:
    """The fake mode (and so the shape environment) the dynamic graph ``gm`` was captured in."""
    env = None
    for node in _placeholders(gm):
        val = node.meta.get("val")
        mode = getattr(val, "fake_mode", None)
        if isinstance(mode, FakeTensorMode):
            return mode
        if isinstance(val, SYMBOLIC):
            env = val.node.shape_env
    if env is None:
        raise AOTUnsupported("a dynamic graph without a fake mode on its placeholders")
    return FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)


@contextlib.contextmanager
def allowing_real_constants(mode: FakeTensorMode) -> Iterator[None]:
    """Let ``mode`` take the real tensors a graph holds as constants (``get_attr``) while tracing."""
    before = mode.allow_non_fake_inputs
    mode.allow_non_fake_inputs = True
    try:
        yield
    finally:
        mode.allow_non_fake_inputs = before


def symbolic_inputs(gm: torch.fx.GraphModule, args: Sequence[Any], mode: FakeTensorMode) -> list[Any]:
    """What to trace ``gm`` with instead of its real ``args``: a fresh fake with the
    placeholder's symbolic sizes and strides for each tensor (requiring grad as the real input
    does, and a non-leaf where it is one: see ``analysis.eager_like``), the placeholder's
    ``SymInt`` for an int input that varies, other values as they are."""
    out: list[Any] = []
    for node, a in zip(_placeholders(gm), args):
        val = node.meta.get("val")
        if isinstance(a, torch.Tensor):
            if not isinstance(val, torch.Tensor):
                raise AOTUnsupported(f"placeholder {node.name} has no fake tensor value")
            with mode:
                fake = torch.empty_strided(val.size(), val.stride(), dtype=a.dtype, device=a.device)
            fake.requires_grad_(a.requires_grad)
            out.append(as_non_leaf(mode, fake) if a.requires_grad and not a.is_leaf else fake)
        elif isinstance(val, torch.SymInt) and is_symbolic(val):
            out.append(val)
        else:
            out.append(a)
    return out


def hint(value: Any) -> int:
    """The value a size had at capture (for heuristics only: reading it adds no guard)."""
    if not isinstance(value, torch.SymInt):
        return int(value)
    node = value.node
    if node.hint is not None:
        return int(node.hint)
    env = node.shape_env
    if hasattr(env, "optimization_hint"):  # torch 2.13, where size_hint warns that it is deprecated
        return int(env.optimization_hint(node.expr, fallback=FALLBACK_HINT))
    return int(env.size_hint(node.expr, allow_none=True) or FALLBACK_HINT)


def known_equal(a: Any, b: Any) -> bool:
    """``a == b`` for every admitted size (False when it depends on the sizes); no guard added."""
    if isinstance(a, SYMBOLIC) or isinstance(b, SYMBOLIC):
        return statically_known_true(a == b)
    return a == b


def known_same_shape(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape for every admitted size."""
    return a.dim() == b.dim() and all(known_equal(x, y) for x, y in zip(a.shape, b.shape))


def _expr(value: Any) -> sympy.Expr:
    return value.node.expr


class SizeProgram:
    """Evaluates a structure holding ``SymInt`` values for the sizes of one call.

    ``template`` is nested tuples and lists (``torch.Size`` too) whose leaves may be ``SymInt``;
    ``inputs`` are the values a graph was traced with, one per call argument, whose bare symbols
    (a tensor's size, stride or offset, an int input) bind the symbols. ``program(args)``
    returns the template with each ``SymInt`` replaced by its value for those arguments: one
    generated Python function, compiled once, that builds the structure directly."""

    def __init__(self, template: Any, inputs: Sequence[Any]) -> None:
        consts: list[Any] = []
        exprs: list[sympy.Basic] = []
        body = _structure_source(template, consts, exprs)
        self._program = _compile(exprs, inputs, body, {"K": consts, "Size": torch.Size})

    def __call__(self, args: Sequence[Any]) -> Any:
        return self._program(args)


def _structure_source(value: Any, consts: list[Any], exprs: list[sympy.Basic]) -> str:
    """Python source building ``value``: sizes as ``int(<expression>)`` (noted in ``exprs``),
    tuples and lists element by element, anything else a constant ``K[i]``."""
    if isinstance(value, torch.SymInt):
        exprs.append(_expr(value))
        return f"int({PythonPrinter().doprint(_expr(value))})"
    if isinstance(value, (tuple, list)) and type(value) in (tuple, list, torch.Size):
        items = "".join(_structure_source(v, consts, exprs) + ", " for v in value)
        if type(value) is list:
            return f"[{items}]"
        return f"Size(({items}))" if type(value) is torch.Size else f"({items})"
    if any(isinstance(leaf, SYMBOLIC) for leaf in pytree.tree_leaves(value)):
        raise AOTUnsupported(f"a symbolic value inside a {type(value).__name__} the runtime "
                             "would build")
    consts.append(value)
    return f"K[{len(consts) - 1}]"


def relations_check(relations: Sequence[sympy.Basic],
                    inputs: Sequence[Any]) -> Callable[[Sequence[Any]], bool]:
    """A function of a call's arguments: whether the size ``relations`` (guard expressions of the
    shape environment) hold for them (``inputs`` as for ``SizeProgram``)."""
    printer = PythonPrinter()
    body = " and ".join(f"bool({printer.doprint(r)})" for r in relations) or "True"
    return _compile(list(relations), inputs, body, {})


def _compile(exprs: list[sympy.Basic], inputs: Sequence[Any], body: str,
             scope: dict[str, Any]) -> Callable[[Sequence[Any]], Any]:
    """``lambda args: <body>`` as generated Python, with the symbols of ``exprs`` read off ``args``."""
    needed: set[sympy.Symbol] = set()
    for e in exprs:
        needed |= e.free_symbols
    sources = _symbol_sources(inputs)
    missing = needed - set(sources)
    if missing:
        raise AOTUnsupported(f"sizes {sorted(map(str, missing))} cannot be read off the inputs")
    lines = ["def program(args):"]
    lines += [f"    {s.name} = {sources[s]}" for s in sorted(needed, key=lambda s: s.name)]
    lines.append(f"    return {body}")
    exec(compile("\n".join(lines), "<ember_aot sizes>", "exec"), scope)
    return scope["program"]


def _symbol_sources(inputs: Sequence[Any]) -> dict[sympy.Symbol, str]:
    """For each bare symbol among the inputs' sizes, strides, offsets and int values, Python code
    reading it off the call's ``args``."""
    sources: dict[sympy.Symbol, str] = {}

    def note(value: Any, code: str) -> None:
        if isinstance(value, torch.SymInt) and isinstance(_expr(value), sympy.Symbol):
            sources.setdefault(_expr(value), code)

    for p, val in enumerate(inputs):
        if isinstance(val, torch.Tensor):
            for d, s in enumerate(val.shape):
                note(s, f"args[{p}].size({d})")
            for d, s in enumerate(val.stride()):
                note(s, f"args[{p}].stride({d})")
            note(val.storage_offset(), f"args[{p}].storage_offset()")
        else:
            note(val, f"args[{p}]")
    return sources


def is_sym_node(node: torch.fx.Node) -> bool:
    """A node computing a size (``sym_size``, arithmetic on sizes) rather than a tensor."""
    return isinstance(node.meta.get("val"), SYMBOLIC)


def symbol_bindings(joint: torch.fx.GraphModule, parts: Any,
                    saved: list[torch.fx.Node]) -> list[torch.fx.Node]:
    """Nodes of ``joint`` to save as well so that every size symbol of the backward's inputs
    (``saved`` and the tangents of ``parts``, a ``graph_utils.JointParts``) is the bare value of
    one of them: the forward reads it off a primal (a ``sym_size`` node, added if none exists)."""
    missing = unbound_symbols(saved + parts.tangents)
    if not missing:
        return []
    existing: dict[sympy.Symbol, torch.fx.Node] = {}
    for node in joint.graph.nodes:
        val = node.meta.get("val")
        if (isinstance(val, torch.SymInt) and isinstance(_expr(val), sympy.Symbol)
                and node not in parts.tangent_dependent):
            existing.setdefault(_expr(val), node)
    extra = []
    for symbol in sorted(missing, key=lambda s: s.name):
        node = existing.get(symbol) or _read_symbol(joint, parts.primals, symbol)
        if node is not None:  # else no input carries it bare; a compiler needing it says so
            extra.append(node)
    return extra


def unbound_symbols(inputs: Sequence[torch.fx.Node]) -> set[sympy.Symbol]:
    """The size symbols of the values of ``inputs`` that none of them carries bare."""
    vals = [n.meta.get("val") for n in inputs]
    needed: set[sympy.Symbol] = set()
    for val in vals:
        if isinstance(val, (torch.Tensor, *SYMBOLIC)):
            needed |= free_symbols(val)
    return needed - set(_symbol_sources(vals))


def binding_inputs(inputs: Sequence[torch.fx.Node],
                   candidates: Sequence[torch.fx.Node]) -> list[torch.fx.Node]:
    """The ``candidates`` to add to a graph's ``inputs`` so that every size symbol of their
    values is carried bare by one of them (as ``symbol_bindings`` makes the partition do)."""
    missing = unbound_symbols(inputs)
    extra = []
    for c in candidates:
        if not missing:
            break
        bare = set(_symbol_sources([c.meta.get("val")]))
        if bare & missing and c not in inputs:
            extra.append(c)
            missing -= bare
    return extra


def _read_symbol(joint: torch.fx.GraphModule, primals: list[torch.fx.Node],
                 symbol: sympy.Symbol) -> torch.fx.Node | None:
    """A new node of ``joint`` reading ``symbol`` off the primal tensor whose size, stride or
    offset it is (inserted after the placeholders); None when no primal carries it bare."""
    aten = torch.ops.aten
    last = [n for n in joint.graph.nodes if n.op == "placeholder"][-1]
    for p in primals:
        val = p.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        reads = [(aten.sym_size.int, (d,), s) for d, s in enumerate(val.shape)]
        reads += [(aten.sym_stride.int, (d,), s) for d, s in enumerate(val.stride())]
        reads.append((aten.sym_storage_offset.default, (), val.storage_offset()))
        for op, extra, value in reads:
            if isinstance(value, torch.SymInt) and _expr(value) == symbol:
                with joint.graph.inserting_after(last):
                    node = joint.graph.call_function(op, (p, *extra))
                node.meta["val"] = value
                return node
    return None


class SizeNodes:
    """Builds, at the end of ``graph``, nodes computing sizes (ints or ``SymInt``) from its
    placeholders: a bare symbol is read off the placeholder carrying it, arithmetic on symbols
    becomes ``operator`` nodes (each with its ``meta["val"]``)."""

    _OPS = {sympy.Add: operator.add, sympy.Mul: operator.mul, FloorDiv: operator.floordiv,
            PythonMod: operator.mod, Mod: operator.mod}

    def __init__(self, graph: torch.fx.Graph) -> None:
        self.graph = graph
        self.symbols: dict[sympy.Symbol, torch.fx.Node] = {}

    def _placeholders(self) -> list[torch.fx.Node]:
        return [p for p in self.graph.nodes if p.op == "placeholder"]

    def sizes(self, shape: Sequence[Any]) -> list[Any]:
        """fx arguments for ``shape``: ints as they are, symbolic sizes as nodes."""
        return [self._build(_expr(s)) if isinstance(s, torch.SymInt) else s for s in shape]

    def _build(self, e: sympy.Basic) -> Any:
        if e.is_Integer:
            return int(e)
        if isinstance(e, sympy.Symbol):
            return self._symbol(e)
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
            return self._fold(operator.mul, [self._build(e.base)] * int(e.exp))
        op = self._OPS.get(type(e))
        if op is None:
            raise AOTUnsupported(f"size expression {e} has no node form here")
        return self._fold(op, [self._build(a) for a in e.args])

    def _fold(self, op: Callable, args: list[Any]) -> Any:
        acc = args[0]
        for a in args[1:]:
            acc = self._call(op, (acc, a))
        return acc

    def _call(self, op: Any, args: tuple) -> torch.fx.Node:
        node = self.graph.call_function(op, args)
        node.meta["val"] = op(*(a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args))
        return node

    def _symbol(self, symbol: sympy.Symbol) -> torch.fx.Node:
        if symbol in self.symbols:
            return self.symbols[symbol]
        for p in self._placeholders():
            val = p.meta.get("val")
            if isinstance(val, torch.SymInt) and _expr(val) == symbol:
                self.symbols[symbol] = p
                return p
            if isinstance(val, torch.Tensor):
                for d, s in enumerate(val.shape):
                    if isinstance(s, torch.SymInt) and _expr(s) == symbol:
                        self.symbols[symbol] = self._call(torch.ops.aten.sym_size.int, (p, d))
                        return self.symbols[symbol]
        raise AOTUnsupported(f"size {symbol} is not read off any input of the graph")
