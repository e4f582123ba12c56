"""The zoo's one table of known capture shortfalls: (model, mode) -> ember's first break reason
(as ``ember.explain`` reports it) or why it makes more graphs than torch.compile. Each entry is a
strict expected failure of tests/zoo/test_zoo.py: when capture is fixed the test passes, fails
as XPASS, and the entry must go, so the table only shrinks. Results are never listed here: a
result that differs from eager is a failure.

CI_SHARE is the fixed share of models CI runs (one per family; about a minute on a 2-core
machine);
``EMBER_ZOO=all`` runs every model."""
from __future__ import annotations

SHORTFALLS: dict[tuple[str, str], str] = {}

CI_SHARE: tuple[str, ...] = ("bert", "llama", "t5", "vit")
