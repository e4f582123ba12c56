"""The fx graph under construction: placeholders for tensor inputs, torch calls run on fakes.

Each torch call the interpreter meets is run once on fake tensors (shapes, dtypes and strides
only, no data) to learn its result, and recorded as an fx node. Results that hold no tensor
(``x.size()``, ``x.dim()``) are metadata of guarded inputs and become constants, except sizes
of dynamic dimensions, which stay nodes (:mod:`.symbolic`). The fake tensors live in one
``ShapeEnv`` per capture; inputs get symbolic sizes only in the dimensions the shape policy
(:mod:`ember.shapes`) makes dynamic.
"""
from __future__ import annotations

import contextlib
import enum
import math
import operator
import re
from typing import Any, Callable

import torch
import torch.fx
from torch._dispatch.python import enable_python_dispatcher
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

from .. import config
from ..errors import Unsupported
from . import global_state
from .eager_checks import CheckedFakeTensorMode
from .positions import WalkedFrame, stack_trace
from .sources import Source
from .symbolic import InputToken, SliceVar, SymVar, constant_of, has_symbolic, wrap_value
from .values import ConstVar, DictVar, Identity, ListVar, TensorVar, TupleVar, UserDictVar, Var, is_numpy_scalar

_FAKE_ERRORS: tuple[type[BaseException], ...]
try:
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        UnsupportedOperatorException,
    )

    _FAKE_ERRORS = (DataDependentOutputException, DynamicOutputShapeException, UnsupportedOperatorException)
except ImportError:  # pragma: no cover - names moved
    _FAKE_ERRORS = ()


def _node_name(source: Source) -> str:
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", source.describe()).strip("_").lower()
    return name or "input"


