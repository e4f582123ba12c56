"""Whole models through backend onnxrt: ResNet-18, a small GPT, a transformers BERT."""
from __future__ import annotations

import pytest
import torch
from onnxrt_helpers import all_in_onnxruntime, assert_close, leaf_graph, lift_params
from onnxrt_models import GPT, ResNet18

from ember_onnxrt.backend import onnxrt


def _run_module(module: torch.nn.Module, *inputs: torch.Tensor, rtol: float, atol: float):
    module.eval()
    gm, weights = lift_params(module)
    args = [*inputs, *weights]
    compiled = onnxrt(gm, args)
    with torch.no_grad():
        expected = module(*inputs)
        assert_close(compiled(*args), expected, rtol, atol)
    assert all_in_onnxruntime(compiled), compiled.placements()
    return compiled, weights


def test_resnet18():
    torch.manual_seed(0)
    model = ResNet18(width=16)
    for m in model.modules():  # non-trivial running statistics
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    compiled, weights = _run_module(model, torch.randn(2, 3, 64, 64), rtol=1e-3, atol=1e-4)
    x = torch.randn(2, 3, 64, 64)  # new values, same session
    with torch.no_grad():
        assert_close(compiled(x, *weights), model(x), 1e-3, 1e-4)


def test_gpt():
    torch.manual_seed(0)
    model = GPT()
    compiled, weights = _run_module(model, torch.randint(0, 128, (2, 16)), rtol=1e-3, atol=1e-4)
    idx = torch.randint(0, 128, (3, 8))  # new shape: a second session
    with torch.no_grad():
        assert_close(compiled(idx, *weights), model(idx), 1e-3, 1e-4)
    assert len(compiled.placements()) == 2


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_transformers_bert(attention):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, attn_implementation=attention,
    )
    model = transformers.BertModel(config).eval()
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    weights = [t for _, t in model.named_parameters()] + [t for _, t in model.named_buffers()]

    def bert(ids, mask, *tensors):
        state = dict(zip(names, tensors))
        out = torch.func.functional_call(model, state, (ids,), {"attention_mask": mask})
        return out.last_hidden_state, out.pooler_output

    ids = torch.randint(0, 200, (2, 12))
    # A 2-D padding mask makes transformers test it with data-dependent Python control flow
    # (ember's capture breaks the graph there); a 4-D boolean mask is used as it is.
    mask = torch.ones(2, 1, 12, 12, dtype=torch.bool)
    mask[1, :, :, 8:] = False
    args = [ids, mask, *weights]
    compiled = onnxrt(leaf_graph(bert, len(args)), args)
    with torch.no_grad():
        assert_close(compiled(*args), bert(*args), 1e-3, 1e-4)
    assert all_in_onnxruntime(compiled), compiled.placements()
