"""numpy in captured code, traced as torch ops (as torch.compile does): an array is a
:class:`NdarrayVar`, the tensor holding its data in the graph, and numpy's functions, array
methods, attributes and operators on it are graph nodes computed by ``torch._numpy``
(:mod:`.numpy_runtime`). After the graph (at a return or a break) it is a numpy array again,
sharing the output tensor's memory.

Arrays come from ``Tensor.numpy()``, from numpy's functions (``np.zeros_like(x)``,
``np.arange(n)``) and from the frame: an array read from it (an :class:`ArrayVar`) becomes a graph
input sharing its memory (``torch.from_numpy``) at its first computation; reads that need its
elements in Python (``tolist``, truth, ``in``) still fold it, guarded on its elements. Numbers
computed by numpy from constants (``np.prod(x.shape)``) fold too. What needs an array's data in
Python (``item``, truth, ``float(a)``) breaks the graph, as for a tensor.
"""
from __future__ import annotations

import dataclasses
import functools
import operator
import sys
from typing import TYPE_CHECKING, Any

import torch

from . import numpy_runtime
from .builder import wrap
from .constants import NotConstant, lift, python_value
from .dispatch import handles_attr, handles_call, handles_iter, handles_len, handles_operator, handles_truth, load_attr
from .instances import ArrayVar
from .sources import NumpyTensorSource, Source
from .torch_ops import BINARY_OPS, COMPARE_OPS, is_pure_function
from .symbolic import SliceVar, SymVar
from .values import ConstVar, ListVar, TensorVar, TupleVar, Var

if TYPE_CHECKING:
    from .frame import Frame


@dataclasses.dataclass(eq=False)
class NdarrayVar(Var):
    """A numpy array computed in the graph: ``tensor`` holds its data (the same memory)."""

    tensor: TensorVar
    source: Source | None = None

    def python_type(self) -> type:
        return sys.modules["numpy"].ndarray

    def __repr__(self) -> str:
        return f"NdarrayVar({self.tensor!r})"


class NdarrayMethod(Var):
    """``array.method`` before it is called."""

    def __init__(self, array: NdarrayVar, name: str) -> None:
        self.array = array
        self.name = name


#: methods whose answer is the array's data as Python values
_DATA_METHODS = frozenset({"item", "tolist", "tobytes", "__bool__", "__int__", "__float__", "__index__", "__array__",
                           "__iter__", "__len__", "__contains__", "tofile", "dump", "dumps"})
#: attributes that are views of the array, computed in the graph
_VIEW_ATTRS = frozenset({"T", "mT", "real", "imag", "flat"})
#: numpy functions that describe types or shapes: computed now (``torch_ops._NUMPY_PURE``), not traced
_DESCRIPTIONS = frozenset({"dtype", "finfo", "iinfo", "issubdtype", "result_type", "promote_types", "can_cast",
                           "isscalar", "ndim", "shape"})
#: torch dtypes a numpy array cannot have
_NOT_NUMPY = (torch.bfloat16, torch.complex32, torch.float8_e4m3fn, torch.float8_e5m2)


@functools.lru_cache(maxsize=1)
def _function_paths() -> dict[Any, str]:
    """numpy's functions (and ufuncs) that ``torch._numpy`` computes, each with its path there."""
    import numpy as np

    paths: dict[Any, str] = {}
    tnp = numpy_runtime.tnp
    for module, prefix, own in ((np, "", tnp), (np.linalg, "linalg.", tnp.linalg), (np.fft, "fft.", tnp.fft)):
        for name in dir(own):
            real = getattr(module, name, None)
            if name.startswith("_") or isinstance(real, type) or name in _DESCRIPTIONS or not callable(real):
                continue
            if numpy_runtime.tnp_function(prefix + name) is not None:
                try:
                    paths.setdefault(real, prefix + name)
                except TypeError:  # unhashable
                    pass
    return paths


def function_path(fn: Any) -> str | None:
    """The ``torch._numpy`` path of numpy's function ``fn`` (None for anything else)."""
    if "numpy" not in sys.modules:
        return None
    try:
        return _function_paths().get(fn)
    except TypeError:
        return None