class GraphBuilder:
    """Owns the fx graph, the fake-tensor mode and the list of graph inputs."""

    #: ``x[i]`` with tensor or int indices is recorded as ``aten.index`` (flex_attention's bodies)
    index_by_tensors = False

    def __init__(self) -> None:
        self.graph = torch.fx.Graph()
        # data-dependent results (``item``, ``nonzero``) are graph breaks unless the settings make
        # them unbacked symbols (see unbacked.py)
        self.shape_env = ShapeEnv(allow_scalar_outputs=config.capture_scalar_outputs,
                                  allow_dynamic_output_shape_ops=config.capture_dynamic_output_shape_ops)
        self.fake_mode = CheckedFakeTensorMode(shape_env=self.shape_env, static_shapes=True)
        #: graph inputs: tensors, and ints that are symbolic (their real value is passed)
        self.inputs: list[tuple[Source, torch.fx.Node, Any]] = []
        #: every input given symbols, with its fake tensor or SymInt, in the order of their
        #: ``InputToken`` (inputs the graph does not use too: their symbols may be guarded)
        self.symbolic_inputs: list[tuple[Source, Any]] = []
        self._input_vars: dict[int, TensorVar] = {}
        self._numpy_tensors: dict[int, torch.Tensor] = {}
        self.numpy_arrays: dict[int, Any] = {}  # id(array read from the frame) -> its NdarrayVar
        self._last_placeholder: torch.fx.Node | None = None
        self._fake_vars: dict[int, TensorVar] = {}
        #: the frames the interpreter is walking, outermost first (see positions.py)
        self.frames: list[WalkedFrame] = []
        #: constants the graph reads as attributes of its module (see bind_constants)
        self.constants: dict[str, Any] = {}

    def locate(self, node: torch.fx.Node) -> torch.fx.Node:
        """Give ``node`` the user's stack at the instruction being interpreted."""
        node.stack_trace = stack_trace(self.frames)
        return node

    def var_of_fake(self, fake: torch.Tensor) -> TensorVar | None:
        """The graph value a fake tensor stands for (for objects built over fakes)."""
        var = self._fake_vars.get(id(fake))
        return var if var is not None and var.fake is fake else None

    def _track(self, var: TensorVar) -> TensorVar:
        self._fake_vars[id(var.fake)] = var
        return var

    # -- inputs ---------------------------------------------------------------------------
    def input_for(self, tensor: torch.Tensor) -> TensorVar | None:
        """The variable already standing for this exact tensor object, if any."""
        return self._input_vars.get(id(tensor))

    def numpy_tensor(self, array: Any) -> torch.Tensor:
        """``torch.from_numpy(array)``, one tensor per array (it keeps the array alive), so that
        two reads of one array are one graph input."""
        tensor = self._numpy_tensors.get(id(array))
        if tensor is None:
            tensor = self._numpy_tensors[id(array)] = torch.from_numpy(array)
        return tensor

    def _placeholder(self, source: Source) -> torch.fx.Node:
        if self._last_placeholder is None:
            ctx = self.graph.inserting_before(next(iter(self.graph.nodes), None))
        else:
            ctx = self.graph.inserting_after(self._last_placeholder)
        with ctx:
            node = self.graph.placeholder(_node_name(source))
        self._last_placeholder = node
        return node

    def add_input(self, source: Source, tensor: torch.Tensor, dynamic_dims: frozenset[int] = frozenset()) -> TensorVar:
        """A tensor input; the sizes in ``dynamic_dims`` become symbols (duck-sized: equal sizes
        share one; sizes 0 and 1 stay constants)."""
        node = self._placeholder(source)
        if dynamic_dims:
            context = StatelessSymbolicContext(
                dynamic_sizes=[DimDynamic.DUCK if d in dynamic_dims else DimDynamic.STATIC for d in range(tensor.dim())],
                constraint_sizes=[None] * tensor.dim())
            token = InputToken(len(self.symbolic_inputs))
            fake = self.fake_mode.from_tensor(tensor, static_shapes=False, source=token, symbolic_context=context)
            self.symbolic_inputs.append((source, fake))
        else:
            fake = self.fake_mode.from_tensor(tensor, static_shapes=True)
        node.meta["example_value"] = fake
        node.meta["val"] = fake
        node.meta["source"] = source.describe()
        var = TensorVar(node, fake, source, type(tensor))
        self.inputs.append((source, node, tensor))
        self._input_vars[id(tensor)] = var
        return self._track(var)

    def add_symint_input(self, source: Source, value: int) -> Var:
        """A Python int that varies between calls: a SymInt placeholder (a constant for 0 and 1),
        one per source (an attribute read twice is one input)."""
        for known, node, _ in self.inputs:
            if known == source and isinstance(node.meta.get("val"), torch.SymInt):
                return SymVar(node, node.meta["val"], source)
        token = InputToken(len(self.symbolic_inputs))
        sym = self.shape_env.create_unspecified_symint_and_symbol(value, token, DimDynamic.DYNAMIC)
        if not isinstance(sym, torch.SymInt):
            var: Var = ConstVar(value, source)
        else:
            self.symbolic_inputs.append((source, sym))
            node = self._placeholder(source)
            node.meta["val"] = node.meta["example_value"] = sym
            node.meta["source"] = source.describe()
            self.inputs.append((source, node, value))
            var = SymVar(node, sym, source)
        return var

    # -- calls ----------------------------------------------------------------------------
    def call(self, kind: str, target: Any, args: tuple[Var, ...], kwargs: dict[str, Var]) -> Var:
        """Record ``target(*args, **kwargs)`` (``kind`` is call_function or call_method)."""
        if target in _INPLACE_OPERATORS and not isinstance(args[0], TensorVar):
            # fx writes these as statements (`a += b`, `a[i] = v`), valid only with a tensor target
            raise Unsupported(f"{_target_name(target)} whose target is a {type(args[0]).__name__}, not a tensor")
        fake_args = tuple(to_fake(a) for a in args)
        fake_kwargs = {k: to_fake(v) for k, v in kwargs.items()}
        fakes_in = [t.fake for t in _tensor_vars(args, kwargs)]
        versions = [_version(f) for f in fakes_in]
        if not fakes_in and getattr(target, "__name__", None) in ("__enter__", "__exit__"):
            raise Unsupported(f"{_target_name(target)} changes torch's global state")
        before = None if fakes_in else global_state.snapshot()
        try:
            # symbolic sizes: composite ops (constant_pad_nd...) decompose through the Python
            # dispatcher, as their C++ kernels need concrete sizes
            dispatcher = enable_python_dispatcher() if _has_symbols(self.shape_env) else contextlib.nullcontext()
            # unbacked symbols (``item()``, ``nonzero``) belong to this capture: none is left
            # pending for a later trace (make_fx) in the same ShapeEnv to bind
            with self.fake_mode, dispatcher, self.shape_env.ignore_fresh_unbacked_symbols():
                if kind == "call_method":
                    result = getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
                else:
                    result = target(*fake_args, **fake_kwargs)
        except _FAKE_ERRORS as exc:
            raise Unsupported(f"{_target_name(target)} depends on tensor data ({type(exc).__name__})") from exc
        except Unsupported:
            raise
        except Exception as exc:
            raise Unsupported(f"{_target_name(target)} failed on fake tensors: {type(exc).__name__}: {exc}") from exc
        inplace = _looks_inplace(kind, target, kwargs)
        written = [f for f, v in zip(fakes_in, versions) if _version(f) != v]
        if inplace and args and isinstance(args[0], TensorVar):
            written.append(args[0].fake)
        mutated = inplace or bool(written)
        if any(torch._debug_has_internal_overlap(f) == 1 for f in written):
            # functionalization rewrites a write into a view as a scatter into its base, which for
            # an expand view (stride 0) sums the copies: eager's write cannot be expressed
            raise Unsupported(f"{_target_name(target)} writes into a tensor whose elements share memory "
                              "(an expanded view)")
        if before is not None and global_state.snapshot() != before:
            before.restore()  # capture never changes the state the program runs in
            raise Unsupported(f"{_target_name(target)} changes torch's global state")
        symbolic = not _has_tensor(result) and has_symbolic(result)  # a dynamic size
        if not _has_tensor(result) and not mutated and not symbolic:
            if not fakes_in and not _is_query(target) and not _has_sym_arg(args, kwargs):
                raise Unsupported(f"{_target_name(target)} may change torch's global state")
            return ConstVar(constant_of(result))  # metadata of guarded inputs, e.g. x.size()
        node_args = tuple(self.bind_constants(to_arg(a)) for a in args)
        node_kwargs = {k: self.bind_constants(to_arg(v)) for k, v in kwargs.items()}
        node = self.locate(self.graph.create_node(kind, target, node_args, node_kwargs))
        if symbolic:
            return wrap_value(self.graph, node, result)
        if mutated:
            node.meta["mutates"] = True
        if not _has_tensor(result):  # e.g. operator.setitem: kept for its effect
            return ConstVar(result)
        # an in-place op, an out= variant or an op that returns its argument (``x.contiguous()`` of a
        # contiguous x) gives back that very tensor: the same Var, so ``x.add_(1) is x`` as in eager
        return self.wrap_result(node, result, {id(v.fake): v for v in _tensor_vars(args, kwargs)})

    def bind_constants(self, value: Any) -> Any:
        """``value`` (a node argument) with every constant that fx would print as something other
        than a Python expression giving it back (``np.float64(2.5)``, an int subclass, ``nan+nanj``)
        replaced by a ``get_attr`` node that reads it from the graph module: the graph's code
        names only what it binds."""
        if isinstance(value, torch.fx.Node) or _prints_as_itself(value):
            return value
        if type(value) in (tuple, list):
            return type(value)(self.bind_constants(v) for v in value)
        if type(value) is slice:
            return slice(*(self.bind_constants(v) for v in (value.start, value.stop, value.step)))
        if type(value) is dict and all(_prints_as_itself(k) for k in value):
            return {k: self.bind_constants(v) for k, v in value.items()}
        if type(value) is torch.Size or (isinstance(value, tuple) and hasattr(type(value), "_fields")) and all(
                _prints_as_itself(v) for v in value):
            return value  # fx writes these itself
        name = f"_ember_constant{len(self.constants)}"
        self.constants[name] = value
        return self.graph.get_attr(name)

    def wrap_result(self, node: torch.fx.Node, result: Any, same: dict[int, TensorVar] | None = None) -> Var:
        """The Var of ``node``'s value ``result``; a tensor of ``same`` (the call's arguments, by the
        id of their fakes) is that argument's Var."""
        node.meta["example_value"] = result
        if isinstance(result, torch.Tensor):
            node.meta["val"] = result
            known = (same or {}).get(id(result))
            if known is not None and known.fake is result:
                node.meta["gives_argument"] = True  # no new value: no work when nothing else reads it
                return known
            return self._track(TensorVar(node, result))
        if isinstance(result, (tuple, list)):
            items: list[Var] = []
            for i, item in enumerate(result):
                if _has_tensor(item):
                    child = self.graph.call_function(operator.getitem, (node, i))
                    child.stack_trace = node.stack_trace
                    items.append(self.wrap_result(child, item, same))
                elif has_symbolic(item):
                    items.append(wrap_value(self.graph, self.graph.call_function(operator.getitem, (node, i)), item))
                else:
                    items.append(ConstVar(constant_of(item)))
            if isinstance(result, list):
                return ListVar(items)
            return TupleVar(items, tuple_type=type(result))
        raise Unsupported(f"torch call returned an unsupported value of type {type(result).__name__}")

    def output(self, tensors: list[TensorVar]) -> None:
        self.graph.output(tuple(t.node for t in tensors))


