"""Fixtures of the tvm backend tests: every test builds into its own private cache folder."""
from __future__ import annotations

import os
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # for benchmarks.models


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Point EMBER_CACHE_DIR at a fresh folder so tests neither read nor fill ~/.cache/ember."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "ember-cache"))
    return tmp_path / "ember-cache"