def _traceable_array(value: Any) -> bool:
    """Whether torch can share a numpy array read from the frame (a dtype of its, strides >= 0)."""
    return numpy_runtime.array_tensor(value) is not None


def traced(frame: "Frame", var: Var) -> NdarrayVar | None:
    """``var`` as an array in the graph: an :class:`NdarrayVar` as it is, an array read from the
    frame as a graph input (one per array object), an array constant as a constant tensor; None
    for anything else."""
    if isinstance(var, NdarrayVar):
        return var
    if not isinstance(var, ConstVar) or type(var.value).__name__ != "ndarray" or type(var.value).__module__ != "numpy":
        return None
    array = var.value
    if not _traceable_array(array):
        return None
    graph = frame.state.graph
    if isinstance(var, ArrayVar) and var.source is not None:
        known = graph.numpy_arrays.get(id(array))
        if known is not None:
            if known.source != var.source:
                frame.state.guards.same_object(var.source, known.source)
            return known
        tensor = wrap(frame.state, graph.numpy_tensor(array), NumpyTensorSource(var.source))
        made = graph.numpy_arrays[id(array)] = NdarrayVar(tensor, var.source)  # type: ignore[arg-type]
        return made
    if array.size > 4096:
        frame.fail(f"a numpy array constant of {array.size} elements in the graph")
    tensor = graph.call("call_function", torch.tensor, (lift(array.tolist()),),
                        {"dtype": ConstVar(torch.from_numpy(array[:0].copy()).dtype)})
    assert isinstance(tensor, TensorVar)
    return NdarrayVar(tensor)


def _node_arg(frame: "Frame", var: Var) -> Var:
    """``var`` as a node argument: arrays as their tensors, numpy dtypes as their names."""
    array = traced(frame, var)
    if array is not None:
        return array.tensor
    if isinstance(var, TupleVar):
        return TupleVar([_node_arg(frame, v) for v in var.items], tuple_type=var.tuple_type)
    if isinstance(var, ListVar):
        return ListVar([_node_arg(frame, v) for v in var.items])
    if isinstance(var, ConstVar):
        return ConstVar(_dtype_name(var.value))
    return var


def _dtype_name(value: Any) -> Any:
    """A numpy dtype or scalar type as the name ``torch._numpy`` reads (``"float32"``)."""
    np = sys.modules.get("numpy")
    if np is None:
        return value
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and (issubclass(value, np.generic) or value in (bool, int, float, complex)):
        return np.dtype(value).name  # ``dtype=float``: numpy's float64
    if isinstance(value, (tuple, list)):
        return type(value)(_dtype_name(v) for v in value)
    return value


def _arrays_of(result: Var, given: list[Var]) -> Var:
    """A traced call's result with each tensor an array (an argument's own array where the call
    gave its tensor back: ``np.asarray(a) is a``)."""
    if isinstance(result, TensorVar):
        for var in given:
            if isinstance(var, NdarrayVar) and var.tensor is result:
                return var
        return NdarrayVar(result)
    if isinstance(result, TupleVar):
        return TupleVar([_arrays_of(v, given) for v in result.items], tuple_type=result.tuple_type)
    if isinstance(result, ListVar):
        return ListVar([_arrays_of(v, given) for v in result.items])
    return result


def _holds_array(var: Var, tensors: bool = False) -> bool:
    """Whether ``var`` (or an item of it) is an array (or, with ``tensors``, a tensor)."""
    if isinstance(var, (TupleVar, ListVar)):
        return any(_holds_array(v, tensors) for v in var.items)
    return isinstance(var, NdarrayVar) or (tensors and isinstance(var, TensorVar)) or (
        isinstance(var, ConstVar) and traced_candidate(var))


def traced_candidate(var: ConstVar) -> bool:
    """An array read from the frame that torch can share."""
    return isinstance(var, ArrayVar) and var.source is not None and _traceable_array(var.value)


