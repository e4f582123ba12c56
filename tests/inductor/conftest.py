"""ember_inductor tests: one private compile cache per test session, strict compilation.

Strict mode turns a graph that fails to compile into an error instead of an eager fallback,
so a lowering or codegen bug cannot hide behind the fallback.
"""
from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

import pytest

os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="ember_inductor_tests_")
os.environ["EMBER_INDUCTOR_STRICT"] = "1"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # for benchmarks.models


@pytest.fixture
def extern_ops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The aten ops the lowering leaves to aten (``GraphLowering._extern``), in call order."""
    from ember_inductor import graph as lowering_graph

    seen: list[str] = []
    extern = lowering_graph.GraphLowering._extern

    def spy(self: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(node.target))
        return extern(self, node, *args, **kwargs)
    monkeypatch.setattr(lowering_graph.GraphLowering, "_extern", spy)
    return seen
