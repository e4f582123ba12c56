"""Pointwise lowerings: elementwise math with torch's type promotion, where, clamp, casts, creation."""
from __future__ import annotations

import math
from typing import Any, Callable

import sympy
import torch

from .. import indexing, ir
from ..virtualized import ops
from .registry import (Kind, NotLowerable, aten, broadcast_shapes, check_device, constant_node, is_ir,
                       loader_for, promote, register)


def pointwise(fn: Callable, args: list, kind: Kind, compute: torch.dtype | None = None
              ) -> ir.Pointwise:
    """Elementwise ``fn`` over broadcast ``args`` (IR nodes or Python scalars)."""
    comp, result = promote(args, kind)
    if compute is not None:
        comp = compute
    shape = broadcast_shapes(*[a.get_size() for a in args if is_ir(a)])
    loaders = [loader_for(a, shape, comp) for a in args]

    # arithmetic on bools gives ints in C++ and Triton (True + True == 2): a bool result is cast,
    # so that a fused consumer reads the value the buffer would hold
    cast = result != comp or result == torch.bool

    def inner(idx: Any) -> Any:
        value = fn(*[load(idx) for load in loaders])
        return ops.to_dtype(value, result) if cast else value
    return ir.Pointwise(shape, result, inner)


def _op(name: str) -> Callable:
    return lambda *vals: getattr(ops, name)(*vals)


def _register_simple(targets: list, name: str, kind: Kind) -> None:
    fn = _op(name)
    register(*targets)(lambda *args: pointwise(fn, list(args), kind))


_UNARY_FLOAT = "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh erf erfc sigmoid reciprocal".split()
for _n in _UNARY_FLOAT:
    _register_simple([getattr(aten, _n).default], _n, Kind.INT_TO_FLOAT)
for _n in "neg abs floor ceil trunc sign".split():
    _register_simple([getattr(aten, _n).default], _n, Kind.DEFAULT)
_register_simple([aten.round.default], "round", Kind.DEFAULT)


@register(aten.bitwise_not.default)
def _bitwise_not(x: ir.IRNode) -> ir.Pointwise:
    name = "logical_not" if x.get_dtype() == torch.bool else "bitwise_not"
    return pointwise(_op(name), [x], Kind.DEFAULT)
_register_simple([aten.relu.default], "relu", Kind.DEFAULT)
for _n in "isnan isinf".split():
    _register_simple([getattr(aten, _n).default], _n, Kind.ALWAYS_BOOL)
_register_simple([aten.logical_not.default], "logical_not", Kind.ALWAYS_BOOL)

for _target, _n, _kind in [
    (aten.mul, "mul", Kind.DEFAULT),
    (aten.maximum, "maximum", Kind.DEFAULT),
    (aten.minimum, "minimum", Kind.DEFAULT),
    (aten.remainder, "remainder", Kind.DEFAULT),
    (aten.fmod, "fmod", Kind.DEFAULT),
    (aten.atan2, "atan2", Kind.INT_TO_FLOAT),
    (aten.copysign, "copysign", Kind.INT_TO_FLOAT),
    (aten.hypot, "hypot", Kind.DEFAULT),
    (aten.pow, "pow", Kind.BOOL_TO_LONG),
    (aten.eq, "eq", Kind.ALWAYS_BOOL),
    (aten.ne, "ne", Kind.ALWAYS_BOOL),
    (aten.lt, "lt", Kind.ALWAYS_BOOL),
    (aten.le, "le", Kind.ALWAYS_BOOL),
    (aten.gt, "gt", Kind.ALWAYS_BOOL),
    (aten.ge, "ge", Kind.ALWAYS_BOOL),
    (aten.bitwise_and, "bitwise_and", Kind.DEFAULT),
    (aten.bitwise_or, "bitwise_or", Kind.DEFAULT),
    (aten.bitwise_xor, "bitwise_xor", Kind.DEFAULT),
]:
    _register_simple([_target], _n, _kind)