def _hinted(var: Var) -> Any:
    """``var``'s Python value, a symbolic size by its value in this capture (not guarded)."""
    if isinstance(var, SymVar):
        hint = getattr(var.value.node, "hint", None)
        if hint is None:
            raise NotConstant("a size only the data decides")
        return hint
    if isinstance(var, (TupleVar, ListVar)):
        items = [_hinted(v) for v in var.items]
        return items if isinstance(var, ListVar) else tuple(items)
    return python_value(var, specialize=False)


def _trace(frame: "Frame", target: Any, args: list[Var], kwargs: dict[str, Var]) -> Var:
    node_args = tuple(_node_arg(frame, a) for a in args)
    node_kwargs = {k: _node_arg(frame, v) for k, v in kwargs.items()}
    result = frame.state.graph.call("call_function", target, node_args, node_kwargs)
    return _arrays_of(result, [traced(frame, a) or a for a in args])


def call_function(frame: "Frame", fn: Any, args: list[Var], kwargs: dict[str, Var]) -> Var | None:
    """A call of numpy's ``fn``: traced where it takes an array or a tensor, or makes an array from
    constants (as torch.compile traces it); None where it computes a number from constants (the
    caller folds it)."""
    path = function_path(fn)
    if path is None:
        return None
    if not any(_holds_array(v, tensors=True) for v in [*args, *kwargs.values()]) and is_pure_function(fn):
        try:  # on the sizes' values, without guarding them: np.ones((2, n)) stays symbolic
            py_args = [_hinted(a) for a in args]
            py_kwargs = {k: _hinted(v) for k, v in kwargs.items()}
        except NotConstant:
            py_args = None
        if py_args is not None and not isinstance(fn(*py_args, **py_kwargs), sys.modules["numpy"].ndarray):
            return None  # a number from numbers (np.sqrt(n)): the caller folds it
    return _trace(frame, numpy_runtime.numpy_function, [ConstVar(path), *args], kwargs)


