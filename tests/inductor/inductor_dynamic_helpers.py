"""Helpers for the inductor's dynamic-shape tests: aten graphs with symbolic sizes, as ember_aot
hands them to the inductor (``make_fx(tracing_mode="symbolic")`` with the inductor's
decompositions, parameters lifted to inputs), and a compiled graph run over many sizes."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from ember_inductor import cache
from ember_inductor.compile_fx import CompiledGraph, compile_aten_graph
from ember_inductor.decompositions import decompositions


def symbolic_graph(fn: Callable, *inputs: Any, grad: bool = False) -> torch.fx.GraphModule:
    """The functional aten graph of ``fn`` with symbolic sizes (and symbolic int inputs)."""
    if grad:  # a training step computing its gradients: the joint graph of forward and backward,
        # with the table ember_aot uses for one (see ember_aot.decompositions.for_joint)
        from ember_aot.decompositions import for_joint
        return make_fx(fn, decomposition_table=for_joint(decompositions()), tracing_mode="symbolic")(*inputs)
    traced = make_fx(torch.func.functionalize(fn, remove="mutations"), decomposition_table=decompositions(),
                     tracing_mode="symbolic")
    with torch.no_grad():
        return traced(*inputs)


def lifted(module: torch.nn.Module) -> tuple[list[torch.Tensor], Callable]:
    """(parameters, ``fn(*parameters, *inputs)`` calling ``module`` with them)."""
    names = [n for n, _ in module.named_parameters()]
    params = [p.detach() for _, p in module.named_parameters()]

    def fn(*args: Any) -> Any:
        out = torch.func.functional_call(module, dict(zip(names, args[:len(names)])), tuple(args[len(names):]))
        return out[0] if isinstance(out, tuple) else out
    return params, fn


def compile_symbolic(fn: Callable, *inputs: Any, grad: bool = False) -> tuple[torch.fx.GraphModule, Any]:
    """(the symbolic aten graph of ``fn``, the graph compiled once), asserting it compiled
    symbolically (not per shape)."""
    gm = symbolic_graph(fn, *inputs, grad=grad)
    compiled = compile_aten_graph(gm, list(inputs))
    assert isinstance(compiled, CompiledGraph), getattr(compiled, "reason", compiled)
    return gm, compiled


def run_sizes(compiled: Callable, reference: Callable, input_sets: Sequence[Sequence[Any]],
              rtol: float = 1e-4, atol: float = 1e-5) -> int:
    """Call ``compiled`` on each input set, compare with ``reference``; returns the C++
    compilations done meanwhile (0: one compiled graph served every size)."""
    before = cache.compile_count
    for inputs in input_sets:
        out, ref = compiled(*inputs), reference(*inputs)
        ref = list(ref) if isinstance(ref, (list, tuple)) else [ref]
        assert len(out) == len(ref)
        for o, r in zip(out, ref):
            assert o.shape == r.shape and o.dtype == r.dtype, (o.shape, r.shape, o.dtype, r.dtype)
            torch.testing.assert_close(o, r, rtol=rtol, atol=atol, equal_nan=True)
    return cache.compile_count - before
