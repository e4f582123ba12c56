"""Shared set-up of the ember_aot tests: the repository root on sys.path, for benchmarks.models."""
from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # for benchmarks.models