def from_tensor(frame: "Frame", tensor: TensorVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``tensor.numpy(force=...)``: the same memory as an array. What eager refuses (a tensor that
    requires grad, on another device, of a dtype numpy has not) without ``force`` breaks the
    graph there, so that eager raises its own error."""
    try:
        force = bool(python_value(kwargs["force"] if "force" in kwargs else args[0] if args else ConstVar(False)))
    except NotConstant:
        frame.fail("Tensor.numpy() with a computed force argument")
    fake = tensor.fake
    if fake.dtype in _NOT_NUMPY:
        frame.fail(f"Tensor.numpy() of a {fake.dtype} tensor (numpy has no such dtype)")
    if not force and (fake.requires_grad and torch.is_grad_enabled() or fake.device.type != "cpu"):
        frame.fail("Tensor.numpy() of a tensor that requires grad or is not on the CPU (eager raises)")
    graph = frame.state.graph
    if force and fake.requires_grad:
        tensor = graph.call("call_method", "detach", (tensor,), {})  # type: ignore[assignment]
    if force and fake.device.type != "cpu":
        tensor = graph.call("call_method", "cpu", (tensor,), {})  # type: ignore[assignment]
    return NdarrayVar(tensor)


#: the keyword arguments each of torch's array constructors takes after the array, and whether
#: it copies by default
_TENSOR_CTORS: dict[Any, tuple[tuple[str, ...], bool]] = {
    torch.from_numpy: ((), False),
    torch.as_tensor: (("dtype", "device"), False),
    torch.tensor: (("dtype", "device", "requires_grad", "pin_memory"), True),
    torch.asarray: (("dtype", "device", "copy", "requires_grad"), False),
}


def to_tensor(frame: "Frame", fn: Any, var: Var, args: list[Var], kwargs: dict[str, Var]) -> Var | None:
    """``torch.from_numpy(a)`` / ``as_tensor`` / ``tensor`` / ``asarray`` of an array: its tensor
    (sharing its memory), converted in the graph to the ``dtype``/``device`` asked for and copied
    where ``fn`` copies; None when ``fn`` is no such constructor or ``var`` no array."""
    if fn not in _TENSOR_CTORS:
        return None
    array = traced(frame, var)
    if array is None and fn is not torch.from_numpy and isinstance(var, (ListVar, TupleVar)) and _holds_array(var):
        made = _trace(frame, numpy_runtime.numpy_function, [ConstVar("array"), var], {})  # ``torch.tensor([a, b])``
        array = made if isinstance(made, NdarrayVar) else None
    if array is None:
        return None
    names, copies = _TENSOR_CTORS[fn]
    if args or set(kwargs) - set(names):  # what torch refuses raises from its own call
        frame.fail(f"{fn.__name__} of a numpy array with arguments {len(args)}, {sorted(kwargs)}")
    try:
        given = {k: python_value(v) for k, v in kwargs.items()}
    except NotConstant:
        frame.fail(f"{fn.__name__} of a numpy array with a computed dtype or device")
    if given.get("requires_grad") or given.get("pin_memory"):
        frame.fail(f"{fn.__name__} of a numpy array with requires_grad or pin_memory (a new leaf)")
    copy = given.get("copy")
    copy = copies if copy is None else copy
    graph = frame.state.graph
    if given.get("dtype") is None and given.get("device") is None:
        return graph.call("call_method", "clone", (array.tensor,), {}) if copy else array.tensor
    to = {k: ConstVar(given[k]) for k in ("dtype", "device") if given.get(k) is not None}
    return graph.call("call_method", "to", (array.tensor,), {**to, "copy": ConstVar(bool(copy))})


# -- the protocols of an array ------------------------------------------------------------------

def array_attr(frame: "Frame", array: NdarrayVar, name: str) -> Var:
    """``array.name``: metadata from the fake tensor, views in the graph, anything else a method."""
    fake = array.tensor.fake
    if name in ("shape", "ndim"):  # a shape is a tuple (its sizes symbolic where the tensor's are)
        value = load_attr(frame, array.tensor, name)
        if isinstance(value, ConstVar) and isinstance(value.value, torch.Size):
            return ConstVar(tuple(value.value))
        if isinstance(value, TupleVar):
            return TupleVar(value.items)
        return value
    if name == "size":
        return frame.state.graph.call("call_method", "numel", (array.tensor,), {})
    if name == "dtype":
        return ConstVar(sys.modules["numpy"].dtype(numpy_runtime.tnp.ndarray(fake).dtype.name))
    if name == "itemsize":
        return ConstVar(fake.element_size())
    if name == "nbytes":
        return ConstVar(fake.element_size() * fake.numel())
    if name == "strides":
        return ConstVar(tuple(s * fake.element_size() for s in fake.stride()))
    if name in _VIEW_ATTRS:
        return _trace(frame, numpy_runtime.numpy_attr, [ConstVar(name), array], {})
    return NdarrayMethod(array, name)


@handles_attr(NdarrayVar)
def _attr(frame: "Frame", array: NdarrayVar, name: str) -> Var:
    return array_attr(frame, array, name)


@handles_call(NdarrayMethod)
def _call_method(frame: "Frame", method: NdarrayMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    if method.name in _DATA_METHODS:
        frame.fail(f"ndarray.{method.name}() needs the array's data (graph break)")
    return _trace(frame, numpy_runtime.numpy_method, [ConstVar(method.name), method.array, *args], kwargs)


@handles_len(NdarrayVar)
def _len(frame: "Frame", array: NdarrayVar) -> Var:
    if array.tensor.fake.dim() == 0:
        frame.fail("len() of a 0-d array")
    return lift(int(array.tensor.fake.shape[0]))


@handles_truth(NdarrayVar)
def _truth(frame: "Frame", array: NdarrayVar) -> bool:
    frame.fail("the truth of a numpy array needs its data (graph break)")
    raise AssertionError


@handles_iter(NdarrayVar)
def _rows(frame: "Frame", array: NdarrayVar) -> list[Var]:
    if array.tensor.fake.dim() == 0:
        frame.fail("iteration over a 0-d array")
    return [operator_on(frame, "[]", [array, ConstVar(i)]) for i in range(int(array.tensor.fake.shape[0]))]


_OPERATORS = {**BINARY_OPS, **COMPARE_OPS}
_NAMES = {symbol: op.__name__ for symbol, op in _OPERATORS.items()}


def operator_on(frame: "Frame", name: str, operands: list[Var]) -> Var:
    """The operator ``name`` (a binary operator, a comparison, ``[]``, ``[]=``) on operands of
    which at least one is an array. With a tensor, torch's semantics (eager's ndarray defers to
    the tensor); otherwise numpy's."""
    graph = frame.state.graph
    if name == "[]":
        return _trace(frame, numpy_runtime.numpy_method, [ConstVar("__getitem__"), *operands], {})
    if name == "[]=":
        _trace(frame, numpy_runtime.numpy_method, [ConstVar("__setitem__"), *operands], {})
        return ConstVar(None)
    op = _OPERATORS[name]
    if any(isinstance(v, TensorVar) for v in operands):
        if name.endswith("=") and name not in COMPARE_OPS and not isinstance(operands[0], TensorVar):
            op = BINARY_OPS[name[:-1]]  # ``a += t``: the array's ``__iadd__`` defers to the tensor
        return graph.call("call_function", op, tuple(_node_arg(frame, v) for v in operands), {})
    result = _trace(frame, numpy_runtime.numpy_operator, [ConstVar(_NAMES[name]), *operands], {})
    if name.endswith("=") and name not in COMPARE_OPS and isinstance(result, NdarrayVar) \
            and result.tensor is traced(frame, operands[0]).tensor:  # type: ignore[union-attr]
        return traced(frame, operands[0])  # type: ignore[return-value]
    return result


