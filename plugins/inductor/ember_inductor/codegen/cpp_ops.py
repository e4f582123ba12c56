"""How C++ kernels write values: the C++ types of dtypes, index expressions (int64 arithmetic),
constants, and ``CODE_FOR_OP``, the table of elementwise ops (``kernel.Kernel``); the ``e_*``
functions are the prelude's (``cpp_prelude``). Half and bfloat16 values are computed in float."""
from __future__ import annotations

import math
from typing import Any

import torch

from ..expr_printer import ExprPrinter
from .kernel import templates

CTYPE = {torch.float32: "float", torch.float64: "double", torch.float16: "uint16_t",
         torch.bfloat16: "uint16_t", torch.int64: "int64_t", torch.int32: "int32_t",
         torch.int16: "int16_t", torch.int8: "int8_t", torch.uint8: "uint8_t", torch.bool: "bool"}
COMPUTE = {torch.float16: "float", torch.bfloat16: "float"}


def ctype(dtype: torch.dtype) -> str:
    if dtype not in CTYPE:
        raise NotImplementedError(f"dtype {dtype} in C++ kernels")
    return CTYPE[dtype]


def compute_ctype(dtype: torch.dtype) -> str:
    return COMPUTE.get(dtype, ctype(dtype))


class CppPrinter(ExprPrinter):
    """Index expressions as C++: ``/`` of int64 is a floor division (indices are never negative)."""

    max_min = {"max": "std::max<int64_t>", "min": "std::min<int64_t>"}

    def floordiv(self, a: str, b: str) -> str:
        return f"({a} / {b})"

    def truediv(self, a: str, b: str) -> str:
        return f"(static_cast<double>({a}) / static_cast<double>({b}))"


#: A sympy index expression as C++ (int64 arithmetic).
cexpr = CppPrinter()


def constant(value: Any, dtype: torch.dtype) -> str:
    t = compute_ctype(dtype)
    if dtype == torch.bool:
        return "true" if value else "false"
    if isinstance(value, float) or dtype.is_floating_point:
        v = float(value)
        if math.isnan(v):
            return f"std::numeric_limits<{t}>::quiet_NaN()"
        if math.isinf(v):
            return f"{'-' if v < 0 else ''}std::numeric_limits<{t}>::infinity()"
        return f"static_cast<{t}>({v!r})"
    return f"static_cast<{t}>({int(value)}LL)"


_UNARY = {
    "neg": "(-{0})", "abs": "e_abs({0})", "exp": "e_exp({0})", "exp2": "e_exp2({0})",
    "expm1": "e_expm1({0})", "log": "e_log({0})", "log2": "e_log2({0})",
    "log10": "e_log10({0})", "log1p": "e_log1p({0})", "sqrt": "std::sqrt({0})",
    "rsqrt": "(1 / std::sqrt({0}))", "sin": "e_sin({0})", "cos": "e_cos({0})",
    "tan": "e_tan({0})", "asin": "e_asin({0})", "acos": "e_acos({0})",
    "atan": "e_atan({0})", "sinh": "e_sinh({0})", "cosh": "e_cosh({0})",
    "tanh": "e_tanh({0})", "asinh": "e_asinh({0})", "acosh": "e_acosh({0})",
    "atanh": "e_atanh({0})", "erf": "e_erf({0})", "erfc": "e_erfc({0})",
    "sigmoid": "e_sigmoid({0})", "relu": "e_relu({0})", "floor": "e_floor({0})",
    "ceil": "e_ceil({0})", "trunc": "e_trunc({0})", "round": "e_round({0})", "sign": "e_sign({0})",
    "reciprocal": "(1 / {0})", "logical_not": "(!{0})", "bitwise_not": "(~{0})",
    "isnan": "({0} != {0})", "isinf": "e_isinf({0})", "square": "({0} * {0})",
}
_BINARY = {
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "truediv": "({0} / {1})",
    "floordiv": "e_floordiv({0}, {1})", "truncdiv": "({0} / {1})", "remainder": "e_remainder({0}, {1})",
    "fmod": "e_fmod({0}, {1})", "pow": "e_pow({0}, {1})", "maximum": "e_max({0}, {1})",
    "minimum": "e_min({0}, {1})", "atan2": "e_atan2({0}, {1})", "eq": "({0} == {1})",
    "ne": "({0} != {1})", "lt": "({0} < {1})", "le": "({0} <= {1})", "gt": "({0} > {1})",
    "ge": "({0} >= {1})", "logical_and": "({0} && {1})", "logical_or": "({0} || {1})",
    "logical_xor": "(bool({0}) != bool({1}))", "bitwise_and": "({0} & {1})",
    "bitwise_or": "({0} | {1})", "bitwise_xor": "({0} ^ {1})", "bitwise_left_shift": "({0} << {1})",
    "bitwise_right_shift": "({0} >> {1})", "copysign": "std::copysign({0}, {1})",
    "hypot": "e_hypot({0}, {1})",
}
CODE_FOR_OP = templates(_UNARY | _BINARY | {"where": "e_where({0}, {1}, {2})"})
