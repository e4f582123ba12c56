"""From a finished capture to Python code: the graph's outputs and the rebuilt return value.

The return value of the captured function is a tree of symbolic values. Tensors computed by
the graph become graph outputs; inputs, constants and containers are rebuilt around them by a
generated expression, so that the caller gets the same structure eager Python would return
(the same objects where eager returns inputs unchanged).
"""
from __future__ import annotations

import functools
import math
import types

import torch

from ..errors import Unsupported
from .collections_calls import DequeVar, rebuild_deque
from .contexts import ModelledContext
from .generator_outputs import ITERATOR_KINDS, parts as iterator_parts, rebuild_expr as rebuild_iterator
from .graph import GraphBuilder
from .numpy_arrays import NdarrayMethod, NdarrayVar
from .numpy_runtime import to_numpy
from .inlined_contexts import GeneratorContextVar, rebuild_expr as rebuild_context
from .sources import Constants
from .objects import ShadowVar, visit_parts
from .symbolic import SymVar
from .unbacked import is_unbacked
from .user_containers import parts as user_container_parts, rebuild_expr as rebuild_user_container
from .user_objects import UserObjectVar, rebuild_expr as rebuild_object
from .values import (
    BoundMethodVar, CellVar, ConstVar, DictVar, DictViewVar, FunctionVar, Identity, InstanceDictVar, ListVar,
    PartialVar, SetVar, TensorVar, TupleVar, UserDictVar, UserSetVar, Var,
)

_LITERALS = (bool, int, str, type(None), bytes)


