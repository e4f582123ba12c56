"""Turn a Relax IRModule into a VM executable for the host CPU or a CUDA GPU.

Targets: ``llvm`` with the host's CPU (``llvm_get_system_cpu``, e.g. ``znver4``, so LLVM may use
every vector extension it has) and its core count, or ``cuda`` with the GPU's ``sm_XX`` when the
inputs live on a GPU and the installed TVM was built with CUDA.

Schedules (``options.tuning``):

* ``"default"``: TVM's per-target default pipeline (legalize, fuse); on CPU ember then applies
  its own parallel + vectorize schedule (``cpu_schedule.py``); on GPU TVM's dlight rules.
* ``"none"``: the same without ember's CPU schedule (plain loops; for debugging).
* ``"meta_schedule"``: MetaSchedule tuning with ``options.trials`` trials in total, its logs
  kept next to the cache entry.
"""
from __future__ import annotations

import functools
import os
import tempfile
from typing import Any

import torch

from .options import TvmOptions


@functools.lru_cache(maxsize=None)
def host_target_spec() -> dict[str, Any]:
    """The llvm target description for this machine's CPU."""
    from tvm.target import codegen

    spec: dict[str, Any] = {"kind": "llvm", "num-cores": os.cpu_count() or 1}
    cpu = str(codegen.llvm_get_system_cpu())
    if cpu and cpu != "generic" and codegen.llvm_is_valid_cpu(cpu, str(codegen.llvm_get_system_triple())):
        spec["mcpu"] = cpu
    return spec


def tvm_supports_cuda() -> bool:
    """True when the installed TVM was built with CUDA and sees a GPU."""
    import tvm

    return str(tvm.support.libinfo().get("USE_CUDA", "OFF")).upper() == "ON" and tvm.cuda(0).exist


def choose_target(device: torch.device, options: TvmOptions) -> tuple[Any, Any]:
    """``(tvm.target.Target, tvm device)`` for tensors on ``device``.

    Raises ``RuntimeError`` when the device is a GPU that this TVM cannot drive.
    """
    import tvm

    if device.type == "cuda":
        if not tvm_supports_cuda():
            raise RuntimeError("inputs are on a CUDA device but the installed TVM has no CUDA runtime")
        major, minor = torch.cuda.get_device_capability(device)
        spec = options.target or {"kind": "cuda", "arch": f"sm_{major}{minor}"}
        return tvm.target.Target(spec, host=host_target_spec()), tvm.cuda(device.index or 0)
    if device.type != "cpu":
        raise RuntimeError(f"tvm backend: no TVM target for device {device}")
    return tvm.target.Target(options.target or host_target_spec()), tvm.cpu(0)


def _lowered(mod: Any, target: Any, options: TvmOptions) -> Any:
    """Apply the Relax pipeline (and tuning) chosen by ``options``; returns the lowered module."""
    import tvm
    from tvm import relax

    is_gpu = "gpu" in target.keys
    if options.tuning == "meta_schedule":
        with tempfile.TemporaryDirectory(prefix="ember-tvm-ms-") as work_dir:
            mod = relax.get_pipeline(
                "static_shape_tuning",
                total_trials=options.trials,
                target=target,
                work_dir=work_dir,
                max_trials_per_task=options.trials_per_task,
            )(mod)
        with target:
            return relax.get_default_pipeline(target)(mod)
    with target:
        if is_gpu or options.tuning == "none":
            return relax.get_default_pipeline(target)(mod)
        from tvm.relax.backend.cpu_generic import pipeline as cpu

        from .cpu_schedule import ParallelVectorize

        seq = tvm.transform.Sequential([
            *cpu.library_dispatch_passes(target),
            *cpu.legalize_passes(target),
            ParallelVectorize(),
            *cpu.dataflow_lower_passes(target),
            *cpu.finalize_passes(target),
        ])
        return seq(mod)


def build(mod: Any, target: Any, options: TvmOptions) -> Any:
    """Compile ``mod`` into a ``tvm.relax.VMExecutable`` for ``target``."""
    from tvm import relax

    lowered = _lowered(mod, target, options)
    return relax.build(lowered, target=target, relax_pipeline=None)