_QUERY_PREFIXES = ("is_", "get_", "_is_", "_get_", "_are_", "can_", "promote_types", "result_type", "finfo", "iinfo",
                   "broadcast_shapes", "Size", "device", "numel", "typename", "_parse_to")


def _has_symbols(env: ShapeEnv) -> bool:
    values = getattr(env, "backed_var_to_val", None)  # torch 2.13's name of var_to_val
    backed = env.var_to_val if values is None else values
    return bool(backed) or bool(env.unbacked_symint_counter or env.unbacked_symfloat_counter)  # unbacked too


def _is_query(target: Any) -> bool:
    """Torch functions that only answer a question (safe to evaluate once at capture time)."""
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    return name.startswith(_QUERY_PREFIXES)


def _version(t: torch.Tensor) -> int | None:
    try:
        return t._version
    except RuntimeError:  # inference tensors have no version counter
        return None


_INPLACE_OPERATORS = {operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
                      operator.ifloordiv, operator.imod, operator.ipow, operator.iand, operator.ior,
                      operator.ixor, operator.ilshift, operator.irshift, operator.imatmul}


#: ``operator`` functions whose names end in "_" only to avoid a keyword: not in place
_OUT_OF_PLACE_OPERATORS = {operator.and_, operator.or_, operator.not_, operator.is_}


