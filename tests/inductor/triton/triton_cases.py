"""Lowering cases shared by the interpreter, PTX and GPU tests: (id, function, inputs on a device)."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

Case = tuple[str, Callable, Callable[[str], tuple]]


def _x(dev: str, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape).to(dtype).to(dev)


def _unary(x: torch.Tensor) -> tuple:
    p = x.abs() + 0.5
    return (x.exp(), p.log(), p.sqrt(), p.rsqrt(), x.sin(), x.cos(), x.tanh(), x.sigmoid(), torch.erf(x),
            x.neg(), x.floor(), x.ceil(), x.round(), x.trunc(), torch.expm1(x), torch.log1p(p),
            x.reciprocal(), x.sign(), torch.relu(x), torch.atan(x), p.log2(), torch.exp2(x), x.tan(),
            p.log10(), torch.asinh(x))


def _binary(x: torch.Tensor, y: torch.Tensor, i: torch.Tensor) -> tuple:
    return (x + y, x - 2 * y, x * y, x / (y.abs() + 1), torch.maximum(x, y), torch.minimum(x, y),
            x + i, i * 0.5, torch.pow(x.abs(), 1.5), x ** 2, torch.atan2(x, y), torch.remainder(x, 0.75),
            torch.fmod(x, 0.75), x // 0.25, torch.clamp(x, -0.5, 0.5), torch.hypot(x, y),
            torch.where(x > y, x, 0.0), x.masked_fill(x < 0, float("-inf")))


def _integer(a: torch.Tensor, b: torch.Tensor, m: torch.Tensor) -> tuple:
    return (a + b, a * b, a // b, a % b, torch.div(a, b, rounding_mode="trunc"), a / b, a & b, a | b,
            ~a, ~m, m & (a > 0), torch.logical_xor(m, a > 0), a.abs(), torch.maximum(a, b),
            a.to(torch.int32) * 3, m.to(torch.int64) + 1, torch.where(m, a, b), a.to(torch.int8) * 100)


def _reductions(x: torch.Tensor) -> tuple:
    return (x.sum(1), x.sum(0, keepdim=True), x.sum(), x.mean(1), (x * 0.1 + 1).prod(1), x.amax(1),
            x.amin(0), x.argmax(1), x.argmin(0), x.var(1), x.std(0), torch.logsumexp(x, 1),
            (x > 0).any(1), (x > -3).all(0))


def _row_reductions(x: torch.Tensor) -> tuple:
    """The reductions along rows longer than one block (looped kernels). Columns are left to
    ``reductions_persistent`` and ``reduction_over_rows``: an arg-reduction across 5,000 columns
    costs Triton's interpreter minutes, where the kernel is no different from a short one's."""
    return (x.sum(1), x.sum(), x.mean(1), (x * 0.1 + 1).prod(1), x.amax(1), x.argmax(1), x.var(1),
            torch.logsumexp(x, 1), (x > 0).any(1))


def _nan(x: torch.Tensor) -> tuple:
    x = x.clone()
    x[1, 3] = float("nan")
    x[2, 39] = float("nan")
    return x.amax(1), x.amin(1), torch.maximum(x, torch.zeros_like(x)), x.argmax(1), x.argmin(1), x.sum(1)


def _norms(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple:
    return (torch.softmax(x, -1), torch.log_softmax(x, -1), torch.softmax(x, 0),
            F.layer_norm(x, (x.shape[-1],), w, b), F.gelu(x), F.silu(x),
            (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True))


def _batch_stats(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple:
    """BatchNorm-style statistics: few output rows, long reductions over non-adjacent dims."""
    mean, var = x.mean((0, 2, 3), keepdim=True), x.var((0, 2, 3), unbiased=False, keepdim=True)
    norm = (x - mean) * torch.rsqrt(var + 1e-5) * w[:, None, None] + b[:, None, None]
    return (norm, x.sum((0, 2, 3)), x.var((0, 2, 3)),
            x.amax((0, 2, 3)), (x > 2).any(0).any(1).any(1))


def _views(x: torch.Tensor) -> tuple:
    y = x.view(4, 6, 20)
    return (y.permute(2, 0, 1) * 2, y.transpose(0, 2).reshape(120, 4) + 1, x.t() - 1, y[:, 1:5:2] * 3,
            y.select(1, 3) + 1, x.view(-1)[7:100] + 0, torch.split(x, 5, 1)[1] + 1)


def _indexing(x: torch.Tensor, idx: torch.Tensor, w: torch.Tensor) -> tuple:
    return (torch.cat([x, x * 2, x + 1], 1), torch.cat([x.t().reshape(x.shape[0], -1), x[:, 1::2]], 1) * 2,
            F.pad(x, (2, 3, 1, 0)), F.pad(x, (1, 1), value=-2.0),
            torch.gather(x, 1, idx), x[idx[:, 0]], torch.index_select(x, 0, idx[0]), F.embedding(idx, w) * 2)


def _creation(x: torch.Tensor) -> tuple:
    return (x + torch.arange(10, device=x.device), torch.full((3, 10), 2.5, device=x.device) + x[:3],
            torch.zeros(4, dtype=torch.int64, device=x.device) + 1)


def _chain(x: torch.Tensor) -> torch.Tensor:
    for _ in range(4):
        x = torch.relu(x * 1.1 + 0.1) - torch.sigmoid(x) * 0.5
    return x


def _int_pair(dev: str) -> tuple:
    a = torch.randint(-20, 20, (5, 7))
    b = torch.randint(1, 6, (5, 7)) * torch.where(torch.rand(5, 7) > 0.5, 1, -1)
    return a.to(dev), b.to(dev), (torch.rand(5, 7) > 0.5).to(dev)


def _max_pool(x: torch.Tensor, g: torch.Tensor) -> tuple:
    aten = torch.ops.aten
    values, indices = aten.max_pool2d_with_indices(x.relu(), [3, 3], [2, 2], [1, 1])
    return values * 2, indices, aten.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, indices)


def _scatter(g: torch.Tensor, ids: torch.Tensor, x: torch.Tensor, idx: torch.Tensor, v: torch.Tensor) -> tuple:
    """Atomic adds (``lowering/scatter.py``): an embedding's weight gradient with a padding row,
    and index_put with accumulate, both with repeated indices."""
    return (torch.ops.aten.embedding_dense_backward(g, ids, 12, 0, False) * 2,
            torch.ops.aten.index_put(x, [idx], v.sin(), True))


CASES: list[Case] = [
    ("unary_fp32", _unary, lambda d: (_x(d, 6, 10),)),
    ("unary_fp64", _unary, lambda d: (_x(d, 6, 10, dtype=torch.float64),)),
    ("binary_fp32", _binary, lambda d: (_x(d, 6, 10), _x(d, 10), torch.randint(-5, 5, (6, 10)).to(d))),
    ("binary_fp16", _binary, lambda d: (_x(d, 6, 10, dtype=torch.float16), _x(d, 10, dtype=torch.float16),
                                        torch.randint(-5, 5, (6, 10)).to(d))),
    ("binary_bf16", _binary, lambda d: (_x(d, 6, 10, dtype=torch.bfloat16), _x(d, 10, dtype=torch.bfloat16),
                                        torch.randint(-5, 5, (6, 10)).to(d))),
    ("integer", _integer, _int_pair),
    ("broadcast", lambda x, y, z: x * y + z, lambda d: (_x(d, 8, 1, 12), _x(d, 5, 1), _x(d, 12))),
    ("transposed_input", lambda x: (x.t() * 2 + 1, x.t().contiguous()), lambda d: (_x(d, 70, 50),)),
    ("reductions_persistent", _reductions, lambda d: (_x(d, 12, 33),)),
    ("reductions_looped", _row_reductions, lambda d: (_x(d, 3, 5000),)),
    ("reductions_fp16", _reductions, lambda d: (_x(d, 12, 33, dtype=torch.float16),)),
    ("reduction_over_rows", lambda x: (x.sum(0), x.amax(0)), lambda d: (_x(d, 3000, 20),)),
    ("nan_propagation", _nan, lambda d: (_x(d, 4, 40),)),
    ("norms_persistent", _norms, lambda d: (_x(d, 8, 48), _x(d, 48), _x(d, 48))),
    ("norms_looped", _norms, lambda d: (_x(d, 2, 5000), _x(d, 5000), _x(d, 5000))),
    ("norms_bf16", _norms, lambda d: (_x(d, 8, 48, dtype=torch.bfloat16), _x(d, 48, dtype=torch.bfloat16),
                                      _x(d, 48, dtype=torch.bfloat16))),
    ("batch_stats", _batch_stats, lambda d: (_x(d, 8, 4, 16, 16), _x(d, 4), _x(d, 4))),
    ("views", _views, lambda d: (_x(d, 24, 20),)),
    ("indexing", _indexing, lambda d: (_x(d, 5, 6), torch.randint(0, 5, (5, 3)).to(d), _x(d, 7, 4))),
    ("scatter", _scatter, lambda d: (_x(d, 4, 9, 6), torch.randint(0, 12, (4, 9)).to(d), _x(d, 7, 5),
                                     torch.tensor([1, 6, 1, 1, 0]).to(d), _x(d, 5, 5))),
    ("creation", _creation, lambda d: (_x(d, 6, 10),)),
    ("pointwise_chain", _chain, lambda d: (_x(d, 10000),)),
    ("ragged_1d", lambda x: x.sin() * 2, lambda d: (_x(d, 1029),)),
    ("scalar_output", lambda x: (x.sum() * 2, x.mean()), lambda d: (_x(d, 37),)),
    ("max_pool", _max_pool, lambda d: (_x(d, 2, 3, 9, 9), _x(d, 2, 3, 5, 5))),
]


def _opinfo(name: str, index: int, dtype: torch.dtype = torch.float32) -> tuple[Callable, Callable[[str], tuple]]:
    """Sample ``index`` of torch's OpInfo for ``name`` as a case: its tensors are the inputs."""
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.utils import _pytree as pytree
    op = next(o for o in op_db if o.name == name and o.variant_test_name == "")

    made: list = []  # the last sample's leaves and structure (make runs before fn)

    def make(dev: str) -> tuple:
        sample = list(op.sample_inputs(dev, dtype))[index]
        made[:] = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
        return tuple(x for x in made[0] if isinstance(x, torch.Tensor))

    def fn(*tensors: torch.Tensor) -> Any:
        it = iter(tensors)
        inp, args, kwargs = pytree.tree_unflatten([next(it) if isinstance(x, torch.Tensor) else x
                                                   for x in made[0]], made[1])
        return op.op(inp, *args, **kwargs)
    return fn, make


# Losses on their OpInfo samples, on which kernels did not compile for sm_90: 0-dim inputs make a
# reduction of values loaded at a fixed index and constants (scalars broadcast to the block), a
# class index read from memory makes a masked load at a scalar index.
OPINFO_CASES: list[Case] = [
    (f"opinfo_{name.split('.')[-1]}_{index}_{str(dtype)[6:]}", *_opinfo(name, index, dtype))
    for name, index, dtype in [
        ("nn.functional.binary_cross_entropy", 0, torch.float32),
        ("nn.functional.binary_cross_entropy", 0, torch.bfloat16),
        ("nn.functional.multi_margin_loss", 1, torch.float32),
        ("nn.functional.multilabel_margin_loss", 0, torch.float32),
        ("nn.functional.multilabel_soft_margin_loss", 0, torch.bfloat16),
    ]]
CASES += OPINFO_CASES


def case_ids() -> list[str]:
    return [c[0] for c in CASES]


def get(case_id: str) -> Case:
    return next(c for c in CASES if c[0] == case_id)


def inputs_on(make: Callable[[str], tuple], device: str) -> tuple[Any, ...]:
    torch.manual_seed(0)
    return make(device)
