"""Test helpers for ember_aot: graphs shaped like the core's, eager comparison, contract checks."""
from __future__ import annotations

import copy
import operator
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch._subclasses import FakeTensor
from torch.utils import _pytree as pytree

from ember_aot import aot_autograd, min_cut_partition, save_all_partition
from ember_aot.backend import aot_eager
from ember_aot.runtime import CompiledPlan


class _InlineTracer(torch.fx.Tracer):
    """Traces through every submodule; parameters and buffers show up as ``get_attr`` nodes."""

    proxy_buffer_attributes = True

    def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
        return False


def lift(module: torch.nn.Module) -> tuple[torch.fx.GraphModule, list[str]]:
    """A torch-level graph of ``module`` taking (parameters..., buffers..., inputs...)."""
    graph = _InlineTracer().trace(module)
    gm = torch.fx.GraphModule(module, graph)
    names = [n for n, _ in module.named_parameters()] + [n for n, _ in module.named_buffers()]
    first = next(iter(graph.nodes))
    with graph.inserting_before(first):
        placeholders = {n: graph.placeholder(n.replace(".", "_")) for n in names}
    for node in list(graph.nodes):
        if node.op == "get_attr" and node.target in placeholders:
            node.replace_all_uses_with(placeholders[node.target])
            graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return gm, names


def module_tensors(module: torch.nn.Module, names: Sequence[str]) -> list[torch.Tensor]:
    table = dict(module.named_parameters())
    table.update(dict(module.named_buffers()))
    return [table[n] for n in names]


_ATEN_OK = (torch._ops.OpOverload,)


