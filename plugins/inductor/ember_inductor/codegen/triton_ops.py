"""How Triton kernels write values: the Triton types of dtypes, index expressions, constants,
``CODE_FOR_OP`` (the table of elementwise ops, ``kernel.Kernel``: a row's form may depend on
the operands' dtype) and the forms of reductions. Half and bfloat16 values are computed in
float32."""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from ..expr_printer import ExprPrinter
from .kernel import templates

TL = {torch.float32: "tl.float32", torch.float64: "tl.float64", torch.float16: "tl.float16",
      torch.bfloat16: "tl.bfloat16", torch.int64: "tl.int64", torch.int32: "tl.int32",
      torch.int16: "tl.int16", torch.int8: "tl.int8", torch.uint8: "tl.uint8", torch.bool: "tl.int1"}
#: Signature types of symbolic sizes (``i64`` where indices are 64-bit).
SIZE_TYPES = ("i32", "i64")
#: Pointer types of the kernel signature (for ``triton.compile``).
SIGNATURE = {torch.float32: "*fp32", torch.float64: "*fp64", torch.float16: "*fp16",
             torch.bfloat16: "*bf16", torch.int64: "*i64", torch.int32: "*i32", torch.int16: "*i16",
             torch.int8: "*i8", torch.uint8: "*u8", torch.bool: "*i1"}


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def tl_type(dtype: torch.dtype) -> str:
    if dtype not in TL:
        raise NotImplementedError(f"dtype {dtype} in Triton kernels")
    return TL[dtype]


class TritonPrinter(ExprPrinter):
    """Index expressions as Triton (Python's operators on blocks)."""

    max_min = {"max": "tl.maximum", "min": "tl.minimum"}  # a stride torch computes as max(1, size)

    def modular(self, a: str, b: str, c: str) -> str:
        return f"({a if b == '1' else self.floordiv(a, b)} % {c})"


#: A sympy index expression as Triton.
texpr = TritonPrinter()


def literal(value: Any, dtype: torch.dtype) -> str:
    if dtype.is_floating_point:
        f = float(value)
        return f'float("{f}")' if not math.isfinite(f) else repr(f)
    return str(int(value))


def constant(value: Any, dtype: torch.dtype) -> str:
    """A typed 0-d constant: like a value loaded at a fixed index it broadcasts to any block,
    through ``tl.broadcast_to`` and stores too (a ``[1]`` block broadcasts only to 1-D ones)."""
    dtype = compute_dtype(dtype)
    if dtype == torch.bool:
        v = "1" if value else "0"
    elif dtype.is_floating_point:
        v = literal(value, dtype)
    else:  # wrapped into the type's range as eager converts it (uint8 times -1 multiplies by 255)
        info = torch.iinfo(dtype)
        v = str((int(value) - info.min) % (info.max - info.min + 1) + info.min)
    return f"tl.full([], {v}, {tl_type(dtype)})"


def _by_dtype(floating: str, other: str) -> Callable[..., str]:
    """A row with one template for floating operands and another for integer ones."""
    return lambda *args: (floating if args[-1].is_floating_point else other).format(*args)


def _sign(a: str, dtype: torch.dtype) -> str:
    t = tl_type(dtype)
    s = f"(({a} > 0).to({t}) - ({a} < 0).to({t}))"
    return f"tl.where({a} != {a}, {a}, {s})" if dtype.is_floating_point else s


_FMOD = _by_dtype("libdevice.fmod({0}, {1})", "({0} % {1})")


def _remainder(a: str, b: str, dtype: torch.dtype) -> str:
    r = _FMOD(a, b, dtype)
    return f"tl.where(({r} != 0) & (({r} < 0) != ({b} < 0)), {r} + {b}, {r})"


