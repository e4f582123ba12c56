"""A configuration module that fuzzed Python programs read and mutate (``pyflags.SCALE`` and so on),
as user code reads a library's config module. Process-global: each twin of a program runs with its
own copy of these attributes (``pyprogram.GlobalState`` swaps them in), starting from ``DEFAULTS``."""
from __future__ import annotations

import copy
from typing import Any

DEFAULTS: dict[str, Any] = {"ENABLED": True, "SCALE": 2, "MODE": "fast", "LIMITS": [1, 2]}

ENABLED: bool = True
SCALE: int = 2
MODE: str = "fast"
LIMITS: list[int] = [1, 2]


def fresh() -> dict[str, Any]:
    """A new copy of the defaults (lists included)."""
    return copy.deepcopy(DEFAULTS)
