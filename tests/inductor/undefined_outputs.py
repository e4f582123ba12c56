"""An aten-style op whose kernel leaves an output undefined where its meta kernel makes a tensor.

cuDNN's attention does this on the GPU: asked for no logsumexp (inference), its kernel returns an
undefined tensor in that slot, which Python sees as None, while its meta kernel returns an empty
float tensor. ``ember_test.pair(x)`` returns ``(x * 2, None)`` on the CPU and two tensors under
fake tensors, so the CPU tests meet the same case.
"""
from __future__ import annotations

import torch

_LIB = torch.library.Library("ember_test", "DEF")
_LIB.define("pair(Tensor x) -> (Tensor, Tensor)")
_LIB.impl("pair", lambda x: (x * 2, None), "CPU")
_LIB.impl("pair", lambda x: (torch.empty_like(x), torch.empty_like(x)), "Meta")


def first_of_pair(x: torch.Tensor) -> torch.Tensor:
    """Reads only the defined output, as an inference graph reads attention's output only."""
    return torch.ops.ember_test.pair(x.sin())[0] + 1


def second_of_pair(x: torch.Tensor) -> torch.Tensor:
    """Reads the undefined output: eager raises (None + 1)."""
    return torch.ops.ember_test.pair(x.sin())[1] + 1