_LIBDEVICE_UNARY = "tan asin acos atan sinh cosh tanh asinh acosh atanh expm1 log1p log10 erfc".split()
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
CODE_FOR_OP = templates({
    "exp": "tl.exp({0})", "exp2": "tl.exp2({0})", "log": "tl.log({0})", "log2": "tl.log2({0})",
    "sqrt": "tl.sqrt({0})", "rsqrt": "tl.rsqrt({0})", "sin": "tl.sin({0})", "cos": "tl.cos({0})",
    "erf": "tl.erf({0})", "abs": "tl.abs({0})", "neg": "(-{0})", "reciprocal": "(1 / {0})",
    "square": "({0} * {0})", "sigmoid": "(1 / (1 + tl.exp(-{0})))", "bitwise_not": "(~{0})",
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "truediv": "({0} / {1})",
    "bitwise_and": "({0} & {1})", "bitwise_or": "({0} | {1})", "bitwise_xor": "({0} ^ {1})",
    "bitwise_left_shift": "({0} << {1})", "bitwise_right_shift": "({0} >> {1})",
    "atan2": "libdevice.atan2({0}, {1})", "copysign": "libdevice.copysign({0}, {1})",
    "hypot": "libdevice.hypot({0}, {1})", "where": "tl.where({0}, {1}, {2})",
    "isnan": "({0} != {0})", "logical_not": "({0} == 0)", "relu": "tl.where({0} < 0, 0, {0})",
    "logical_and": "(({0} != 0) & ({1} != 0))", "logical_or": "(({0} != 0) | ({1} != 0))",
    "logical_xor": "(({0} != 0) ^ ({1} != 0))",
    **{name: f"libdevice.{name}({{0}})" for name in _LIBDEVICE_UNARY},
    **{name: f"({{0}} {op} {{1}})" for name, op in _COMPARE.items()},
}) | {
    "isinf": _by_dtype('(tl.abs({0}) == float("inf"))', "({0} != {0})"),
    "maximum": _by_dtype("tl.where(({0} > {1}) | ({0} != {0}), {0}, {1})", "tl.maximum({0}, {1})"),
    "minimum": _by_dtype("tl.where(({0} < {1}) | ({0} != {0}), {0}, {1})", "tl.minimum({0}, {1})"),
    "floor": _by_dtype("tl.floor({0})", "{0}"), "ceil": _by_dtype("tl.ceil({0})", "{0}"),
    "trunc": _by_dtype("libdevice.trunc({0})", "{0}"), "round": _by_dtype("libdevice.nearbyint({0})", "{0}"),
    "truncdiv": _by_dtype("libdevice.trunc({0} / {1})", "({0} // {1})"),
    "floordiv": _by_dtype("tl.floor({0} / {1})",
                          "tl.where((({0} % {1}) != 0) & (({0} < 0) != ({1} < 0)), ({0} // {1}) - 1, ({0} // {1}))"),
    "fmod": _FMOD, "remainder": _remainder, "sign": _sign,
}


def identity(rtype: str, dtype: torch.dtype) -> Any:
    """The value a reduction of ``rtype`` starts from (and masked-off lanes hold)."""
    if rtype in ("sum", "any"):
        return 0
    if rtype in ("prod", "all"):
        return 1
    if dtype.is_floating_point:
        return float("-inf") if rtype == "max" else float("inf")
    if dtype == torch.bool:
        return 0 if rtype == "max" else 1
    info = torch.iinfo(dtype)
    return info.min if rtype == "max" else info.max


def final(rtype: str, block: str) -> str:
    """The reduction of an ``[XBLOCK, RBLOCK]`` block along its rows."""
    return {"sum": f"tl.sum({block}, 1, keep_dims=True)",
            "prod": f"tl.reduce({block}, 1, _prod_combine, keep_dims=True)",
            "max": f"tl.reduce({block}, 1, _max_combine, keep_dims=True)",
            "min": f"tl.reduce({block}, 1, _min_combine, keep_dims=True)",
            "any": f"(tl.max({block}.to(tl.int8), 1, keep_dims=True) != 0)",
            "all": f"(tl.min({block}.to(tl.int8), 1, keep_dims=True) != 0)"}[rtype]
