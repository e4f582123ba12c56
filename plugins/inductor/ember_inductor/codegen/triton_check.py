"""A net for launch configurations (``EMBER_TRITON_CHECK_CONFIGS=1``): when a kernel is autotuned,
every configuration also runs once on copies of the real arguments, and two configurations whose
results differ beyond rounding raise an error naming the kernel and both configurations (also
appended to the file the variable names, when it names one: errors inside a compiled call may be
caught by a fallback).

Autotuning picks a configuration by its time, so one that computes wrongly for some sizes (a mask,
a split, an alignment it assumes) surfaces only when timing noise picks it: a wrong result that
comes and goes with the load on the GPU. With the net on, a test run exercises every
configuration of every kernel it compiles (on a fresh cache: a saved choice skips autotuning)."""
from __future__ import annotations

import os
from typing import Callable, Sequence

import torch


def enabled() -> bool:
    return os.environ.get("EMBER_TRITON_CHECK_CONFIGS", "") not in ("", "0")


def _copy(a: object) -> object:
    """``a`` on a copy of its whole storage, same offset and strides (a kernel indexes the storage)."""
    if not isinstance(a, torch.Tensor):
        return a
    out = torch.empty(0, dtype=a.dtype, device=a.device)
    return out.set_(a.untyped_storage().clone(), a.storage_offset(), a.size(), a.stride())


def _tolerance(dtype: torch.dtype) -> float:
    return {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4, torch.float64: 1e-9}.get(dtype, 0.0)


def _differs(a: torch.Tensor, b: torch.Tensor) -> float | None:
    """The largest difference of two results when beyond rounding (relative to the largest
    value: reductions in another order and atomic adds round differently), else None."""
    if not a.is_floating_point():
        return None if torch.equal(a, b) else float((a.double() - b.double()).abs().max())
    tolerance = _tolerance(a.dtype)
    a, b = a.double(), b.double()
    if a.numel() == 0:
        return None
    if not torch.equal(a.isnan(), b.isnan()):
        return float("nan")
    worst = float(torch.nan_to_num((a - b).abs(), nan=0.0).max())
    scale = float(torch.nan_to_num(a.abs(), nan=0.0, posinf=0.0).max())
    return worst if worst > tolerance * max(scale, 1.0) else None


def check(key: str, launches: dict[int, Callable], args: Sequence[object], describe: Callable[[int], str]) -> None:
    """Run each of ``launches`` (configuration index -> launch) once on copies of ``args`` and
    raise when a result differs from the first configuration's."""
    results: dict[int, list[object]] = {}
    for index, launch in launches.items():
        copies = [_copy(a) for a in args]
        try:
            launch(*copies)
        except Exception:  # noqa: BLE001 (a configuration this device cannot run: autotuning skips it too)
            continue
        results[index] = copies
    if len(results) < 2:
        return
    first, *others = results
    for index in others:
        for pos, (a, b) in enumerate(zip(results[first], results[index])):
            if not isinstance(a, torch.Tensor):
                continue
            worst = _differs(a, b)  # type: ignore[arg-type]
            if worst is not None:
                message = (f"Triton kernel {key}: configuration {describe(index)} and {describe(first)} differ in "
                           f"argument {pos} ({a.dtype}, {tuple(a.shape)}) by up to {worst:.4g}")
                if os.sep in os.environ.get("EMBER_TRITON_CHECK_CONFIGS", ""):
                    with open(os.environ["EMBER_TRITON_CHECK_CONFIGS"], "a") as f:
                        f.write(message + "\n")
                raise RuntimeError(message)
