"""Shrinks a failing fuzz ``Program`` to a minimal one that fails the same way.

Delta debugging (Zeller's ddmin) over the program's outputs, then its statements, repeated until
neither shrinks; then each input loses ``requires_grad`` and its transposed layout where the
failure stays, and inputs the program no longer reads are dropped. "The same way" is the same
status (mismatch, crash, backend_error) on the same call and, for exceptions, the same exception type: a
candidate that eager rejects (a statement whose value was removed) does not reproduce.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Callable, Sequence, TypeVar

from tests.fuzz.harness import Outcome, check
from tests.fuzz.program import Program

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


def shrink(program: Program, backend: str, log: Callable[[str], None] = lambda _: None) -> Program:
    """The smallest program found that fails on ``backend`` as ``program`` does."""
    target = check(program, backend)
    if target.status not in ("mismatch", "crash", "backend_error"):
        return program
    seen: dict[Program, bool] = {}

    def fails(candidate: Program) -> bool:
        if candidate not in seen:
            seen[candidate] = same_failure(check(candidate, backend), target)
        return seen[candidate]

    best = program
    while True:
        before = best
        outputs = ddmin(best.outputs, lambda o: fails(dataclasses.replace(best, outputs=tuple(o))), keep=1)
        best = dataclasses.replace(best, outputs=tuple(outputs))
        stmts = ddmin(best.stmts, lambda s: fails(dataclasses.replace(best, stmts=tuple(s))))
        best = dataclasses.replace(best, stmts=tuple(stmts))
        log(f"  shrunk to {len(best.stmts)} statements, {len(best.outputs)} outputs")
        if best == before:
            break
    for k, inp in enumerate(best.inputs):
        for field in ("requires_grad", "transposed"):
            if getattr(inp, field):
                inputs = list(best.inputs)
                inputs[k] = dataclasses.replace(inp, **{field: False})
                candidate = dataclasses.replace(best, inputs=tuple(inputs))
                if fails(candidate):
                    best, inp = candidate, inputs[k]
    used = set(re.findall(r"\w+", "\n".join(best.stmts + best.outputs)))
    unused = [i for i in best.inputs if i.name not in used]
    if unused:
        candidate = dataclasses.replace(best, inputs=tuple(i for i in best.inputs if i.name in used))
        if fails(candidate):
            best = candidate
    return best
