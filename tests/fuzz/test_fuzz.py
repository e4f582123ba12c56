"""The seeded share of the differential fuzzer that CI runs, and proof that the net can fail.

Each backend runs the first programs of a fixed seed range (fewer on inductor, which builds C++
kernels; onnxrt and tvm get inference programs only) and must match eager on every one, and
capture most of them as one graph. The longer runs are ``python -m tests.fuzz.run``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pytest
import torch

from tests.fuzz.gen import generate
from tests.fuzz.harness import check
from tests.fuzz.program import Input, Program
from tests.fuzz.shrink import shrink

SEED = 20261124
SHARES = {"eager": (20, None), "aot_eager": (20, None), "inductor": (6, None), "onnxrt": (6, False),
          "tvm": (3, False)}


@pytest.mark.parametrize("backend", list(SHARES))
def test_seeded_share_matches_eager(backend: str) -> None:
    n, training = SHARES[backend]
    failures, captured, ran = [], 0, 0
    for seed in range(SEED, SEED + n):
        program = generate(seed, training=training)
        outcome = check(program, backend)
        assert outcome.status != "invalid", program.source
        ran += outcome.status != "skipped"
        captured += outcome.full_capture
        if outcome.status not in ("ok", "skipped"):
            failures.append(f"seed {seed}: {outcome.category}\n{program.source}")
    assert not failures, f"{len(failures)} of {ran} programs differ from eager:\n" + "\n".join(failures)
    # the share's data-dependent branches and .item() calls break the graph; nothing else should
    assert captured >= 0.8 * ran, f"only {captured} of {ran} programs were captured as one graph"


def _corrupting(edit: Callable[[list[Any], tuple], Any]) -> Callable:
    """A backend that runs the graph, then hands ``edit(inputs, outputs)`` back."""
    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        def run(*args: Any) -> Any:
            return edit(list(args), gm(*args))
        return run
    return backend


def _off_by(outputs: Any) -> Any:
    return tuple(o + 1e-2 if o.dtype.is_floating_point else o for o in outputs)


def _detached(outputs: Any) -> Any:
    return tuple(o.detach() for o in outputs)


def _lose_mutations(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    return lambda *args: gm(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])


PROGRAM = Program(
    inputs=(Input("x0", "float32", (3, 4), requires_grad=True), Input("x1", "float32", (4,))),
    stmts=("v1 = x0.sin() * 2", "v2 = v1.sum(dim=0)", "x1[1:].mul_(3)", "v3 = v2 + x1", "v4 = v3.relu()"),
    outputs=("v4", "v2"), seed=3)


@pytest.mark.parametrize("backend, expected", [
    (_corrupting(lambda args, out: _off_by(out)), "output 0: values differ"),
    (_corrupting(lambda args, out: _detached(out)), "grad of input 0: None instead of a tensor"),
    (_lose_mutations, "input 1 after the call: values differ"),
])
def test_a_wrong_backend_is_caught_and_shrunk(backend: Callable, expected: str) -> None:
    outcome = check(PROGRAM, backend)
    assert outcome.status == "mismatch" and outcome.detail.startswith("first call: " + expected), outcome
    small = shrink(PROGRAM, backend)
    assert len(small.stmts) < len(PROGRAM.stmts) and check(small, backend).status == "mismatch"
    assert check(small, "eager").status == "ok"


def test_shrinking_keeps_the_failure_and_drops_what_does_not_matter() -> None:
    def doubles_cos(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        has_cos = any(n.target in (torch.cos, "cos") for n in gm.graph.nodes)
        return (lambda *a: tuple(o * 2 for o in gm(*a))) if has_cos else gm.forward
    long = dataclasses.replace(PROGRAM, stmts=PROGRAM.stmts + ("v5 = v4.cos()",), outputs=("v5", "v2"))
    small = shrink(long, doubles_cos)
    assert small.stmts == tuple(s for s in long.stmts if s != "x1[1:].mul_(3)")
    assert small.outputs == ("v5",)
    assert [i.requires_grad for i in small.inputs] == [False, False]
