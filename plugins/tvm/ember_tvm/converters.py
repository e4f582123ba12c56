"""Converters ember adds to TVM's fx importer for torch-level functions it lacks or mishandles.

TVM's ``from_fx`` knows the normalization *modules* (``nn.BatchNorm2d``, ``nn.GroupNorm``) but
not all of their functional forms, which is what ember's graphs hold once parameters are lifted
to inputs. Each converter takes ``(node, importer)`` (the ``custom_convert_map`` protocol) and
reads its arguments by position or keyword, as the torch signature allows. They serve both
``call_function`` and ``call_method`` nodes of that name.
"""
from __future__ import annotations

from typing import Any, Callable

import torch.fx as fx


def _arg(node: fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _tensor_or_const(importer: Any, node: Any, fill: float, channels: int, dtype: str) -> Any:
    """The Relax value of ``node``, or a constant vector of ``fill`` when it is None."""
    import numpy as np
    from tvm import relax

    if node is None:
        return relax.const(np.full((channels,), fill), dtype)
    return importer.env[node]


def _dtype(x: Any) -> str:
    return str(x.ty.dtype)


def batch_norm(node: fx.Node, importer: Any) -> Any:
    """``F.batch_norm`` in inference form (``training=False``; ``support`` guarantees it)."""
    from tvm import relax

    x = importer.env[node.args[0]]
    channels = int(importer.shape_of(x)[1])
    dtype = _dtype(x)
    mean = _tensor_or_const(importer, _arg(node, 1, "running_mean"), 0.0, channels, dtype)
    var = _tensor_or_const(importer, _arg(node, 2, "running_var"), 1.0, channels, dtype)
    gamma = _tensor_or_const(importer, _arg(node, 3, "weight"), 1.0, channels, dtype)
    beta = _tensor_or_const(importer, _arg(node, 4, "bias"), 0.0, channels, dtype)
    eps = float(_arg(node, 7, "eps", 1e-5))
    result = importer.block_builder.emit(
        relax.op.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=eps, training=False)
    )
    return importer.block_builder.emit(relax.TupleGetItem(result, 0))


def group_norm(node: fx.Node, importer: Any) -> Any:
    """``F.group_norm(input, num_groups, weight, bias, eps)``."""
    from tvm import relax

    x = importer.env[node.args[0]]
    channels = int(importer.shape_of(x)[1])
    dtype = _dtype(x)
    gamma = _tensor_or_const(importer, _arg(node, 2, "weight"), 1.0, channels, dtype)
    beta = _tensor_or_const(importer, _arg(node, 3, "bias"), 0.0, channels, dtype)
    rank = len(importer.shape_of(x))
    return importer.block_builder.emit(
        relax.op.nn.group_norm(
            x, gamma, beta,
            num_groups=int(_arg(node, 1, "num_groups")),
            channel_axis=1,
            axes=list(range(2, rank)),
            epsilon=float(_arg(node, 4, "eps", 1e-5)),
        )
    )


def layer_norm(node: fx.Node, importer: Any) -> Any:
    """``F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)``."""
    x = importer.env[node.args[0]]
    weight = _arg(node, 2, "weight")
    bias = _arg(node, 3, "bias")
    return importer._layer_norm_impl(  # the importer's own lowering, with Nones handled here
        x,
        None if weight is None else importer.env[weight],
        None if bias is None else importer.env[bias],
        float(_arg(node, 4, "eps", 1e-5)),
        tuple(_arg(node, 1, "normalized_shape")),
    )


def masked_fill(node: fx.Node, importer: Any) -> Any:
    """``x.masked_fill(mask, value)`` as ``where(mask, value, x)`` (the importer's own version
    fails on non-finite fill values such as ``-inf``)."""
    from tvm import relax

    x = importer.env[node.args[0]]
    mask = importer.env[_arg(node, 1, "mask")]
    value = _arg(node, 2, "value")
    fill = importer.env[value] if isinstance(value, fx.Node) else relax.const(value, _dtype(x))
    if isinstance(value, fx.Node) and str(fill.ty.dtype) != _dtype(x):
        fill = importer.block_builder.emit(relax.op.astype(fill, _dtype(x)))
    return importer.block_builder.emit(relax.op.where(mask, fill, x))


CUSTOM_CONVERTERS: dict[str, Callable[[fx.Node, Any], Any]] = {
    "batch_norm": batch_norm,
    "group_norm": group_norm,
    "layer_norm": layer_norm,
    "masked_fill": masked_fill,
}
