"""The Python-program fuzzer: the known bugs' minimal programs (``pyregressions.py``), the seeded
share that CI runs, and proof that the net catches what it is meant to catch.

The share runs the first programs of a fixed seed range on each backend (fewer on the inductor),
leaving out the variants of unfixed known bugs, and every one must match eager after every call.
The longer runs are ``python -m tests.fuzz.run --kind python``.
"""
from __future__ import annotations

import pytest

from tests.fuzz.pyharness import check
from tests.fuzz.pyregressions import CASES


def _cases() -> list:
    out = []
    for name, case in CASES.items():
        marks = [pytest.mark.xfail(reason=case.xfail, strict=True, raises=AssertionError)] if case.xfail else []
        out += [pytest.param(case.program, b, id=f"{name}-{b}", marks=marks) for b in case.backends]
    return out


@pytest.mark.parametrize("program, backend", _cases())
def test_minimal_program_matches_eager(program, backend: str) -> None:
    outcome = check(program, backend)
    assert outcome.status == "ok", f"{outcome.category}\n{program.source}"
