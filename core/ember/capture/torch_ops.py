"""Which callables become graph nodes, which are folded as constants, which are refused.

A callable from torch's op namespaces (``torch.sin``, ``torch.nn.functional.relu``,
``torch.ops.aten.add``) becomes one fx node. Pure Python helpers (``math``, ``operator`` and
side-effect-free builtins) called on constants are evaluated at capture time. Torch functions
that change global state (seeding, grad mode as a call, default dtype) are refused so that
the capture never runs them once and forgets them.
"""
from __future__ import annotations

import builtins
import inspect
import logging
import math
import operator
import sys
import types
from typing import Any

import torch

_GRAPH_MODULE_PREFIXES = (
    "torch.nn.functional",
    "torch.functional",
    "torch._C",
    "torch.linalg",
    "torch.fft",
    "torch.special",
    "torch.nn.init",
    "torch._tensor",
    "torch.random",
)

_STATEFUL_TORCH = {
    torch.manual_seed,
    torch.seed,
    torch.set_grad_enabled,
    torch.set_default_dtype,
    torch.set_default_device,
    torch.use_deterministic_algorithms,
    torch.set_rng_state,
    torch.get_rng_state,
    torch.save,
    torch.load,
}

# Tensor attributes that are data, not metadata, or that need autograd state we do not model.
UNSUPPORTED_TENSOR_ATTRS = {"grad", "_version", "grad_fn", "_base", "untyped_storage"}
#: calls that always run in Python at a graph break (autograd's engine, not graph ops)
GRAPH_BREAK_CALLS = {"backward", "retain_grad", "register_hook"}

UNSUPPORTED_TENSOR_METHODS = {
    "item", "tolist", "numpy", "__bool__", "__index__", "__int__", "__float__",
    "data_ptr", "register_hook", "retain_grad", "storage", "untyped_storage", "cpu_", "__len__",
    "__iter__", "__array__", "record_stream", "share_memory_", "pin_memory", "set_",
}

PURE_BUILTINS = {
    abs, all, any, bool, callable, chr, complex, divmod, float, format, frozenset, hash, hex,
    int, isinstance, issubclass, len, max, min, oct, ord, pow, repr, round, slice, sorted, str,
    sum, tuple, type, hasattr, id,
}

PURE_MODULES = {"math", "operator", "_operator", "cmath", "string", "keyword", "re", "posixpath", "fnmatch",
                "textwrap"}

# Python modules whose attributes are library code, not user state: read without guards.
TRUSTED_MODULE_PREFIXES = (
    "torch", "math", "operator", "_operator", "builtins", "numpy", "functools", "itertools",
    "collections", "typing", "inspect", "dataclasses", "enum", "abc", "warnings", "logging",
    "types", "copy", "re", "cmath", "random", "sys", "os", "contextlib", "scipy",
)


def module_is_trusted(module: types.ModuleType) -> bool:
    name = module.__name__
    return any(name == p or name.startswith(p + ".") for p in TRUSTED_MODULE_PREFIXES)


def is_stateful_torch(fn: Any) -> bool:
    try:
        return fn in _STATEFUL_TORCH
    except TypeError:
        return False


#: Python functions torch exposes in its own namespace that capture inlines: they call a
#: higher-order operator whose bodies become subgraphs (hops.py)
INLINED_TORCH_FUNCTIONS = {torch.cond}


def is_graph_callable(fn: Any) -> bool:
    """True for torch ops that should become one graph node."""
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return True
    if isinstance(fn, type) or is_stateful_torch(fn) or fn in INLINED_TORCH_FUNCTIONS:
        return False
    module = getattr(fn, "__module__", None)
    if module is None:
        # builtins from torch._C often have no module; recognise them by their owner.
        self_obj = getattr(fn, "__self__", None)
        module = getattr(self_obj, "__name__", "") if isinstance(self_obj, types.ModuleType) else ""
    if module == "torch":
        return callable(fn)
    return any(module == p or module.startswith(p + ".") for p in _GRAPH_MODULE_PREFIXES)


#: what user code asks to learn whether it is being compiled: yes, while ember captures it
COMPILING_QUERIES = {torch.compiler.is_compiling, torch.compiler.is_dynamo_compiling}


def is_pure_function(fn: Any) -> bool:
    """Callables that may be evaluated at capture time when every argument is constant."""
    try:
        if fn in PURE_BUILTINS:
            return True
    except TypeError:
        return False
    module = getattr(fn, "__module__", None)
    if module in PURE_MODULES:
        return True
    self_obj = getattr(fn, "__self__", None)
    if isinstance(fn, types.BuiltinMethodType) and isinstance(
        self_obj, (str, bytes, tuple, int, float, frozenset, torch.Size, torch.dtype, torch.device)
    ):
        return True
    if isinstance(self_obj, types.ModuleType) and self_obj.__name__ in PURE_MODULES:
        return True
    if isinstance(fn, type) and module == "numpy" and any(b.__name__ == "generic" for b in fn.__mro__):
        return True  # a numpy scalar type: np.float64(2.5)
    if type(fn).__name__ == "ufunc" and type(fn).__module__ == "numpy":
        return True  # np.sqrt(64), np.exp(x) of constants (an ``out=`` argument is refused by the caller)
    if isinstance(fn, types.BuiltinMethodType) and type(self_obj).__name__ == "ndarray" \
            and fn.__name__ in _NUMPY_PURE | _NDARRAY_READS:
        return True  # ``a.sum()`` of an array constant (one read from the frame is guarded on its elements)
    if module == "numpy" and getattr(fn, "__name__", None) in _NUMPY_PURE:
        np = sys.modules.get("numpy")
        return np is not None and getattr(np, fn.__name__, None) is fn
    return fn in (inspect.signature, inspect.getfullargspec, inspect.isfunction, inspect.ismethod,
                  inspect.isclass, torch.Size, torch.device, torch.finfo, torch.iinfo, torch.is_grad_enabled,
                  torch.get_default_dtype, torch.is_tensor, torch.is_floating_point,
                  torch.is_complex, torch.typename, logging.getLogger)


#: numpy's functions of arrays and numbers that compute a new value and change nothing (perceiver's
#: ``np.prod`` of a shape), besides its ufuncs
_NUMPY_PURE = frozenset({"prod", "sum", "mean", "max", "min", "amax", "amin", "round", "cumsum", "cumprod",
                         "arange", "linspace", "array_equal", "allclose", "isclose", "ceil", "floor",
                         # types and descriptions of types
                         "dtype", "finfo", "iinfo", "issubdtype", "result_type", "promote_types", "can_cast"})
#: and the methods of an array that read it into a new value
_NDARRAY_READS = frozenset({"tolist", "item", "copy", "astype", "flatten", "any", "all", "argmax", "argmin",
                            "std", "var", "dot"})


BINARY_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
    ">>": operator.rshift,
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "@=": operator.imatmul,
    "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift,
    ">>=": operator.irshift,
}

COMPARE_OPS = {
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, ">=": operator.ge,
}

__all__ = [
    "BINARY_OPS", "COMPARE_OPS", "PURE_BUILTINS", "UNSUPPORTED_TENSOR_ATTRS",
    "UNSUPPORTED_TENSOR_METHODS", "builtins", "is_graph_callable", "is_pure_function",
    "is_stateful_torch", "math", "module_is_trusted",
]
