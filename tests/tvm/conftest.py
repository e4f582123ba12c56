"""Fixtures of the tvm backend tests: every test builds into its own private cache folder."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Point EMBER_CACHE_DIR at a fresh folder so tests neither read nor fill ~/.cache/ember."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "ember-cache"))
    return tmp_path / "ember-cache"