# aten's own fast cases of a floating tensor to a constant power, with its arithmetic (for float32
# and float64 the same values as eager): vector pow is an order of magnitude slower than a
# multiplication (HF's GELU takes x ** 3.0 in every GPT-2-style MLP). Square roots only in
# float32 and float64: eager's CPU float16 takes std::pow there, which differs on -0.0 and -inf.
_POW_CASES: dict[float, Callable] = {
    2.0: lambda x: ops.mul(x, x),
    3.0: lambda x: ops.mul(ops.mul(x, x), x),
    -2.0: lambda x: ops.reciprocal(ops.mul(x, x)),
    -1.0: lambda x: ops.reciprocal(x),
    0.5: lambda x: ops.sqrt(x),
    -0.5: lambda x: ops.rsqrt(x),
}
_ROOTS = (0.5, -0.5)


@register(aten.pow.Tensor_Scalar)
def _pow_scalar(a: Any, b: Any) -> ir.Pointwise:
    if is_ir(a) and a.get_dtype().is_floating_point and isinstance(b, (int, float)) \
            and not isinstance(b, bool) and float(b) in _POW_CASES \
            and (float(b) not in _ROOTS or a.get_dtype() in (torch.float32, torch.float64)):
        return pointwise(_POW_CASES[float(b)], [a], Kind.DEFAULT)
    return pointwise(_op("pow"), [a, b], Kind.BOOL_TO_LONG)


for _target, _n in [(aten.logical_and, "logical_and"), (aten.logical_or, "logical_or"),
                    (aten.logical_xor, "logical_xor")]:
    register(_target)(lambda a, b, _n=_n: pointwise(_op(_n), [a, b], Kind.ALWAYS_BOOL,
                                                       compute=torch.bool))


def _make_add(name: str) -> Callable:
    def lower(a: Any, b: Any, alpha: Any = 1) -> ir.Pointwise:
        if alpha != 1:
            comp, _ = promote([a, b], Kind.DEFAULT)
            return pointwise(lambda x, y: getattr(ops, name)(x, ops.mul(y, ops.constant(alpha, comp))),
                             [a, b], Kind.DEFAULT)
        return pointwise(_op(name), [a, b], Kind.DEFAULT)
    return lower


register(aten.add.Tensor, aten.add.Scalar)(_make_add("add"))
register(aten.sub.Tensor, aten.sub.Scalar)(_make_add("sub"))