def _looks_inplace(kind: str, target: Any, kwargs: dict[str, Var]) -> bool:
    """In-place by name or keyword, for tensors whose version counter cannot be read."""
    if kind == "call_method":
        return target.endswith("_") and not target.endswith("__")
    name = getattr(target, "__name__", "")
    inplace = kwargs.get("inplace")
    return (target in _INPLACE_OPERATORS or (name.endswith("_") and not name.endswith("__")
                                             and target not in _OUT_OF_PLACE_OPERATORS)
            or "out" in kwargs or (isinstance(inplace, ConstVar) and inplace.value is True))


def _has_sym_arg(args: tuple[Var, ...], kwargs: dict[str, Var]) -> bool:
    return any(isinstance(v, SymVar) for v in (*args, *kwargs.values()))


def _tensor_vars(args: tuple[Var, ...], kwargs: dict[str, Var]) -> list[TensorVar]:
    found: list[TensorVar] = []

    def visit(var: Var) -> None:
        if isinstance(var, TensorVar):
            found.append(var)
        elif isinstance(var, (TupleVar, ListVar)):
            for item in var.items:
                visit(item)
        elif isinstance(var, DictVar):
            for item in var.items.values():
                visit(item)

    for var in (*args, *kwargs.values()):
        visit(var)
    return found


