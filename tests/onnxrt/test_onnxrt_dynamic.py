"""onnxrt and graphs with symbolic sizes (issue 25): compiled per concrete shape, never symbolic."""
from __future__ import annotations

import os
import sys

import torch

from ember_onnxrt.backend import onnxrt
from ember_onnxrt.plugin import ember_backends

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "aot"))
from dynamic_helpers import dynamic_graph  # noqa: E402


def _fn(x, w):
    return (x.view(x.size(0) * 2, -1) @ w).relu().sum(1)


def test_declares_no_dynamic_support():
    assert [spec.dynamic for spec in ember_backends()] == [False]


def test_a_dynamic_graph_compiled_per_shape_matches_eager():
    w = torch.randn(3, 4)
    gm = dynamic_graph(_fn, torch.randn(5, 6), w)
    for n in (3, 7):  # not the capture's size: one compilation per shape, as the core's cache does
        x = torch.randn(n, 6)
        compiled = onnxrt(gm, [x, w])
        torch.testing.assert_close(compiled(x, w), _fn(x, w))
        assert sum(p["onnx_ops"] for p in compiled.placements()) > 0