@register(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(a: Any, b: Any, alpha: Any = 1) -> ir.Pointwise:
    if alpha != 1:
        raise NotLowerable("rsub with alpha")
    return _make_add("sub")(b, a)


@register(aten.div.Tensor, aten.div.Scalar)
def _div(a: Any, b: Any) -> ir.Pointwise:
    return pointwise(_op("truediv"), [a, b], Kind.INT_TO_FLOAT)


@register(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(a: Any, b: Any, rounding_mode: str | None = None) -> ir.Pointwise:
    if rounding_mode is None:
        return _div(a, b)
    comp, _ = promote([a, b], Kind.DEFAULT)
    if comp.is_floating_point:
        rnd = "floor" if rounding_mode == "floor" else "trunc"
        return pointwise(lambda x, y: getattr(ops, rnd)(ops.truediv(x, y)), [a, b], Kind.DEFAULT)
    name = "floordiv" if rounding_mode == "floor" else "truncdiv"
    return pointwise(_op(name), [a, b], Kind.DEFAULT)


@register(aten.floor_divide.default, aten.floor_divide.Scalar)
def _floor_divide(a: Any, b: Any) -> ir.Pointwise:
    return _div_mode(a, b, "floor")


@register(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(cond: Any, a: Any, b: Any) -> ir.Pointwise:
    comp, result = promote([a, b], Kind.NO_OPMATH)
    shape = broadcast_shapes(*[x.get_size() for x in (cond, a, b) if is_ir(x)])
    lc = loader_for(cond, shape, torch.bool)
    la, lb = loader_for(a, shape, result), loader_for(b, shape, result)
    return ir.Pointwise(shape, result, lambda idx: ops.where(lc(idx), la(idx), lb(idx)))


@register(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def _masked_fill(x: ir.IRNode, mask: Any, value: Any) -> ir.Pointwise:
    if is_ir(value):
        if value.get_size():
            raise NotLowerable("masked_fill with a non-scalar value")
        value_node = value
    else:
        value_node = value
    out = _where(mask, value_node if is_ir(value_node) else value, x)
    if out.get_dtype() != x.get_dtype() or list(out.get_size()) != list(x.get_size()):
        load = out.make_loader()
        dtype = x.get_dtype()
        return ir.Pointwise(x.get_size(), dtype, lambda idx: ops.to_dtype(load(idx), dtype))
    return out


@register(aten.clamp.default, aten.clamp.Tensor)
def _clamp(x: Any, min: Any = None, max: Any = None) -> ir.IRNode:
    out = x
    if min is not None:
        out = pointwise(_op("maximum"), [out, min], Kind.DEFAULT)
    if max is not None:
        out = pointwise(_op("minimum"), [out, max], Kind.DEFAULT)
    return out


@register(aten.clamp_min.default, aten.clamp_min.Tensor)
def _clamp_min(x: Any, min: Any) -> ir.IRNode:
    return _clamp(x, min=min)


@register(aten.clamp_max.default, aten.clamp_max.Tensor)
def _clamp_max(x: Any, max: Any) -> ir.IRNode:
    return _clamp(x, max=max)


@register(aten.gelu.default)
def _gelu(x: ir.IRNode, approximate: str = "none") -> ir.Pointwise:
    if approximate == "tanh":
        def fn(v: Any) -> Any:
            inner = ops.mul(ops.constant(0.7978845608028654, torch.float32),
                            ops.add(v, ops.mul(ops.constant(0.044715, torch.float32), ops.mul(v, ops.mul(v, v)))))
            return ops.mul(ops.mul(ops.constant(0.5, torch.float32), v),
                           ops.add(ops.constant(1.0, torch.float32), ops.tanh(inner)))
    else:
        def fn(v: Any) -> Any:
            half = ops.constant(0.5, torch.float32)
            return ops.mul(ops.mul(v, half),
                           ops.add(ops.constant(1.0, torch.float32),
                                   ops.erf(ops.mul(v, ops.constant(0.7071067811865476, torch.float32)))))
    if x.get_dtype() == torch.float64:
        raise NotLowerable("gelu float64")
    return pointwise(fn, [x], Kind.DEFAULT, compute=torch.float32)


@register(aten._to_copy.default)
def _to_copy(x: ir.IRNode, dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None, non_blocking: bool = False, memory_format: Any = None) -> ir.Pointwise:
    check_device(device)
    dtype = dtype or x.get_dtype()
    load = x.make_loader()
    return ir.Pointwise(x.get_size(), dtype, lambda idx: ops.to_dtype(load(idx), dtype))


@register(aten.clone.default, aten.lift_fresh_copy.default)
def _clone(x: ir.IRNode, memory_format: Any = None) -> ir.Pointwise:
    return ir.Pointwise(x.get_size(), x.get_dtype(), x.make_loader())


@register(aten.copy.default)
def _copy(dst: ir.IRNode, src: Any, non_blocking: bool = False) -> ir.Pointwise:
    dtype = dst.get_dtype()
    return ir.Pointwise(dst.get_size(), dtype, loader_for(src, dst.get_size(), dtype))


@register(aten.copy_.default)
def _copy_(dst: ir.IRNode, src: Any, non_blocking: bool = False) -> ir.MutationBuffer:
    """A graph input's new value (ember_aot keeps an inference graph's input mutations as
    ``copy_``), computed by the kernel that stores it (``ir.MutationBuffer``); into anything
    else the graph does not take (``GraphLowering.new_mutation_buffer``), the aten kernel."""
    return ir.current_graph().new_mutation_buffer(dst, _copy(dst, src))


@register(aten.fill.Scalar)
def _fill(x: ir.IRNode, value: Any) -> ir.Pointwise:
    return constant_node(value, x.get_size(), x.get_dtype())


@register(aten.full.default)
def _full(size: list, fill_value: Any, dtype: torch.dtype | None = None, layout: Any = None,
          device: Any = None, pin_memory: Any = None) -> ir.Pointwise:
    check_device(device)
    if dtype is None:
        dtype = torch.get_default_dtype() if isinstance(fill_value, float) else (
            torch.bool if isinstance(fill_value, bool) else torch.int64)
    return constant_node(fill_value, size, dtype)


@register(aten.scalar_tensor.default)
def _scalar_tensor(value: Any, dtype: torch.dtype | None = None, layout: Any = None,
                   device: Any = None, pin_memory: Any = None) -> ir.Pointwise:
    return _full([], value, dtype or torch.get_default_dtype(), device=device)


@register(aten.full_like.default)
def _full_like(x: ir.IRNode, fill_value: Any, dtype: torch.dtype | None = None, layout: Any = None,
               device: Any = None, pin_memory: Any = None, memory_format: Any = None) -> ir.Pointwise:
    return _full(x.get_size(), fill_value, dtype or x.get_dtype(), device=device)


@register(aten.zeros.default)
def _zeros(size: list, dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
           pin_memory: Any = None) -> ir.Pointwise:
    return _full(size, 0, dtype or torch.get_default_dtype(), device=device)


@register(aten.ones.default)
def _ones(size: list, dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
          pin_memory: Any = None) -> ir.Pointwise:
    return _full(size, 1, dtype or torch.get_default_dtype(), device=device)


@register(aten.arange.start_step)
def _arange(start: Any, end: Any, step: Any = 1, dtype: torch.dtype | None = None, layout: Any = None,
            device: Any = None, pin_memory: Any = None) -> ir.Pointwise:
    if dtype is None:
        dtype = torch.int64 if all(isinstance(v, (int, sympy.Basic)) for v in (start, end, step)) \
            else torch.get_default_dtype()
    n = _arange_length(start, end, step)
    if dtype.is_floating_point or not all(isinstance(v, int) for v in (start, step)):
        def inner(idx: Any) -> Any:
            i = ops.index_expr(idx[0], torch.float64)
            v = ops.add(ops.mul(i, ops.constant(step, torch.float64)), ops.constant(start, torch.float64))
            return ops.to_dtype(v, dtype)
        return ir.Pointwise([n], dtype, inner)
    return ir.Pointwise([n], dtype, lambda idx: ops.index_expr(idx[0] * step + start, dtype))


def _arange_length(start: Any, end: Any, step: Any) -> Any:
    """Number of elements of ``arange(start, end, step)``; with a symbolic bound (an int
    start and step), an expression, when it is provably not negative."""
    if not any(isinstance(v, sympy.Basic) for v in (start, end, step)):
        return max(0, math.ceil((end - start) / step))
    if not (isinstance(start, int) and isinstance(step, int) and step > 0):
        raise NotLowerable("arange with a symbolic start or step")
    span = sympy.sympify(end) - start
    if not (span + step - 1).is_nonnegative:
        raise NotLowerable(f"arange of {span} elements")
    return indexing.FloorDiv(span + step - 1, step)


@register(aten.arange.default)
def _arange_end(end: Any, dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
                pin_memory: Any = None) -> ir.Pointwise:
    return _arange(0, end, 1, dtype)


@register(aten.arange.start)
def _arange_start(start: Any, end: Any, dtype: torch.dtype | None = None, layout: Any = None,
                  device: Any = None, pin_memory: Any = None) -> ir.Pointwise:
    return _arange(start, end, 1, dtype)


@register(torch.ops.prims.div.default)
def _prims_div(a: Any, b: Any) -> ir.Pointwise:
    comp, _ = promote([a, b], Kind.DEFAULT)
    return pointwise(_op("truediv" if comp.is_floating_point else "truncdiv"), [a, b], Kind.DEFAULT)


@register(torch.ops.prims.convert_element_type.default)
def _prims_convert(x: ir.IRNode, dtype: torch.dtype) -> ir.Pointwise:
    return _to_copy(x, dtype)
