"""Programs that write into their inputs, each with its hazard for a kernel that stores a new
value straight into the input's memory (``ember_inductor.mutation``), and the harness that
compiles them through ember_aot and the inductor (an inference graph: no grad) and compares
every call with eager on copies of the inputs. Shared by the C++ and the Triton tests."""
from __future__ import annotations

from typing import Any, Callable

import torch

from helpers import assert_same


def compile_mutating(fn: Callable, *inputs: Any, symbolic: bool = False) -> Any:
    """``fn`` compiled by the inductor backend through ember_aot (no eager fallback), for inputs
    like ``inputs``; with ``symbolic``, for every size (placeholders with symbolic sizes)."""
    from ember_inductor.backend import inductor

    gm = torch.fx.symbolic_trace(fn)
    if symbolic:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        mode = FakeTensorMode(shape_env=ShapeEnv())
        for node, real in zip([n for n in gm.graph.nodes if n.op == "placeholder"], inputs):
            node.meta["val"] = node.meta["example_value"] = mode.from_tensor(real)
    with torch.no_grad():
        return inductor(gm, list(inputs), options={"eager_fallback": False, "strict": True})


def compiled_graph(compiled: Any) -> Any:
    """The inductor's ``CompiledGraph`` of the (one) plan of an ember_aot compiled graph."""
    (plan,) = compiled.plans.values()
    plan.fw.wait()
    return plan.fw


def fresh_copies(inputs: tuple) -> list:
    """Copies with the same sizes, strides and storage offsets (views stay views of a copy)."""
    out = []
    for x in inputs:
        if not isinstance(x, torch.Tensor):
            out.append(x)
            continue
        storage = x.untyped_storage().clone()
        out.append(torch.empty(0, dtype=x.dtype).set_(storage, x.storage_offset(), x.size(), x.stride()))
    return out


def check_calls(fn: Callable, *inputs: Any, calls: int = 3, symbolic: bool = False) -> Any:
    """Compile ``fn``, call it ``calls`` times on ``inputs`` and eager as many times on copies:
    the outputs and the inputs equal after every call. Returns the compiled graph."""
    compiled = compile_mutating(fn, *inputs, symbolic=symbolic)
    expected = fresh_copies(inputs)
    for _ in range(calls):
        with torch.no_grad():
            got, want = compiled(*inputs), fn(*expected)
        assert_same(got, want)
        assert_same([x for x in inputs if isinstance(x, torch.Tensor)],
                    [x for x in expected if isinstance(x, torch.Tensor)])
    return compiled


# -- the programs --------------------------------------------------------------------------------

def momentum(p: torch.Tensor, g: torch.Tensor, m: torch.Tensor) -> None:
    """Pointwise: every new value in place, one kernel."""
    m.mul_(0.9).add_(g, alpha=0.1)
    p.sub_(0.01 * m)


def check_symbolic_momentum(sizes: tuple[int, ...]) -> None:
    """``momentum`` compiled once with symbolic sizes: one kernel writing the inputs in place (no
    allocation, no copy in the wrapper), equal to eager at each of ``sizes``."""
    compiled = check_calls(momentum, torch.randn(37), torch.randn(37), torch.randn(37), symbolic=True)
    body = compiled_graph(compiled).wrapper_source.split("def call_checked")[0]
    assert "empty_strided" not in body and "copy_" not in body, body
    for n in sizes:
        p, g, m = torch.randn(n), torch.randn(n), torch.randn(n)
        ref = fresh_copies((p, g, m))
        with torch.no_grad():
            compiled(p, g, m)
            momentum(*ref)
        for a, b in zip((p, g, m), ref):
            torch.testing.assert_close(a, b)


def old_value_transposed(x: torch.Tensor) -> torch.Tensor:
    """Another kernel reads the old value at other elements, and is realized after the write."""
    y = x.t() * 2
    x.add_(1)
    return y


def self_transposed(x: torch.Tensor) -> None:
    """The new value reads the input at other elements: its own buffer, copied in at the end."""
    x.copy_(x.t() + 1)


def shifted(x: torch.Tensor) -> None:
    """A shifted slice of itself (the slice write is a whole-input write after functionalization)."""
    x[1:].copy_(x[:-1] * 2)


def column_normalized(x: torch.Tensor) -> None:
    """A reduction over the input, then each element divided: the reduction reads the whole
    column before any element is written."""
    x.div_(x.sum(0))


def row_softmax(x: torch.Tensor) -> None:
    """Reductions along the row then the write, in one kernel: every stage reads the row first."""
    x.copy_(torch.softmax(x, -1))


def extern_reads(x: torch.Tensor, w: torch.Tensor) -> tuple:
    """An aten product reads the old value, another the new one."""
    y = x @ w
    x.add_(1)
    return y, x @ w


def returned(x: torch.Tensor) -> torch.Tensor:
    """The mutated input returned (the caller gets the input itself)."""
    x.mul_(3)
    return x


def swap(a: torch.Tensor, b: torch.Tensor) -> None:
    """Each new value is the other's old value: one of them waits in its own buffer."""
    t = a.clone()
    a.copy_(b)
    b.copy_(t)


def converted(x: torch.Tensor, y: torch.Tensor) -> None:
    """A value of another dtype copied in: converted by the kernel that stores it."""
    x.copy_(y * 2)


def step_counter(step: torch.Tensor, p: torch.Tensor, g: torch.Tensor) -> None:
    """A 0-d counter read (old and new) by every element's update."""
    step.add_(1)
    p.sub_(g * (0.1 / step))


def gathered(x: torch.Tensor, idx: torch.Tensor) -> None:
    """A write whose value is read through loaded indices."""
    x.add_(x[idx])
