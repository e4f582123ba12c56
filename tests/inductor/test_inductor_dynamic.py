"""Dynamic shapes in the inductor (C++ kernels): an aten graph with symbolic sizes compiles once,
with the sizes as kernel and wrapper arguments, and is correct at every size."""
from __future__ import annotations

import logging
import re

import pytest
import torch

from ember_inductor import cache
from ember_inductor.compile_fx import CompiledGraph, compile_aten_graph, load_compiled_graph
from ember_inductor.per_shape import PerShapeGraph

from inductor_dynamic_helpers import compile_symbolic, lifted, run_sizes, symbolic_graph

from ember_aot.symbolic import SYMBOLIC_TRACING  # noqa: E402

pytestmark = pytest.mark.skipif(not SYMBOLIC_TRACING, reason="symbolic tracing is checked on torch 2.13; "
                                "older torch compiles a dynamic graph per shape")


#: (batch, length, channels): odd sizes, sizes that are not a multiple of the vector width, 2
SIZES = [(3, 7, 12), (2, 5, 12), (4, 9, 20), (5, 2, 6), (2, 33, 36), (3, 17, 2)]


def _kernels(x: torch.Tensor, w: torch.Tensor) -> tuple:
    y = torch.softmax(x @ w, -1)                          # extern mm, row reduction
    b, t, c = y.shape
    halves = y.view(b, t, 2, c // 2).sum(-1)              # view with size arithmetic
    return (halves * 2 + 1, x[:, 1:].relu() - x[:, :-1],  # slices of a symbolic dim
            x.mean(1), x.var(1), torch.cat([x, x.exp()], 1))


def test_pointwise_reductions_views_compile_once() -> None:
    x, w = torch.randn(3, 7, 12), torch.randn(12, 12)
    _, compiled = compile_symbolic(_kernels, x, w)
    # the sizes are parameters of the kernels and their loop bounds, read from the inputs
    assert re.search(r"int64_t s\d+\)", compiled.source)
    assert re.search(r"for \(int64_t x\d+ = 0; x\d+ < s\d+;", compiled.source)
    assert re.search(r"s\d+ = arg0\.size\(\d\)", compiled.wrapper_source)
    assert compiled.fallback_ops == []
    inputs = [(torch.randn(b, t, c), torch.randn(c, c)) for b, t, c in SIZES]
    assert run_sizes(compiled, _kernels, inputs) == 0


def test_static_inner_dim_stays_a_constant() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.layer_norm(x, [16]) * 2

    _, compiled = compile_symbolic(fn, torch.randn(3, 5, 16))
    assert re.search(r"r\d+ < 16;", compiled.source)  # the normalised dim: a static loop
    assert run_sizes(compiled, fn, [(torch.randn(b, t, 16),) for b, t, _ in SIZES]) == 0


def test_symbolic_int_input() -> None:
    def fn(x: torch.Tensor, n: int) -> torch.Tensor:
        return (x.view(n, -1, 4) * n).sum(1)

    gm = symbolic_graph(fn, torch.randn(3 * 5 * 4), 3)
    compiled = compile_aten_graph(gm, [torch.randn(3 * 5 * 4), 3])
    assert isinstance(compiled, CompiledGraph)
    assert re.search(r"s\d+ = scalar1", compiled.wrapper_source)
    cases = [(torch.randn(n * k * 4), n) for n, k in [(3, 5), (2, 9), (7, 2), (5, 3), (4, 4)]]
    assert run_sizes(compiled, fn, cases) == 0


def _gpt2_block(**config: float) -> torch.nn.Module:
    # imported here: transformers imports triton, which must see the Triton tests' TRITON_INTERPRET
    import transformers
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    cfg = transformers.GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=99, attn_implementation="sdpa", **config)
    return GPT2Block(cfg)


def test_gpt2_block_forward() -> None:
    """matmul, layer norm, causal SDPA, GELU MLP of HF's GPT-2 block, one compiled graph."""
    torch.manual_seed(0)
    params, fn = lifted(_gpt2_block().eval())
    _, compiled = compile_symbolic(fn, *params, torch.randn(3, 7, 32))
    assert compiled.fallback_ops == []
    cases = [(*params, torch.randn(b, t, 32)) for b, t, _ in SIZES]
    with torch.no_grad():
        assert run_sizes(compiled, fn, cases, rtol=1e-4, atol=1e-4) == 0


