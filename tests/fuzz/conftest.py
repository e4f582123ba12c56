"""Fuzz tests: the repository root on sys.path (the fuzzer is the package ``tests.fuzz``, also run
as ``python -m tests.fuzz.run``) and a private inductor kernel cache, so timings are cold."""
from __future__ import annotations

import os
import sys
import tempfile

os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="ember_fuzz_tests_")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
