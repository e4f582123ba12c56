"""The ``libdevice`` that generated Triton kernels call, on the GPU and under the interpreter.

On a GPU (or when compiling to PTX) this is ``triton.language.extra.cuda.libdevice``. Triton's
interpreter (``TRITON_INTERPRET=1``) cannot run extern functions, so there the same names are
provided by numpy on the interpreter's tensors: the generated source is identical in both cases.
Two bugs of Triton 3.6's interpreter that generated kernels meet are patched here too.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


class _InterpreterLibdevice:
    """numpy implementations of the libdevice functions the code generator emits."""

    def __init__(self) -> None:
        unary = {"tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
                 "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
                 "acosh": np.arccosh, "atanh": np.arctanh, "expm1": np.expm1, "log1p": np.log1p,
                 "log10": np.log10, "trunc": np.trunc, "nearbyint": np.rint, "erfc": _erfc}
        binary = {"pow": np.power, "atan2": np.arctan2, "fmod": np.fmod, "hypot": np.hypot,
                  "copysign": np.copysign}
        for name, fn in {**unary, **binary}.items():
            setattr(self, name, _elementwise(fn))


def _erfc(x: np.ndarray) -> np.ndarray:
    import math
    return np.vectorize(math.erfc, otypes=[x.dtype])(x)


def _elementwise(fn: Callable) -> Callable:
    def call(*args: Any) -> Any:
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle
        first = args[0]
        datas = np.broadcast_arrays(*[a.handle.data for a in args])
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*datas)).astype(datas[0].dtype)
        # the interpreter holds a scalar as a 1-element array: the result's rank is the arguments'
        shapes = [a.type.get_block_shapes() for a in args if a.type.is_block()]
        ty = tl.core.block_type(first.dtype, list(np.broadcast_shapes(*shapes))) if shapes else first.dtype
        return tl.core.tensor(TensorHandle(out, first.dtype), ty)
    return call


def _patch_interpreter_index() -> None:
    """Triton 3.6's interpreter turns ``range(0, n, BLOCK)`` bounds into 1-element arrays and calls
    ``int()`` on them, which numpy >= 2.4 refuses; index through ``.item()`` instead."""
    from triton.runtime import interpreter
    original = interpreter._patch_lang_tensor

    def patch(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))
    interpreter._patch_lang_tensor = patch


def _patch_interpreter_splat() -> None:
    """Triton 3.6's interpreter gives a comparison's result the element type of its operands
    (``a != a`` on float32 scalars holds bools typed float32); splatting such a scalar to a block
    (``mask | (a != a)``) then makes float32 data that ``|`` refuses. Splat to the block type's
    element type, which the language computed correctly (``int1``), as compiled code does."""
    from triton.runtime import interpreter

    def create_splat(self: Any, ret_ty: Any, arg: Any) -> Any:
        dtype = ret_ty.scalar
        value = arg.data.reshape(-1)[0] if arg.data.shape else arg.data
        return interpreter.TensorHandle(np.full(ret_ty.shape, value, dtype=interpreter._get_np_dtype(dtype)), dtype)
    interpreter.InterpreterBuilder.create_splat = create_splat


if interpreting():
    libdevice: Any = _InterpreterLibdevice()
    _patch_interpreter_index()
    _patch_interpreter_splat()
else:
    from triton.language.extra.cuda import libdevice  # noqa: F401
