"""ember_cudagraphs tests: CPU tests drive the wrapper with a fake recorder; GPU tests need CUDA."""
from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
for path in (_HERE, _ROOT):  # fake_recorder; benchmarks.models
    if path not in sys.path:
        sys.path.insert(0, path)
