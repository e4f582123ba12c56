"""Behaviours ported from PyTorch's Dynamo tests: this folder and the corpus harness (whose comparing
helpers the behaviour harness reuses) on sys.path, and a time limit on each case."""
from __future__ import annotations

import os
import signal
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "core", "corpus"))
sys.path.insert(0, HERE)

CASE_SECONDS = 120


@pytest.fixture(autouse=True)
def _time_limit():
    """A case that hangs fails instead of stalling CI (``signal.alarm``: main thread only)."""
    def expired(signum, frame):
        raise TimeoutError(f"a behaviour case ran over {CASE_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(CASE_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