class OutputBuilder:
    """Collects graph outputs while writing the expression that rebuilds a value."""

    def __init__(self, graph: GraphBuilder, consts: Constants) -> None:
        self.graph = graph
        self.consts = consts
        self.outputs: list[TensorVar] = []
        self._index: dict[torch.fx.Node, int] = {}
        self._shared: dict[int, str] = {}  # id(container Var) -> runner variable holding it
        self._scalars: dict[torch.fx.Node, TensorVar] = {}  # unbacked value's node -> its 0-d tensor
        self._cells: dict[int, tuple[str, CellVar]] = {}  # cells the captured code made
        #: what lives on after the graph (None: not known): a generator run ahead may change a value
        #: none of them reaches (generator_outputs)
        self.live: list[Var] | None = None

    def share(self, roots: list[Var]) -> list[str]:
        """Lines binding each container the capture built that ``roots`` reach more than once
        (a list on the stack and in a local, a dict returned twice) to one runner variable, so
        that the rebuilt values alias each other as the Python objects did."""
        counts: dict[int, int] = {}
        order: list[Var] = []

        def visit(var: Var) -> None:
            if var.source is not None:
                return
            if isinstance(var, DictViewVar):
                visit(var.mapping)
            elif isinstance(var, InstanceDictVar):  # the __dict__ of the rebuilt object
                visit(var.owner)
            elif isinstance(var, ShadowVar) and var.root is not var:  # a value inside a built object
                visit(var.root)
            elif isinstance(var, (ListVar, TupleVar, DictVar, SetVar, UserObjectVar, ShadowVar, FunctionVar,
                                  GeneratorContextVar, NdarrayVar, *ITERATOR_KINDS)):  # a tuple too: ``is``, a subclass's __dict__
                counts[id(var)] = counts.get(id(var), 0) + 1
                if counts[id(var)] > 1:
                    return
                if isinstance(var, ShadowVar):  # a dataclass built by the capture: its arguments, its log
                    items = visit_parts(var)
                elif isinstance(var, (UserDictVar, UserSetVar)):  # its items and its attributes
                    items = user_container_parts(var)
                elif isinstance(var, SetVar):  # Python values, and tensors or objects by identity
                    items = [k.var for k in var.items if isinstance(k, Identity)]
                elif isinstance(var, GeneratorContextVar):  # one context, made once from its arguments
                    items = [*var.args, *var.kwargs.values()]
                elif isinstance(var, FunctionVar):  # its cells are filled after (cell_lines)
                    items = [*var.defaults, *var.kwdefaults.values()]
                elif isinstance(var, NdarrayVar):
                    items = []
                elif isinstance(var, ITERATOR_KINDS):  # the items it has left, or the call making it again
                    items = iterator_parts(var, self.live)
                else:
                    items = var.items if isinstance(var, (ListVar, TupleVar)) else [  # values, and keys held by identity
                        *(k.var for k in var.items if isinstance(k, Identity)), *var.items.values()]
                for item in items:
                    visit(item)
                order.append(var)  # after its items: they are bound first
        for root in roots:
            visit(root)
        lines = []
        for var in order:
            if counts[id(var)] > 1:
                name = f"___b{len(self._shared)}"
                lines.append(f"    {name} = {self.expr(var)}")
                self._shared[id(var)] = name
        return lines

    def is_shared(self, var: Var) -> bool:
        """``var`` is reached more than once from the roots :meth:`share` was given."""
        return id(var) in self._shared

    def expr(self, var: Var, fresh: bool = False) -> str:
        """Python expression for ``var``; ``fresh`` rebuilds a container even if it has a source."""
        if var.source is not None and not (fresh and isinstance(var, (ListVar, DictVar, TupleVar))):
            return var.source.expr(self.consts)  # an input as it is: the same object
        if id(var) in self._shared:
            return self._shared[id(var)]
        if isinstance(var, (TensorVar, SymVar)):  # a symbolic size: an int output of the graph
            if var.node.op == "placeholder":
                return next(s for s, n, _ in self.graph.inputs if n is var.node).expr(self.consts)
            if is_unbacked(var):  # a value read from data: out of the graph as a 0-d tensor
                return f"{self.expr(self._scalar_tensor(var))}.item()"
            if var.node not in self._index:
                self._index[var.node] = len(self.outputs)
                self.outputs.append(var)
            return f"___o[{self._index[var.node]}]"
        if isinstance(var, ConstVar):
            value = var.value
            if type(value) in _LITERALS or (type(value) is float and math.isfinite(value)):
                return repr(value)
            return self.consts.name(value, "r")
        if isinstance(var, TupleVar):
            items = "".join(f"{self.expr(v)}, " for v in var.items)
            if var.tuple_type is tuple:
                return f"({items})"
            cls = self.consts.name(var.tuple_type, "T")
            if hasattr(var.tuple_type, "_fields"):
                return f"{cls}({items})"
            return f"{cls}(({items}))"
        if isinstance(var, DequeVar):
            return rebuild_deque(self, var)
        if isinstance(var, ListVar):
            return "[" + ", ".join(self.expr(v) for v in var.items) + "]"
        if isinstance(var, CellVar):
            if id(var) not in self._cells:
                self._cells[id(var)] = (f"___cell{len(self._cells)}", var)
            return self._cells[id(var)][0]
        if isinstance(var, FunctionVar) and (var.attrs or var.slots):
            raise Unsupported("a function made inside the captured code with attributes stored on it (functools.wraps)")
        if isinstance(var, FunctionVar):  # a closure made by the captured code: a new function
            parts = [self.consts.name(var.code, "code"), self.consts.name(var.globals, "g"),
                     "(" + "".join(f"{self.expr(v)}, " for v in var.defaults) + ")",
                     "{" + ", ".join(f"{k!r}: {self.expr(v)}" for k, v in var.kwdefaults.items()) + "}",
                     "(" + "".join(f"{self.expr(c)}, " for c in var.closure) + ")"]
            return f"{self.consts.name(make_function, 'mkfn')}({', '.join(parts)})"
        if isinstance(var, InstanceDictVar):
            return f"{self.expr(var.owner)}.__dict__"
        if isinstance(var, (UserDictVar, UserSetVar)):  # an instance of a dict or set subclass
            return rebuild_user_container(self, var)
        if isinstance(var, SetVar):  # a new set on every call, as in Python
            body = "{" + ", ".join(self.key(k) for k in var.items) + "}" if var.items else "set()"
            return body if var.set_type is set else f"frozenset({body})"
        if isinstance(var, DictVar):
            body = ", ".join(f"{self.key(k)}: {self.expr(v)}" for k, v in var.items.items())
            if var.dict_type is dict:
                return "{" + body + "}"
            if var.default_factory is not None:  # a defaultdict
                return f"{self.consts.name(var.dict_type, 'D')}({self.expr(var.default_factory)}, {{{body}}})"
            return f"{self.consts.name(var.dict_type, 'D')}({{{body}}})"
        from .containers import ContainerMethod
        from .tensors import TensorMethod
        from .objects import rebuild_expr

        if isinstance(var, ShadowVar):
            return rebuild_expr(self, var)
        if isinstance(var, DictViewVar):  # a view of the rebuilt mapping
            return f"{self.expr(var.mapping)}.{var.kind}()"
        if isinstance(var, UserObjectVar):
            return rebuild_object(self, var)
        if isinstance(var, GeneratorContextVar):
            return rebuild_context(self, var)
        if isinstance(var, ITERATOR_KINDS):
            return rebuild_iterator(self, var)
        if isinstance(var, NdarrayVar):  # an array computed by the graph: the output tensor's memory
            return f"{self.consts.name(to_numpy, 'np')}({self.expr(var.tensor)})"
        if isinstance(var, NdarrayMethod):
            return f"{self.expr(var.array)}.{var.name}"
        if isinstance(var, TensorMethod):
            return f"{self.expr(var.tensor)}.{var.name}"
        if isinstance(var, ContainerMethod) and var.container.source is not None:  # bound to the real object
            return f"{self.expr(var.container)}.{var.name}"
        if isinstance(var, BoundMethodVar) and isinstance(var.func, ConstVar):  # ``obj.method`` at a break
            return f"{self.consts.name(types.MethodType, 'M')}({self.expr(var.func)}, {self.expr(var.self_var)})"
        if isinstance(var, PartialVar):  # ``functools.partial(f, ...)`` made in the captured code: a new one
            args = "".join(f"{self.expr(v)}, " for v in [var.func, *var.args])
            kwargs = "".join(f"{k}={self.expr(v)}, " for k, v in var.kwargs.items())
            return f"{self.consts.name(functools.partial, 'partial')}({args}{kwargs})"
        if isinstance(var, ModelledContext) and var.remakeable():  # its effects are the graph's: a new one
            args = "".join(f"{self.expr(ConstVar(a))}, " for a in var.spec.args)
            return f"{self.consts.name(var.spec.factory, 'ctx')}({args})"
        raise Unsupported(f"returning a {type(var).__name__} from compiled code is not supported yet")

    def _scalar_tensor(self, var: SymVar) -> TensorVar:
        """``torch.scalar_tensor`` of ``var`` (one per value), holding it exactly (int64, float64, bool):
        backends hand back tensors, and sizes, not numbers only the data decides."""
        made = self._scalars.get(var.node)
        if made is None:
            dtype = {int: torch.int64, float: torch.float64, bool: torch.bool}[var.python_type()]
            made = self.graph.call("call_function", torch.scalar_tensor, (var,), {"dtype": ConstVar(dtype)})
            assert isinstance(made, TensorVar)
            self._scalars[var.node] = made
        return made

    def cell_lines(self) -> tuple[list[str], list[str]]:
        """Lines making the cells that the written expressions name (first in the runner), and
        lines filling them (once the values they hold are rebuilt): a closure that refers to
        itself, or two closures sharing a cell, see one cell as in Python."""
        fills: list[str] = []
        done = 0
        while done < len(self._cells):  # filling one may name cells of closures it holds
            name, var = list(self._cells.values())[done]
            if var.contents is not None:
                fills.append(f"    {name}.cell_contents = {self.expr(var.contents)}")
            done += 1
        cell_type = self.consts.name(types.CellType, "CellType")
        return [f"    {name} = {cell_type}()" for name, _ in self._cells.values()], fills

    def key(self, key: object) -> str:
        if isinstance(key, Identity):
            return self.expr(key.var)
        if type(key) in _LITERALS:
            return repr(key)
        return self.consts.name(key, "key")


def make_function(code: types.CodeType, globals_dict: dict, defaults: tuple, kwdefaults: dict,
                  closure: tuple) -> types.FunctionType:
    """A function made by the captured code, as ``MAKE_FUNCTION`` makes it."""
    fn = types.FunctionType(code, globals_dict, code.co_name, defaults or None, closure or None)
    fn.__kwdefaults__ = kwdefaults or None
    return fn
