"""Shared pytest set-up: a fresh ember cache per test, and the `gpu` marker skipping without CUDA."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _reset_ember():
    import ember

    ember.reset()
    yield
    ember.reset()


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
