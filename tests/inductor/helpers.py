"""Helpers for the inductor tests: compile a function through the inference path and compare."""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

from ember_inductor.backend import compile_inference


def compile_fn(fn: Callable, *inputs: Any) -> Any:
    """Compiled version of ``fn`` (aten graph via make_fx); ``.compiled`` is the CompiledGraph."""
    return compile_inference(fn, list(inputs))


def tolerances(dtype: torch.dtype) -> dict:
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 2e-2, "atol": 2e-2}
    if dtype == torch.float64:
        return {"rtol": 1e-7, "atol": 1e-7}
    return {"rtol": 1e-4, "atol": 1e-5}


def assert_same(actual: Any, expected: Any) -> None:
    a_leaves, b_leaves = pytree.tree_leaves(actual), pytree.tree_leaves(expected)
    assert len(a_leaves) == len(b_leaves)
    for a, b in zip(a_leaves, b_leaves):
        if not isinstance(b, torch.Tensor):
            assert a == b
            continue
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        assert a.shape == b.shape, (a.shape, b.shape)
        if b.dtype.is_floating_point:
            torch.testing.assert_close(a, b, equal_nan=True, **tolerances(b.dtype))
        else:
            assert torch.equal(a, b), (a, b)


def _fresh(x: torch.Tensor) -> torch.Tensor:
    """New values with the same size and strides (the compiled code is specialised on strides)."""
    out = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype)
    return out.copy_(torch.randn(x.shape).to(x.dtype))


def check(fn: Callable, *inputs: Any, lowered: bool = True) -> Any:
    """Compile ``fn``, compare with eager on ``inputs`` (and on fresh values), return the compiled."""
    compiled = compile_fn(fn, *inputs)
    assert_same(compiled(*inputs), fn(*inputs))
    fresh = [_fresh(x) if isinstance(x, torch.Tensor) and x.dtype.is_floating_point else x
             for x in inputs]
    assert_same(compiled(*fresh), fn(*fresh))
    if lowered:
        assert compiled.compiled.fallback_ops == [], compiled.compiled.fallback_ops
    return compiled


def train_embeddings(ids: torch.Tensor) -> int:
    """One training step of a token embedding (padding index 0) and a position embedding
    through ember's inductor, against eager's: the gradients equal, the padding row's zero.
    Returns the number of graphs compiled."""
    import copy

    import ember
    from ember_inductor.backend import inductor

    torch.manual_seed(0)
    model = torch.nn.ModuleList([torch.nn.Embedding(11, 6, padding_idx=0), torch.nn.Embedding(8, 6)])
    reference = copy.deepcopy(model)
    graphs = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(gm)
        return inductor(gm, example_inputs)

    def step(m: torch.nn.ModuleList, ids: torch.Tensor) -> torch.Tensor:
        h = m[0](ids) + m[1](torch.arange(ids.shape[1]))
        return (h.tanh() ** 2).sum()
    ember.compile(step, backend=counting)(model, ids).backward()
    step(reference, ids).backward()
    for a, b in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(a.grad, b.grad)
    assert model[0].weight.grad[0].abs().sum() == 0
    return len(graphs)
