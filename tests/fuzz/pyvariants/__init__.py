"""The pieces of fuzzed Python programs: one ``Variant`` per way of reading or mutating state.

A variant brings module-level setup, closure cells and keyword parameters of ``f``, alternatives
for ``f``'s body (each a few statements that read ``acc``, the running tensor, and end by
rebinding it, plus Python values to return) and the mutations that may run between calls.
Placeholders: ``$k`` the variant's number in the program (so names never clash), ``$S`` the
program's tensor shape (``2, 3``), ``$n`` its last size, ``$i`` a small int, ``$s``/``$t`` seeds.

Variants are keyed by name; ``pyregressions.py`` names the ones a known bug breaks, so the seeded
share in CI can leave them out until the bug's expected failure turns into a pass.
"""
from __future__ import annotations

from tests.fuzz.pyvariants.base import Body, Variant
from tests.fuzz.pyvariants.objects import OBJECTS
from tests.fuzz.pyvariants.python import PYTHON
from tests.fuzz.pyvariants.state import STATE

VARIANTS: dict[str, Variant] = {**STATE, **OBJECTS, **PYTHON}

__all__ = ["Body", "VARIANTS", "Variant"]