def test_embedding_and_training_step_of_a_gpt2_block() -> None:
    """Forward and backward (one joint graph) with symbolic batch and length, against eager:
    the loss and every gradient."""
    torch.manual_seed(0)
    block = _gpt2_block(resid_pdrop=0.0, attn_pdrop=0.0, embd_pdrop=0.0).train()
    wte = torch.nn.Embedding(99, 32)
    params, fn = lifted(block)
    params = [p.requires_grad_() for p in params] + [wte.weight.detach().requires_grad_()]

    def step(*args: torch.Tensor) -> list:
        ps, ids = list(args[:-1]), args[-1]
        h = torch.nn.functional.embedding(ids, ps[-1])
        loss = fn(*ps[:-1], h).pow(2).mean()
        return [loss, *torch.autograd.grad(loss, ps)]

    _, compiled = compile_symbolic(step, *params, torch.randint(0, 99, (3, 7)), grad=True)
    cases = [(*params, torch.randint(0, 99, (b, t))) for b, t, _ in SIZES[:5]]
    assert run_sizes(compiled, step, cases, rtol=1e-4, atol=1e-5) == 0
    # and against eager autograd on the module itself
    ids = torch.randint(0, 99, (2, 11))
    for got, want in zip(compiled(*params, ids), step(*params, ids)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_plan_artifact_serves_other_sizes() -> None:
    """The stored plan (wrapper and kernels) holds symbols, not the example's sizes."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1) * x.sum(0)

    _, compiled = compile_symbolic(fn, torch.randn(3, 5))
    loaded = load_compiled_graph(compiled.artifact())
    assert run_sizes(loaded, fn, [(torch.randn(b, t),) for b, t, _ in SIZES]) == 0


def test_unsupported_graph_is_compiled_per_shape(caplog: pytest.LogCaptureFixture) -> None:
    """A float computed from a size (a SymFloat) is not compiled symbolically: the graph is
    compiled per concrete shape, correct at each, and says so once."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x * (x.shape[-1] ** 0.5) + 1

    gm = symbolic_graph(fn, torch.randn(3, 5))
    with caplog.at_level(logging.INFO, logger="ember.inductor"):
        compiled = compile_aten_graph(gm, [torch.randn(3, 5)])
    assert isinstance(compiled, PerShapeGraph)
    assert sum("compiled per shape" in r.getMessage() for r in caplog.records) == 1
    before = cache.compile_count
    shapes = [(3, 5), (2, 7), (3, 5)]
    run_sizes(compiled, fn, [(torch.randn(*s),) for s in shapes])
    assert cache.compile_count - before <= 2  # one per distinct shape


def test_backend_through_ember_aot_compiles_one_forward_and_one_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend on a captured graph with symbolic sizes (as the core hands it over): ember_aot
    traces it symbolically, the inductor compiles one forward and one backward graph, and every
    size gives eager's values and gradients."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    import ember_inductor.compile_fx as compile_fx
    from ember_inductor.backend import inductor

    compiled_graphs: list = []

    def counting(gm: torch.fx.GraphModule, *args: object, **kwargs: object) -> object:
        compiled_graphs.append(compile_fx_original(gm, *args, **kwargs))
        return compiled_graphs[-1]
    compile_fx_original = compile_fx.compile_aten_graph
    monkeypatch.setattr(compile_fx, "compile_aten_graph", counting)

    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (torch.layer_norm(x @ w, [16]).relu() * x).sum(-1).softmax(-1)

    w = torch.randn(16, 16, requires_grad=True)
    reals = [torch.randn(3, 5, 16, requires_grad=True), w]
    gm = torch.fx.symbolic_trace(fn)
    mode = FakeTensorMode(shape_env=ShapeEnv())
    for node, real in zip([n for n in gm.graph.nodes if n.op == "placeholder"], reals):
        node.meta["val"] = node.meta["example_value"] = mode.from_tensor(real)
    compiled = inductor(gm, reals, options={"eager_fallback": False})
    for b, t, _ in SIZES[:5]:
        x = torch.randn(b, t, 16, requires_grad=True)
        out, ref = compiled(x, w), fn(x, w)
        torch.testing.assert_close(out, ref)
        weights = torch.arange(t, dtype=torch.float32)
        got = torch.autograd.grad((out * weights).sum(), [x, w])
        want = torch.autograd.grad((ref * weights).sum(), [x, w])
        for g, e in zip(got, want):
            torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)
    assert len(compiled_graphs) == 2 and all(isinstance(c, CompiledGraph) for c in compiled_graphs)