def check_contract(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """What ``aot_autograd`` promises its compilers: functional aten graph, fakes everywhere."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == len(example_inputs)
    for n, ex in zip(placeholders, example_inputs):
        assert isinstance(ex, FakeTensor) and n.meta["val"] is ex
    outputs = [n for n in gm.graph.nodes if n.op == "output"]
    assert len(outputs) == 1 and isinstance(outputs[0].args[0], tuple)
    for n in gm.graph.nodes:
        if n.op == "call_function":
            assert isinstance(n.target, _ATEN_OK) or n.target is operator.getitem, n.target
            if isinstance(n.target, torch._ops.OpOverload):
                assert not n.target._schema.is_mutable, f"mutating op {n.target}"
                assert n.target.namespace in ("aten", "prims"), n.target
        if n.op in ("call_function", "placeholder") and n.target is not operator.getitem:
            val = n.meta.get("val")
            assert val is not None or n.op == "call_function", n
        if n.op == "call_method" or n.op == "call_module":
            raise AssertionError(f"torch-level node in aten graph: {n.format_node()}")


def contract_compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]):
    check_contract(gm, example_inputs)
    return gm.forward


BACKENDS: dict[str, Callable] = {
    "aot_eager": aot_eager,
    "save_all": aot_autograd(contract_compiler, partition_fn=save_all_partition),
    "min_cut": aot_autograd(contract_compiler, partition_fn=min_cut_partition),
}


def assert_compiled(compiled: Any) -> None:
    """Every specialization was really compiled (none fell back to eager)."""
    assert compiled.plans and all(isinstance(p, CompiledPlan) for p in compiled.plans.values())


def _float_outputs(out: Any) -> list[torch.Tensor]:
    return [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]


def _loss(out: Any) -> torch.Tensor | None:
    terms = []
    for i, o in enumerate(_float_outputs(out)):
        g = torch.Generator().manual_seed(100 + i)
        w = torch.randn(o.shape, generator=g, dtype=torch.float32 if o.dtype == torch.float64 else o.dtype)
        terms.append((o * w.to(o.dtype)).sum())
    return sum(terms) if terms else None


def assert_same(actual: Any, expected: Any, tol: float) -> None:
    a_flat, a_spec = pytree.tree_flatten(actual)
    e_flat, e_spec = pytree.tree_flatten(expected)
    assert a_spec == e_spec, (a_spec, e_spec)
    for a, e in zip(a_flat, e_flat):
        if isinstance(e, torch.Tensor):
            assert isinstance(a, torch.Tensor)
            assert a.shape == e.shape and a.dtype == e.dtype
            assert a.requires_grad == e.requires_grad
            torch.testing.assert_close(a, e, rtol=tol, atol=tol)
        else:
            assert a == e


def _clone_inputs(inputs: Sequence[Any]) -> list[Any]:
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            c = x.detach().clone()
            c.requires_grad_(x.requires_grad)
            out.append(c)
        else:
            out.append(x)
    return out


def _float64_twin(ref: torch.nn.Module, train: bool) -> torch.nn.Module | None:
    """A float64 copy of a float32 training module: the referee when eager's own float32 gradients
    are far from the exact ones (an ill-conditioned sum, or a CPU kernel's rounding)."""
    floats = [t for t in list(ref.parameters()) + list(ref.buffers()) if t.is_floating_point()]
    if not train or not floats or any(t.dtype != torch.float32 for t in floats):
        return None
    return copy.deepcopy(ref).double()


def _as_float64(inputs: Sequence[Any]) -> list[Any]:
    """Float64 leaves of the float32 inputs (requires_grad kept), the rest as they are."""
    return [x.detach().double().requires_grad_(x.requires_grad)
            if isinstance(x, torch.Tensor) and x.dtype == torch.float32 else x for x in inputs]


def assert_grad_close(got: torch.Tensor, eager: torch.Tensor, exact: torch.Tensor | None, tol: float, name: str) -> None:
    """``got`` matches eager's gradient, or, where eager's float32 gradient is itself off the float64
    one (``exact``), ``got`` is no farther from it than eager is."""
    try:
        torch.testing.assert_close(got, eager, rtol=tol, atol=tol, msg=name)
    except AssertionError:
        if exact is None:
            raise
        ours = (got.double() - exact).abs().max().item()
        theirs = (eager.double() - exact).abs().max().item()
        assert ours <= theirs + tol, f"{name}: {ours:.3g} from the float64 gradient, eager float32 {theirs:.3g}"


def compare_module(
    make: Callable[[], torch.nn.Module],
    make_inputs: Callable[[int], Sequence[Any]],
    backend: Callable,
    steps: int = 1,
    tol: float = 1e-4,
    train: bool = True,
) -> Any:
    """Run a module eagerly and through ``backend`` for ``steps`` steps; compare everything."""
    torch.manual_seed(0)
    ref = make().train(train)
    mod = copy.deepcopy(ref)
    twin = _float64_twin(ref, train)
    gm, names = lift(mod)
    compiled = None
    for step in range(steps):
        inputs = list(make_inputs(step))
        ref_inputs = _clone_inputs(inputs)
        args = module_tensors(mod, names) + inputs
        if compiled is None:
            compiled = backend(gm, args)
        out = compiled(*args)
        expected = ref(*ref_inputs)
        assert_same(out, expected, tol)
        loss, ref_loss = _loss(out), _loss(expected)
        if ref_loss is not None:
            loss.backward()
            ref_loss.backward()
            if twin is not None:
                twin_inputs = _as_float64(inputs)
                _loss(twin(*twin_inputs)).backward()
        exact = dict(twin.named_parameters()) if twin is not None else {}
        for (name, p), (_, rp) in zip(mod.named_parameters(), ref.named_parameters()):
            assert (p.grad is None) == (rp.grad is None), name
            if rp.grad is not None:
                assert_grad_close(p.grad, rp.grad, getattr(exact.get(name), "grad", None), tol, name)
        for (name, b), (_, rb) in zip(mod.named_buffers(), ref.named_buffers()):
            torch.testing.assert_close(b, rb, rtol=tol, atol=tol, msg=name)
        for i, (x, rx) in enumerate(zip(inputs, ref_inputs)):
            if isinstance(x, torch.Tensor) and rx.requires_grad:
                exact_x = twin_inputs[i].grad if twin is not None and ref_loss is not None else None
                assert_grad_close(x.grad, rx.grad, exact_x, tol, f"input {i}")
    assert_compiled(compiled)
    return compiled


def compare_fn(
    fn: Callable,
    make_inputs: Callable[[], Sequence[Any]],
    backend: Callable,
    tol: float = 1e-5,
    calls: int = 2,
    gm: torch.fx.GraphModule | None = None,
) -> Any:
    """Trace ``fn`` with symbolic_trace (unless ``gm`` is given), call the compiled graph
    ``calls`` times and compare outputs, input mutations and grads with eager ``fn``."""
    gm = gm if gm is not None else torch.fx.symbolic_trace(fn)
    compiled = None
    for _ in range(calls):
        inputs = list(make_inputs())
        ref_inputs = _clone_inputs(inputs)
        if compiled is None:
            compiled = backend(gm, inputs)
        out = compiled(*inputs)
        expected = fn(*ref_inputs)
        assert_same(out, expected, tol)
        loss, ref_loss = _loss(out), _loss(expected)
        if ref_loss is not None:
            loss.backward()
            ref_loss.backward()
        for x, rx in zip(inputs, ref_inputs):
            if isinstance(x, torch.Tensor):
                torch.testing.assert_close(x.detach(), rx.detach(), rtol=tol, atol=tol)
                if rx.requires_grad:
                    assert (x.grad is None) == (rx.grad is None)
                    if rx.grad is not None:
                        torch.testing.assert_close(x.grad, rx.grad, rtol=tol, atol=tol)
    assert_compiled(compiled)
    return compiled
