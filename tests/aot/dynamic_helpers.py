"""Dynamic graphs for the ember_aot tests, shaped as the core delivers them (issue 25's contract).

``dynamic_graph(fn, *inputs)`` traces ``fn`` to a torch-level graph and sets each placeholder's
``meta["val"]``/``meta["example_value"]``: a fake tensor with symbolic sizes (sizes 0 and 1 stay
specialised, equal sizes share a symbol) from one ``ShapeEnv``, or a ``SymInt`` for the int
inputs at ``dynamic_ints``. ``compare_sizes`` compiles such a graph once (symbolic in the
dimensions that change between its first two sizes) and compares it with eager at many sizes,
forward and backward, and checks that no size was specialised to a number on the way.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import sympy
import torch
import torch.fx
from torch._dynamo.source import ConstantSource
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

from aot_helpers import _clone_inputs, _loss, assert_same, lift, module_tensors


def dynamic_graph(fn: Callable | torch.fx.GraphModule, *inputs: Any, dynamic_ints: Sequence[int] = (),
                  static_inputs: Sequence[int] = (),
                  dynamic_dims: dict[int, set[int]] | None = None) -> torch.fx.GraphModule:
    """``fn`` (or the graph itself) with placeholders carrying symbolic fakes of ``inputs``:
    every dimension of 2 or more is symbolic, or only those in ``dynamic_dims`` (input position
    -> dimensions) when given, as the core's automatic dynamic marks the dimensions that
    changed; parameters and buffers (``nn.Parameter``, or named by ``static_inputs``) keep
    static sizes, as the core's capture keeps a module's."""
    gm = fn if isinstance(fn, torch.fx.GraphModule) else torch.fx.symbolic_trace(fn)
    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == len(inputs)
    for i, (node, real) in enumerate(zip(placeholders, inputs)):
        if isinstance(real, torch.Tensor):
            static = isinstance(real, torch.nn.Parameter) or i in static_inputs
            context = None
            if dynamic_dims is not None and not static:
                dims = dynamic_dims.get(i, set())
                context = StatelessSymbolicContext(
                    dynamic_sizes=[DimDynamic.DUCK if d in dims else DimDynamic.STATIC
                                   for d in range(real.dim())])
            val = mode.from_tensor(real, static_shapes=static, symbolic_context=context)
        elif i in dynamic_ints:
            symbol = env.create_symbol(real, ConstantSource(f"int{i}"), dynamic_dim=DimDynamic.DYNAMIC)
            val = env.create_symintnode(symbol, hint=real)
        else:
            val = real
        node.meta["val"] = node.meta["example_value"] = val
    return gm


def changed_dims(first: Sequence[Any], second: Sequence[Any]) -> dict[int, set[int]]:
    """Per tensor input, the dimensions whose size differs between two calls."""
    return {i: {d for d, (x, y) in enumerate(zip(a.shape, b.shape)) if x != y}
            for i, (a, b) in enumerate(zip(first, second)) if isinstance(a, torch.Tensor)}


def assert_no_size_pinned(gm: torch.fx.GraphModule) -> None:
    """No size symbol of ``gm``'s shape environment was specialised to a number (by a guard
    ``Eq(s, 5)`` or a replacement), as reading a symbolic size as an int does."""
    env = next(n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"
               and isinstance(n.meta.get("val"), torch.Tensor)).fake_mode.shape_env
    pinned = [str(g.expr) for g in env.guards if isinstance(g.expr, sympy.Eq)
              and any(a.is_Symbol for a in g.expr.args) and any(a.is_Integer for a in g.expr.args)]
    pinned += [f"{s} = {v}" for s, v in env.replacements.items() if v.is_Integer]
    assert not pinned, f"sizes specialised: {pinned}"


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
    gm = dynamic_graph(fn, *make_inputs(sizes[0]), dynamic_ints=dynamic_ints,
                       dynamic_dims=changed_dims(make_inputs(sizes[0]), make_inputs(sizes[1])))
    compiled = None
    for n in sizes:
        inputs = list(make_inputs(n))
        ref_inputs = _clone_inputs(inputs)
        if compiled is None:
            compiled = backend(gm, inputs)
        _check_call(compiled, fn, inputs, ref_inputs, tol)
        _check_grads(inputs, ref_inputs, tol)
    assert len(compilations) == 1
    assert_no_size_pinned(gm)
    return compiled


def compare_module_sizes(module: torch.nn.Module, make_inputs: Callable[[int], Sequence[Any]],
                         sizes: Sequence[int], backend: Callable, tol: float = 1e-4) -> Any:
    """``compare_sizes`` for a module, its parameters and buffers lifted to inputs: outputs,
    parameter gradients (None included) and buffers equal eager's at every size, one compilation."""
    import copy
    ref = copy.deepcopy(module)
    gm, names = lift(module)
    params = module_tensors(module, names)
    first, second = make_inputs(sizes[0]), make_inputs(sizes[1])
    dims = {len(params) + i: d for i, d in changed_dims(first, second).items()}
    gm = dynamic_graph(gm, *params, *first, static_inputs=range(len(params)), dynamic_dims=dims)
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
    assert_no_size_pinned(gm)
    return compiled
