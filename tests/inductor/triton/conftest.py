"""Triton tests: without CUDA, kernels run in Triton's interpreter (set before triton is imported).

On a GPU machine the interpreter is left off so that the ``gpu`` tests compile real kernels; the
interpreter tests then skip (run them there with ``TRITON_INTERPRET=1`` in the environment).
"""
from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture
def triton_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton kernels for every graph, CPU tensors included (run by the interpreter)."""
    monkeypatch.setenv("EMBER_INDUCTOR_KERNELS", "triton")
