"""Corpus: torch.* / torch.nn.functional.* / Tensor methods and properties, constructors, views,
in-place ops on intermediates, integer/bool tensors and float16/bfloat16/float64 inputs."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


SHAPES = [(t(2, 3),), (t(2, 3, seed=5),), (t(4, 3),)]

# -- torch.* and F.* -----------------------------------------------------------------------------
add("torch_pointwise", lambda x: (torch.sin(x), torch.exp(x), torch.sigmoid(x), torch.clamp(x, -0.5, 0.5)), SHAPES, 2)
add("torch_reductions", lambda x: (torch.sum(x), x.mean(dim=0), x.amax(-1, keepdim=True), torch.std(x), x.norm()),
    SHAPES, 2)
add("torch_cat_stack", lambda x, y: (torch.cat([x, y], 0), torch.stack((x, y), -1)), [(t(2, 3), t(2, 3, seed=1))], 1)
add("torch_matmul_family", lambda a, b: (torch.mm(a, b), torch.matmul(a, b), a.matmul(b), torch.einsum("ij,jk->ik", a, b)),
    [(t(2, 3), t(3, 4))], 1)
add("torch_bmm_baddbmm", lambda a, b: torch.baddbmm(torch.zeros(2, 3, 3), a, b, alpha=0.5), [(t(2, 3, 4), t(2, 4, 3))], 1)
add("torch_where_scalar", lambda x: torch.where(x > 0, x, 0.0), SHAPES, 2)
add("torch_max_with_dim", lambda x: torch.max(x, dim=1), [(t(3, 4),)], 1)
add("torch_return_types_index", lambda x: (x.max(0)[0], x.min(dim=-1)[1], torch.sort(x, -1)[1]), [(t(3, 4),)], 1)
add("torch_return_types_fields", lambda x: (x.max(0).values, x.sort(-1).indices), [(t(3, 4),)], 1)
add("torch_topk_unpack", lambda x: (lambda v, i: v * 2 + i)(*torch.topk(x, 2)), [(t(3, 5),)], 1)
add("torch_maximum_minimum", lambda a, b: torch.maximum(a, b) - torch.minimum(a, b), [(t(4), t(4, seed=2))], 1)
add("torch_cumsum_flip_roll", lambda x: (x.cumsum(0), x.flip(-1), torch.roll(x, 1, 0)), SHAPES, 2)
add("f_activations", lambda x: (F.relu(x), F.gelu(x), F.silu(x), F.leaky_relu(x, 0.1), F.softmax(x, -1),
                                F.log_softmax(x, dim=1), F.hardtanh(x)), SHAPES, 2)
add("f_linear_conv", lambda x, w, b: (F.linear(x, w, b), F.conv1d(x.t().unsqueeze(0), w.unsqueeze(-1))),
    [(t(2, 3), t(4, 3), t(4))], 1)
add("f_pad_interpolate", lambda x: (F.pad(x, (1, 1)), F.interpolate(x, scale_factor=2, mode="nearest")),
    [(t(1, 2, 4),)], 1)
add("f_losses", lambda x, y: (F.mse_loss(x, y), F.l1_loss(x, y, reduction="sum"), F.cross_entropy(x, y.argmax(-1))),
    [(t(3, 4), t(3, 4, seed=8))], 1)
add("f_normalize_layer_norm", lambda x: (F.layer_norm(x, (x.shape[-1],)), F.normalize(x, p=2, dim=0)), SHAPES, 2)
add("f_one_hot", lambda i: F.one_hot(i, num_classes=5), [(torch.tensor([0, 3, 4]),)], 1)
add("f_dropout_eval_noop", lambda x: F.dropout(x, p=0.5, training=False), [(t(3),)], None)
add("torch_linalg_fft", lambda x: (torch.linalg.vector_norm(x, dim=-1), torch.fft.rfft(x).abs()), [(t(2, 8),)], 1)

# -- tensor methods and properties --------------------------------------------------------------------
add("tensor_properties", lambda x: (x.shape, x.dtype, x.device, x.ndim, x.size(), x.size(-1), x.dim(), x.numel(),
                                    x.is_floating_point(), x.requires_grad, x.is_contiguous()), SHAPES, 0)
add("properties_feed_ops", lambda x: x.new_zeros(x.shape[-1]) + x.sum(0) * x.numel() / x.size(0), SHAPES, 2)
add("tensor_methods_chain", lambda x: x.abs().sqrt().add(1).mul_(2).sub(x).div(3).pow(2), SHAPES, 2)
add("tensor_type_conversions", lambda x: (x.float(), x.double(), x.half(), x.long(), x.int(), x.bool(),
                                          x.to(torch.bfloat16), x.type(torch.float64), x.to(dtype=torch.int16)),
    [(t(3),)], 1)
add("tensor_to_same_dtype_device", lambda x: x.to(x.dtype).to("cpu").contiguous().clone() + 0, [(t(3),)], 1)
add("new_constructors", lambda x: (x.new_ones(2), x.new_full((2,), 3.0), x.new_empty(0).shape, x.new_tensor([1.0, 2.0])),
    [(t(3),), (t(3, dtype=torch.float64),)], 2)
add("zeros_like_family", lambda x: (torch.zeros_like(x), torch.ones_like(x) * 2, torch.full_like(x, 7), torch.empty_like(x).shape),
    SHAPES, 2)
add("type_as_and_expand_as", lambda x, y: (x.type_as(y), y.expand_as(x.unsqueeze(0).expand(2, 3))),
    [(t(3, dtype=torch.int64), t(3))], 1)
add("tensor_dunder_methods", lambda x: (x.__add__(1), x.__mul__(x), x.__getitem__(0), x.__rsub__(1)), [(t(2, 2),)], 1)
add("unbound_tensor_methods", lambda x: (torch.Tensor.add(x, 1), torch.Tensor.sum(x)), [(t(3),)], 1)
add("tensor_T_mT", lambda x: (x.T, x.mT, x.t()), [(t(2, 3),)], 1)
add("argmax_and_indexing", lambda x: x[torch.arange(x.shape[0]), x.argmax(-1)], [(t(3, 4),)], 1)
add("masked_fill_and_where", lambda x: x.masked_fill(x < 0, 0.0) + x.where(x > 0, torch.zeros_like(x)), SHAPES, 2)
add("gather_scatter", lambda x, i: (x.gather(1, i), torch.zeros(3, 4).scatter_(1, i, 1.0)),
    [(t(3, 4), torch.tensor([[0], [2], [3]]))], 1)

# -- constructors ----------------------------------------------------------------------------------------
add("constructors_python_shapes", lambda n: (torch.zeros(n, 2), torch.ones(2, n, dtype=torch.int64), torch.arange(n),
                                             torch.full((n,), 1.5), torch.eye(n), torch.linspace(0, 1, n)),
    [(3,), (4,), (3,)], 2)
add("constructors_from_input_shape", lambda x: x + torch.arange(x.shape[-1]) + torch.ones(x.shape) * torch.tensor(2.0),
    SHAPES, 2)
add("arange_float_step", lambda x: x * torch.arange(0, 1, 0.25), [(t(4),)], 1)
add("torch_tensor_literal", lambda x: x * torch.tensor([1.0, 2.0, 3.0]) + torch.tensor(0.5), [(t(3),)], 1)
add("randn_seeded_outside", lambda x: x + torch.randn(x.shape), [(t(3),), (t(2, 2),)], 2)
add("rand_like_and_randint", lambda x: (torch.rand_like(x), torch.randint(0, 10, (3,)), torch.randn(2, dtype=torch.float64)),
    [(t(3),)], 1)
add("dropout_training_seeded", lambda x: F.dropout(x, 0.5, training=True), [(t(16),)], 1)
add("constructor_dtype_from_input", lambda x: torch.zeros(3, dtype=x.dtype, device=x.device) + x,
    [(t(3),), (t(3, dtype=torch.float64),)], 2)

# -- views ------------------------------------------------------------------------------------------------
add("view_reshape", lambda x: (x.view(-1), x.reshape(x.shape[1], -1), x.view(x.size(0), 1, -1), x.flatten(0)), SHAPES, 2)
add("permute_transpose", lambda x: (x.permute(2, 0, 1), x.transpose(0, 2), x.movedim(0, -1), x.swapaxes(1, 2)),
    [(t(2, 3, 4),)], 1)
add("unsqueeze_squeeze_expand", lambda x: (x.unsqueeze(0).expand(3, -1, -1), x[:, None].squeeze(1), x.unsqueeze(-1).squeeze()),
    SHAPES, 2)
add("expand_repeat", lambda x: (x.expand(4, 3), x.repeat(2, 1), x.repeat_interleave(2, dim=0)), [(t(1, 3),)], 1)
add("slicing_views", lambda x: (x[:, 1:3], x[::2], x[..., -1], x[1], x[:, None, :]), SHAPES, 2)
add("narrow_select_unbind", lambda x: (x.narrow(0, 0, 1), x.select(1, 2), x.unbind(0)), SHAPES, 2)
add("split_chunk_tensor_split", lambda x: (x.split([1, 2], dim=1), x.chunk(2, 0), torch.tensor_split(x, 3, dim=1)), [(t(4, 3),)], 1)
add("contiguous_after_transpose", lambda x: x.t().contiguous().view(-1), SHAPES, 2)
add("non_contiguous_input", lambda x: x * 2 + 1, [(t(3, 4).t(),), (t(4, 3),)], 2)
add("view_of_input_returned", lambda x: x.view(-1), [(t(2, 3),)], 1)
add("diagonal_and_tril", lambda x: (x.diagonal(), torch.tril(x), x.triu(1)), [(t(3, 3),)], 1)

# -- in-place on intermediates and inputs -----------------------------------------------------------------
def inplace_chain(x):
    y = x.clone()
    y.add_(1).mul_(2)
    y.clamp_(min=0)
    y[0] = 5.0
    y[:, 1:] *= 0.5
    return y


add("inplace_on_clone", inplace_chain, SHAPES, 2)


def inplace_view_of_intermediate(x):
    y = torch.zeros(4, 4)
    y[1:3, 1:3] = x
    y.diagonal().fill_(1.0)
    return y


add("inplace_slice_assign_fill", inplace_view_of_intermediate, [(t(2, 2),)], 1)


def inplace_into_input_slice(x, v):
    x[0] = v
    x[1:] += 1
    return x.sum()


add("setitem_on_input", inplace_into_input_slice, [(t(3, 2), t(2, seed=1)), (t(3, 2), t(2, seed=2))], 1)


def inplace_zero_and_copy(x, y):
    z = torch.empty_like(x)
    z.copy_(y)
    z.zero_()
    z += x
    return z


add("copy_and_zero_inplace", inplace_zero_and_copy, [(t(3), t(3, seed=1))], 1)
add("inplace_relu_module_style", lambda x: F.relu(x.clone(), inplace=True), SHAPES, 2)

# -- integer / bool tensors and dtypes --------------------------------------------------------------------------
INTS = [(t(3, 4, dtype=torch.int64),), (t(3, 4, dtype=torch.int32),)]
add("int_tensor_ops", lambda a: (a + 1, a * 2, a // 2, a % 3, a.sum(), a.max(), torch.div(a, 2, rounding_mode="floor")),
    INTS, 2)
add("int_tensor_float_promotion", lambda a: (a * 0.5, a.float().mean(), a.to(torch.float16)), INTS, 2)
add("uint8_tensor", lambda a: (a + 1, a.to(torch.int32) * 3), [(torch.tensor([0, 100, 255], dtype=torch.uint8),)], 1)
add("bool_tensor_ops", lambda m, x: (m.sum(), m.any(), m.all(), ~m, x * m, m.float().mean(),
                                     torch.logical_and(m, x > 0)), [(t(5, dtype=torch.bool), t(5))], 1)
add("bool_index_with_where", lambda m, x: torch.where(m, x, -x), [(t(5, dtype=torch.bool), t(5))], 1)
add("half_inputs", lambda x, y: (x @ y, F.softmax(x, -1), x.sum(dtype=torch.float32)),
    [(t(3, 3, dtype=torch.float16), t(3, 3, dtype=torch.float16, seed=3))], 1, atol=1e-2, rtol=1e-2)
add("bfloat16_inputs", lambda x: (x.exp(), x.mean(), x.float() * 2), [(t(4, dtype=torch.bfloat16),)], 1,
    atol=1e-2, rtol=1e-2)
add("float64_inputs", lambda x: (x.log1p().abs(), x.double().sum(), x.to(torch.float32)), [(t(4, dtype=torch.float64),)], 1)
add("complex_inputs", lambda x: (x * 2j, x.abs(), x.real), [(torch.randn(3, dtype=torch.complex64),)], 1)
add("dtype_properties", lambda x: (x.dtype.is_floating_point, x.dtype.itemsize, x.element_size(), torch.finfo(x.dtype).eps),
    [(t(2),), (t(2, dtype=torch.float16),)], 0)
add("requires_grad_input", lambda x: (x * 2).sum(), [(t(3).requires_grad_(),), (t(3),)], 2)
add("no_grad_input_and_detach", lambda x: (x.detach() * 2, x.detach().requires_grad), [(t(3).requires_grad_(),)], 1)
add("zero_dim_tensor", lambda x, s: x * s + s.exp(), [(t(3), torch.tensor(2.0))], 1)
add("empty_tensor", lambda x: (x.sum(), x.shape, x + 1), [(torch.zeros(0, 3),)], 1)


@pytest.mark.parametrize("case", params(CASES))
def test_tensors(case):
    run_case(case)
