"""The seed tutorials' torchvision and timm models (tests/zoo/vision_models.py), called as their
users call them and compiled by ember: results equal eager's (outputs, gradients and which are
None) and capture is complete (no eager fallback, graphs and breaks no more than torch.compile's
on the same call, counted with the zoo's counting helpers).

Skipped without torchvision and timm (CI has neither). On CPU, eval (backend ``eager``) runs for
every model and the training step (backend ``aot_eager``) for VISION_CI_SHARE, about two minutes on
a 2-core machine; ``EMBER_ZOO=all`` trains every model. The ``gpu`` cases run every model in both
modes on CUDA through the inductor."""
from __future__ import annotations

import os
from typing import Callable

import pytest
import torch


def _importable() -> str:
    """Why torchvision and timm cannot be used here, or "" when they can (a torchvision built for
    another torch fails at import with a RuntimeError, not an ImportError)."""
    try:
        import timm  # noqa: F401
        import torchvision  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any failure to import means: skip
        return f"torchvision and timm are needed: {type(exc).__name__}: {exc}"
    return ""


pytestmark = pytest.mark.skipif(bool(_importable()), reason=_importable() or "-")

from vision_models import VISION_BY_NAME, VISION_ZOO, vision_call  # noqa: E402
from zoo_harness import (Result, assert_same, count_torch_compile, observe_ember,  # noqa: E402
                         shortfall)

VISION_CI_SHARE = ("resnet18", "deit_tiny")
"""The models whose training step runs on CPU by default: a torchvision CNN with BatchNorm, a timm ViT."""


def _cases(device: str) -> list:
    everything = device == "cuda" or os.environ.get("EMBER_ZOO") in ("all", "inductor")
    marks = [pytest.mark.gpu] if device == "cuda" else [pytest.mark.slow]
    return [pytest.param(zoo.name, mode, marks=marks, id=f"{zoo.name}-{mode}")
            for zoo in VISION_ZOO for mode in ("eval", "train")
            if mode == "eval" or everything or zoo.name in VISION_CI_SHARE]


def _check(name: str, mode: str, device: str, backend: str) -> None:
    zoo = VISION_BY_NAME[name]

    def call(wrap: Callable[[Callable], Callable] | None) -> Result:
        out, grads = vision_call(zoo, mode, wrap, device)
        return Result([out], grads)

    got = observe_ember(call, backend)
    assert_same(got, call(None), mode)
    assert not got.capture.fallback, f"eager fallback: {got.capture.first_reason}"
    reason = shortfall(got.capture, count_torch_compile(call))
    assert not reason, reason


@pytest.mark.parametrize("name,mode", _cases("cpu"))
def test_vision_zoo(name: str, mode: str) -> None:
    _check(name, mode, "cpu", "aot_eager" if mode == "train" else "eager")


@pytest.mark.parametrize("name,mode", _cases("cuda"))
def test_vision_zoo_inductor_gpu(name: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """TF32 off: with it, eager's and the inductor's convolutions round differently (1e-4 apart)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    _check(name, mode, "cuda", "inductor")
