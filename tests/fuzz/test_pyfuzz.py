"""The Python-program fuzzer: the known bugs' minimal programs (``pyregressions.py``), the seeded
share that CI runs, and proof that the net catches what it is meant to catch.

The share runs the first programs of a fixed seed range on each backend (fewer on the inductor,
which builds C++ kernels), leaving out the variants of unfixed known bugs; every program must
match eager after every call, and most must put something in a graph. The longer runs are
``python -m tests.fuzz.run --kind python``.
"""
from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

import ember
from tests.fuzz.pygen import generate
from tests.fuzz.pyharness import check, expect
from tests.fuzz.pyprogram import PyProgram, Twin
from tests.fuzz.pyregressions import CASES, known
from tests.fuzz.pystate import compare
from tests.fuzz.shrink import shrink

SEED = 20261201
SHARES = {"eager": 50, "aot_eager": 30, "inductor": 8}


def _cases() -> list:
    out = []
    for name, case in CASES.items():
        marks = [pytest.mark.xfail(reason=case.xfail, strict=True, raises=AssertionError)] if case.xfail else []
        out += [pytest.param(case.program, b, id=f"{name}-{b}", marks=marks) for b in case.backends]
    return out


@pytest.mark.parametrize("program, backend", _cases())
def test_minimal_program_matches_eager(program: PyProgram, backend: str) -> None:
    outcome = check(program, backend)
    ember.reset()
    assert outcome.status == "ok", f"{outcome.category}\n{program.source}"


@pytest.mark.parametrize("backend", list(SHARES))
def test_seeded_share_matches_eager(backend: str) -> None:
    failures, with_graph = [], 0
    for seed in range(SEED, SEED + SHARES[backend]):
        program = generate(seed, exclude=known(backend))
        outcome = check(program, backend)
        ember.reset()
        with_graph += outcome.graphs > 0
        if outcome.status != "ok":
            failures.append(f"seed {seed}: {outcome.category}\n{program.source}{program.mutations}")
    assert not failures, f"{len(failures)} of {SHARES[backend]} programs differ from eager:\n" + "\n".join(failures)
    # capture must keep working: a program whose function falls back to eager as a whole proves nothing
    assert with_graph >= 0.75 * SHARES[backend], f"only {with_graph} programs compiled a graph"


def test_generation_is_deterministic_and_valid() -> None:
    for seed in range(5):
        program = generate(seed)
        assert program == generate(seed)
        assert len(program.variants) >= 2 and expect(program), program.source


STATE = PyProgram(
    setup=("A0 = rand(2, 3, seed=1).requires_grad_()", "L = [1]\nLB = L", "D = {'a': 1}",
           "class C:\n    def __init__(self):\n        self.n = 0", "O = C()", "def h(t, a=2):\n    return t * a",
           "T = rand(2, 3, seed=2)\nTV = T[0]", "torch.manual_seed(0)\nMO = torch.nn.Linear(3, 3)",
           "os.environ['EMBER_FUZZ_1'] = '1'"),
    cells=(("c", "1"),), kwparams=(("p", "2"),),
    stmts=("acc = h(x0) * c * p + T", "acc = MO(acc)"), outputs=("acc", "L"), args=(("x0", "A0"),),
    grad=True, calls=1)


@pytest.mark.parametrize("perturbation, expected", [
    ("L.append(9)", "output [1]: 2 items instead of 1"),  # L is returned, the live list
    ("D['a'] = 2", "D['a']: 2 instead of 1"),
    ("O.n = 5", "O (attributes)['n']: 5 instead of 0"),
    ("h.__defaults__ = (3,)", "h['__defaults__'][0]: 3 instead of 2"),
    ("f.__kwdefaults__['p'] = 9", "f['__kwdefaults__']['p']: 9 instead of 2"),
    ("set_cell(f, 'c', 7)", "f['cells']['c']: 7 instead of 1"),
    ("T.add_(1)", "T: values differ"),
    ("T.tag = 1", "T (attributes): keys ['tag'] instead of []"),
    ("MO.train(False)", "MO['training']: False instead of True"),
    ("A0.grad = None", "A0.grad: None instead of a tensor"),
    ("os.environ['EMBER_FUZZ_1'] = '2'", "<environment>['EMBER_FUZZ_1']: '2' instead of '1'"),
    ("pyflags.SCALE = 3", "<pyflags>['SCALE']: 3 instead of 2"),
    ("LB = list(L)", "identity: LB is LB instead of is output[1]"),
    ("TV = T[0].clone()", "identity: TV is TV, shares storage with TV instead of is TV, shares storage with T"),
])
def test_every_kind_of_state_is_compared(perturbation: str, expected: str) -> None:
    eager, other = Twin(STATE), Twin(STATE, role="other")
    want, got = eager.call(0), other.call(0)
    assert compare(eager, want, other, got) is None
    with other.state:
        exec(perturbation, other.ns)
    found = compare(eager, want, other, got)
    assert found is not None and found.startswith(expected), found


def test_outputs_and_their_identity_are_compared() -> None:
    eager, other = Twin(STATE), Twin(STATE, role="other")
    want, got = eager.call(0), other.call(0)
    assert compare(eager, want, other, (got[0] + 1e-2, got[1])).startswith("output [0]: values differ")
    assert compare(eager, want, other, (got[0], list(got[1]))) == "identity: L is L instead of is output[1]"


def _off_by(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    def run(*args: Any) -> Any:
        return [o + 1e-2 if isinstance(o, torch.Tensor) and o.dtype.is_floating_point else o for o in gm(*args)]
    return run


def test_a_wrong_backend_is_caught_and_shrunk() -> None:
    program = generate(7)
    outcome = check(program, _off_by)
    assert outcome.status == "mismatch" and outcome.detail.startswith("call 0:"), outcome
    small = shrink(program, _off_by, check=check)
    assert len(small.setup) + len(small.stmts) < len(program.setup) + len(program.stmts)
    assert small.mutations == () and small.calls == 1 and check(small, _off_by).status == "mismatch"
    assert check(small, "eager").status == "ok"
