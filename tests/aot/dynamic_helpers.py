"""Dynamic graphs for the ember_aot tests, shaped as the core delivers them (issue 25's contract).

``dynamic_graph(fn, *inputs)`` traces ``fn`` to a torch-level graph and sets each placeholder's
``meta["val"]``/``meta["example_value"]``: a fake tensor with symbolic sizes (sizes 0 and 1 stay
specialised, equal sizes share a symbol) from one ``ShapeEnv``, or a ``SymInt`` for the int
inputs at ``dynamic_ints``. ``compare_sizes`` compiles such a graph once and compares it with
eager at many sizes, forward and backward.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch._dynamo.source import ConstantSource
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

from aot_helpers import _clone_inputs, _loss, assert_same, lift, module_tensors


def dynamic_graph(fn: Callable | torch.fx.GraphModule, *inputs: Any,
                  dynamic_ints: Sequence[int] = ()) -> torch.fx.GraphModule:
    """``fn`` (or the graph itself) with placeholders carrying symbolic fakes of ``inputs``."""
    gm = fn if isinstance(fn, torch.fx.GraphModule) else torch.fx.symbolic_trace(fn)
    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == len(inputs)
    for i, (node, real) in enumerate(zip(placeholders, inputs)):
        if isinstance(real, torch.Tensor):
            val = mode.from_tensor(real)
        elif i in dynamic_ints:
            symbol = env.create_symbol(real, ConstantSource(f"int{i}"), dynamic_dim=DimDynamic.DYNAMIC)
            val = env.create_symintnode(symbol, hint=real)
        else:
            val = real
        node.meta["val"] = node.meta["example_value"] = val
    return gm


def counting(backend: Callable) -> tuple[Callable, list[int]]:
    """``backend`` and a list whose length counts its compilations."""
    calls: list[int] = []

    def wrapped(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        calls.append(1)
        return backend(gm, example_inputs)

    return wrapped, calls


def _check_call(compiled: Callable, fn: Callable, inputs: Sequence[Any], ref_inputs: Sequence[Any],
                tol: float) -> tuple[Any, Any]:
    out, expected = compiled(*inputs), fn(*ref_inputs)
    assert_same(out, expected, tol)
    loss, ref_loss = _loss(out), _loss(expected)
    if ref_loss is not None:
        loss.backward()
        ref_loss.backward()
    return out, expected


def _check_grads(ours: Sequence[Any], ref: Sequence[Any], tol: float) -> None:
    for i, (x, rx) in enumerate(zip(ours, ref)):
        if isinstance(rx, torch.Tensor) and rx.requires_grad:
            assert (x.grad is None) == (rx.grad is None), f"input {i}: grad None differs"
            if rx.grad is not None:
                torch.testing.assert_close(x.grad, rx.grad, rtol=tol, atol=tol, msg=f"input {i}")


def compare_sizes(fn: Callable, make_inputs: Callable[[int], Sequence[Any]], sizes: Sequence[int],
                  backend: Callable, tol: float = 1e-5, dynamic_ints: Sequence[int] = ()) -> Any:
    """Compile ``fn`` once as a dynamic graph (symbolic from ``make_inputs(sizes[0])``), call it
    with ``make_inputs(n)`` for every ``n`` and compare outputs and grads with eager. Returns
    the compiled callable; asserts the backend compiled once."""
    backend, compilations = counting(backend)
    gm = dynamic_graph(fn, *make_inputs(sizes[0]), dynamic_ints=dynamic_ints)
    compiled = None
    for n in sizes:
        inputs = list(make_inputs(n))
        ref_inputs = _clone_inputs(inputs)
        if compiled is None:
            compiled = backend(gm, inputs)
        _check_call(compiled, fn, inputs, ref_inputs, tol)
        _check_grads(inputs, ref_inputs, tol)
    assert len(compilations) == 1
    return compiled


def compare_module_sizes(module: torch.nn.Module, make_inputs: Callable[[int], Sequence[Any]],
                         sizes: Sequence[int], backend: Callable, tol: float = 1e-4) -> Any:
    """``compare_sizes`` for a module, its parameters and buffers lifted to inputs: outputs,
    parameter gradients (None included) and buffers equal eager's at every size, one compilation."""
    import copy
    ref = copy.deepcopy(module)
    gm, names = lift(module)
    params = module_tensors(module, names)
    gm = dynamic_graph(gm, *params, *make_inputs(sizes[0]))
    backend, compilations = counting(backend)
    compiled = None
    for n in sizes:
        for m in (module, ref):
            m.zero_grad(set_to_none=True)
        inputs = list(make_inputs(n))
        ref_inputs = _clone_inputs(inputs)
        if compiled is None:
            compiled = backend(gm, params + inputs)
        _check_call(lambda *a: compiled(*params, *a), ref, inputs, ref_inputs, tol)
        for (name, p), (_, rp) in zip(module.named_parameters(), ref.named_parameters()):
            assert (p.grad is None) == (rp.grad is None), name
            if rp.grad is not None:
                torch.testing.assert_close(p.grad, rp.grad, rtol=tol, atol=tol, msg=name)
        for (name, b), (_, rb) in zip(module.named_buffers(), ref.named_buffers()):
            torch.testing.assert_close(b, rb, rtol=tol, atol=tol, msg=name)  # running stats
        _check_grads(inputs, ref_inputs, tol)
    assert len(compilations) == 1
    return compiled