_RANDOM_MARKERS = ("rand", "dropout", "bernoulli", "normal", "multinomial", "uniform", "exponential")


def remove_dead_nodes(graph: torch.fx.Graph) -> None:
    """Drop unused nodes that neither mutate a tensor nor draw random numbers."""
    for node in reversed(list(graph.nodes)):
        if node.op not in ("call_function", "call_method") or node.users or node.meta.get("mutates"):
            continue
        if any(m in _target_name(node.target).lower() for m in _RANDOM_MARKERS):
            continue
        graph.erase_node(node)


def _target_name(target: Any) -> str:
    if isinstance(target, str):
        return f"Tensor.{target}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    return f"{module}.{name}" if module else name


def _has_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_tensor(v) for v in value)
    return False


_GRAPH_CONSTANTS = (bool, int, float, complex, str, type(None), slice, type(Ellipsis), torch.dtype,
                    torch.device, torch.layout, torch.memory_format, torch.Size)


def _convert(var: Var, tensor_fn: Callable[[TensorVar], Any], sym_fn: Callable[[SymVar], Any]) -> Any:
    if isinstance(var, TensorVar):
        return tensor_fn(var)
    if isinstance(var, SymVar):
        return sym_fn(var)
    if isinstance(var, SliceVar):
        return slice(*(_convert(v, tensor_fn, sym_fn) for v in (var.start, var.stop, var.step)))
    if isinstance(var, ConstVar):
        if not _is_graph_constant(var.value):
            raise Unsupported(f"a {type(var.value).__name__} cannot be baked into a graph as a constant")
        return var.value
    if isinstance(var, TupleVar):
        items = tuple(_convert(v, tensor_fn, sym_fn) for v in var.items)
        if var.tuple_type in (tuple, torch.Size):
            return items
        if hasattr(var.tuple_type, "_fields"):
            return var.tuple_type(*items)
        return var.tuple_type(items)
    if isinstance(var, ListVar):
        return [_convert(v, tensor_fn, sym_fn) for v in var.items]
    if isinstance(var, DictVar) and not isinstance(var, UserDictVar) \
            and not any(isinstance(k, Identity) for k in var.items):  # keys that are Python values
        return {k: _convert(v, tensor_fn, sym_fn) for k, v in var.items.items()}
    raise Unsupported(f"cannot pass a {type(var).__name__} to a torch function")


def _is_graph_constant(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_is_graph_constant(v) for v in value)
    return isinstance(value, _GRAPH_CONSTANTS) or is_numpy_scalar(value)


#: constants fx writes as Python that gives them back (floats: ``inf``/``nan`` are fx's own names;
#: enum members: fx imports their class)
_LITERALS = (bool, int, float, str, type(None), type(Ellipsis), torch.dtype, torch.device, torch.layout,
             torch.memory_format)


def _prints_as_itself(value: Any) -> bool:
    kind = type(value)
    if kind in _LITERALS or isinstance(value, enum.Enum):
        return True
    return kind is complex and math.isfinite(value.real) and math.isfinite(value.imag)


def to_fake(var: Var) -> Any:
    return _convert(var, lambda t: t.fake, lambda s: s.value)


def to_arg(var: Var) -> Any:
    return _convert(var, lambda t: t.node, lambda s: s.node)
