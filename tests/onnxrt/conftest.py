"""Shared setup of the onnxrt backend tests: skip without onnxruntime, private cache dir."""
from __future__ import annotations

import os
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # for benchmarks.models

pytest.importorskip("onnxruntime", reason="backend onnxrt needs onnxruntime (pip install ember[onnxrt])")
pytest.importorskip("onnx", reason="backend onnxrt needs onnx (pip install ember[onnxrt])")
pytest.importorskip("onnxscript", reason="backend onnxrt needs onnxscript (pip install ember[onnxrt])")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Every test gets its own model cache directory."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "ember-cache"))
