"""Shrinks a failing fuzz program (``Program`` or ``PyProgram``) to a minimal one that fails the same way.

Delta debugging (Zeller's ddmin) over each of the program's ``PARTS`` (outputs, statements; a
Python program's mutations, setup, cells and arguments too), repeated until none shrinks; then
the program's own ``simplifications()`` (an input without ``requires_grad`` or its transposed
layout, unused inputs dropped; fewer calls, no backward) are taken one at a time while the failure
stays. "The same way" is the same status (mismatch, crash, backend_error) on the same call and,
for exceptions, the same exception type: a candidate that eager rejects (a statement whose value
was removed) does not reproduce.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence, TypeVar

from tests.fuzz.harness import Outcome, check

T = TypeVar("T")


def same_failure(a: Outcome, b: Outcome) -> bool:
    keep = 1 if a.status == "mismatch" else 2  # "<call>", or "<call>: <exception type>"
    return a.status == b.status and a.detail.split(":")[:keep] == b.detail.split(":")[:keep]


def ddmin(items: Sequence[T], reproduces: Callable[[list[T]], bool], keep: int = 0) -> list[T]:
    """A 1-minimal sublist of ``items`` (order kept, at least ``keep`` long) that reproduces."""
    items = list(items)
    n = 2
    while len(items) > keep and len(items) >= 1:
        chunk = -(-len(items) // n)
        parts = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        for k in range(len(parts)):
            rest = [x for j, p in enumerate(parts) if j != k for x in p]
            if len(rest) >= keep and reproduces(rest):
                items, n = rest, max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items


def shrink(program: Any, backend: Any, log: Callable[[str], None] = lambda _: None,
           check: Callable[[Any, Any], Outcome] = check) -> Any:
    """The smallest program found that fails on ``backend`` as ``program`` does (according to
    ``check``: ``harness.check`` for tensor programs, ``pyharness.check`` for Python programs)."""
    target = check(program, backend)
    if target.status not in ("mismatch", "crash", "backend_error"):
        return program
    seen: dict[Any, bool] = {}

    def fails(candidate: Any) -> bool:
        if candidate not in seen:
            seen[candidate] = same_failure(check(candidate, backend), target)
        return seen[candidate]

    best = program
    while True:
        before = best
        for field, keep in type(best).PARTS:
            items = ddmin(getattr(best, field), lambda s: fails(dataclasses.replace(best, **{field: tuple(s)})), keep)
            best = dataclasses.replace(best, **{field: tuple(items)})
        best = next((c for c in best.simplifications() if fails(c)), best)
        log(f"  shrunk to {len(best.stmts)} statements, {len(best.outputs)} outputs")
        if best == before:
            return best