def _divisors(source: str) -> list[str]:
    """The right operand of every ``/`` and ``%`` of C++ source (a number, a name or a
    parenthesised expression)."""
    out = []
    for m in re.finditer(r" [/%] ", source):
        rest = source[m.end():]
        if not rest.startswith("("):
            out.append(re.match(r"[\w.]+", rest).group(0))
            continue
        depth = 0
        for i, ch in enumerate(rest):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                out.append(rest[:i + 1])
                break
    return out


def test_kv_cache_step_divides_by_no_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoding step's attention over a KV cache whose length is symbolic, compiled the way
    users call it: the kernels' index arithmetic divides by no size expression (each such
    division is an integer division per element at run time: the reshapes' divisions by
    ``64*s + 64`` fold away, a cat's input is indexed without a modulus), and every cache
    length gives eager's values."""
    import ember
    import ember_inductor.compile_fx as compile_fx
    from ember_inductor.backend import inductor

    graphs: list = []
    original = compile_fx.compile_aten_graph
    monkeypatch.setattr(compile_fx, "compile_aten_graph", lambda *a, **k: graphs.append(original(*a, **k)) or graphs[-1])

    def step(past_k: torch.Tensor, past_v: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple:
        keys, values = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        b, h, t, d = keys.shape
        scores = q.reshape(b * h, 1, d) @ keys.reshape(b * h, t, d).transpose(1, 2) * d ** -0.5
        return (scores.softmax(-1) @ values.reshape(b * h, t, d)).view(b, h, 1, d), keys, values

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        return inductor(gm, example_inputs, options={"eager_fallback": False})
    backend.dynamic = True
    fast = ember.compile(step, backend=backend)
    for length in (5, 6, 9, 17):
        past = [torch.randn(2, 4, length, 8) for _ in range(2)]
        new = [torch.randn(2, 4, 1, 8) for _ in range(3)]
        for got, want in zip(fast(*past, *new), step(*past, *new)):
            torch.testing.assert_close(got, want)
    assert len(graphs) == 2  # the first length, then one symbolic graph
    source = graphs[-1].source
    assert re.search(r"int64_t s\d+\)", source)
    assert not [d for d in _divisors(source) if re.search(r"\bs\d+", d)]


def test_int_true_division_of_sizes_forward_and_backward() -> None:
    """A float computed from sizes (``t / b``, torch's ``IntTrueDiv``) in a training step: the
    kernels compute it from their size arguments, in double as Python does, so the joint graph
    compiles once (not per shape) and gives eager's loss and gradients at every size."""
    def step(w: torch.Tensor, x: torch.Tensor) -> list:
        b, t, c = x.shape
        y = torch.tanh(x @ w) * (t / b)
        loss = y.pow(2).sum() / (b * t / 2)
        return [loss, *torch.autograd.grad(loss, [w, x])]

    def inputs(b: int, t: int, c: int) -> tuple:
        return torch.randn(c, c, requires_grad=True), torch.randn(b, t, c, requires_grad=True)

    _, compiled = compile_symbolic(step, *inputs(3, 7, 12), grad=True)
    assert "static_cast<double>(s" in compiled.source
    assert run_sizes(compiled, step, [inputs(b, t, c) for b, t, c in SIZES[:4]]) == 0


def test_a_size_rounded_up_by_ceil_of_a_division_stays_symbolic() -> None:
    """``ceil(s / 32) * 32`` (CUDA's memory-efficient attention pads its log-sum-exp so; a GPT
    training step's backward reads it) is ``(s + 31) // 32 * 32``: the graph compiles once
    instead of per shape."""
    import math

    def padded(x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        rounded = math.ceil(n / 32) * 32
        return torch.nn.functional.pad(x, (0, rounded - n)).exp() + math.floor(n / 8)

    _, compiled = compile_symbolic(padded, torch.randn(3, 13))
    assert run_sizes(compiled, padded, [(torch.randn(b, n),) for b, n in [(3, 13), (2, 32), (4, 33), (5, 70)]]) == 0
