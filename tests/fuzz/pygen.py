"""A seeded generator of random Python programs (``PyProgram``) that read state of every kind and
mutate it between calls, valid by construction.

A program starts as ``acc = x0 * 1.0`` (``x0`` the global tensor ``A0``, with a gradient in
training programs; sometimes a second argument, its own tensor or ``A0`` again) and returning
``acc``; then variants (``pyvariants.VARIANTS``) are added one at a time: their setup, one or two
of their body alternatives placed at a random point of ``f``, their outputs, and some of their
mutations before each call after the first. A variant is kept only if two eager twins of the
program still run every call alike (``pyharness.expect``), so the program is deterministic and
valid whatever the templates get wrong.
"""
from __future__ import annotations

import dataclasses
import random
import re

from tests.fuzz.pyharness import expect
from tests.fuzz.pyprogram import PyProgram
from tests.fuzz.pyvariants import VARIANTS, Variant

SHAPES = ((3,), (4,), (2, 3), (2, 4))
_PLACEHOLDER = re.compile(r"\$[kSnist]")


def _add(program: PyProgram, name: str, k: int, rng: random.Random, shape: tuple[int, ...]) -> PyProgram:
    """``program`` with variant ``name`` added as its ``k``-th part."""
    v: Variant = VARIANTS[name]
    values = {"$k": str(k), "$S": ", ".join(map(str, shape)), "$n": str(shape[-1]),
              "$i": str(rng.randint(1, 3)), "$s": str(rng.randrange(10_000)), "$t": str(rng.randrange(10_000))}

    def fill(text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: values[m.group(0)], text)
    bodies = rng.sample(v.body, min(len(v.body), rng.randint(1, 2)))
    stmts = [fill(s) for b in bodies for s in b.stmts]
    at = rng.randint(1, len(program.stmts))
    outputs = list(program.outputs) + [o for b in bodies for o in map(fill, b.outputs) if o not in program.outputs]
    mutations = list(program.mutations)
    for call in range(1, program.calls):
        mutations += [(call, fill(m)) for m in v.mutations if rng.random() < 0.3]
    return dataclasses.replace(
        program,
        setup=program.setup + tuple(fill(s) for s in v.setup),
        stmts=program.stmts[:at] + tuple(stmts) + program.stmts[at:],
        outputs=tuple(dict.fromkeys(outputs)),
        cells=program.cells + tuple((fill(n), fill(e)) for n, e in v.cells),
        kwparams=program.kwparams + tuple((fill(n), fill(e)) for n, e in v.kwparams),
        mutations=tuple(sorted(mutations, key=lambda m: m[0])),
        variants=program.variants + (name,))


def generate(seed: int, exclude: frozenset[str] = frozenset(), max_parts: int = 5) -> PyProgram:
    """A random program for ``seed`` made of 2 to ``max_parts`` variants, none of ``exclude``."""
    rng = random.Random(seed)
    shape = rng.choice(SHAPES)
    grad = rng.random() < 0.4
    dims = ", ".join(map(str, shape))
    setup = [f"A0 = rand({dims}, seed={rng.randrange(10_000)})" + (".requires_grad_()" if grad else "")]
    args = [("x0", "A0")]
    second = rng.random()
    if second < 0.2:
        setup.append(f"A1 = rand({dims}, seed={rng.randrange(10_000)})")
        args.append(("x1", "A1"))
    elif second < 0.3:
        args.append(("x1", "A0"))
    program = PyProgram(setup=tuple(setup), stmts=("acc = x0 * 1.0",), outputs=("acc",), args=tuple(args),
                        calls=rng.randint(3, 5), grad=grad, seed=seed)
    names = [n for n in VARIANTS if n not in exclude]
    for k in range(1, rng.randint(2, max_parts) + 1):
        for _ in range(4):
            candidate = _add(program, rng.choice(names), k, rng, shape)
            if expect(candidate):
                program = candidate
                break
    return program