def unary(frame: "Frame", name: str, array: Var) -> Var:
    """``-a``, ``+a``, ``~a`` of an array."""
    return _trace(frame, numpy_runtime.numpy_method, [ConstVar(f"__{name}__"), array], {})


def _operands_fit(operands: list[Var]) -> bool:
    """Whether every operand is something numpy and torch take in the graph (no object of a class
    that writes its own operators)."""
    def fits(var: Var) -> bool:
        if isinstance(var, (NdarrayVar, TensorVar, ConstVar)):
            return True
        if isinstance(var, (TupleVar, ListVar)):
            return all(fits(v) for v in var.items)
        return isinstance(var, (SymVar, SliceVar))
    return all(fits(v) for v in operands)


_TRACED_OPERATORS = frozenset({*_OPERATORS, "[]", "[]="})


@handles_operator(NdarrayVar)
def _operator(frame: "Frame", name: str, operands: list[Var]) -> Var | None:
    if name == "in":
        frame.fail("`in` of a numpy array needs its data (graph break)")
    if name not in _TRACED_OPERATORS or not _operands_fit(operands):
        return None
    return operator_on(frame, name, operands)


@handles_operator(ArrayVar)
def _frame_array_operator(frame: "Frame", name: str, operands: list[Var]) -> Var | None:
    """An array read from the frame in an operator: traced (a graph input) unless ``in`` asks for
    its elements, which fold as before."""
    if name not in _TRACED_OPERATORS or not _operands_fit(operands):
        return None
    if not any(isinstance(v, ArrayVar) and traced_candidate(v) for v in operands):
        return None
    return operator_on(frame, name, operands)


def frame_array_attr(frame: "Frame", var: ArrayVar, name: str) -> Var | None:
    """``a.name`` of an array read from the frame: traced as :func:`array_attr` unless ``name``
    reads its elements into Python values (then None: the caller folds it)."""
    if name in _DATA_METHODS or not traced_candidate(var):
        return None
    array = traced(frame, var)
    assert array is not None
    return array_attr(frame, array, name)


__all__ = ["NdarrayMethod", "NdarrayVar", "array_attr", "call_function", "frame_array_attr",
           "from_tensor", "function_path", "operator_on", "to_tensor", "traced", "traced_candidate", "unary"]
