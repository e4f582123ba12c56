"""Which OpInfo cases run: everything under ``EMBER_OPINFO=all`` (``make test-ops``), otherwise
CI's fixed, seeded share.

A case is one op (name + variant) on one backend, device and dtype, forward or backward.
CI's share picks ops by a stable hash of their name, so it does not move when torch adds ops:
float32 forward and backward on inductor for about 8% of the ops, backward on aot_eager
for another slice, and a few ops in each other dtype. ``EMBER_OPINFO_SAMPLES`` sets how many
samples of each op run (CI: 1; all: 3; "all" for every sample).
"""
from __future__ import annotations

import os
import zlib
from typing import Any, NamedTuple

import torch

BACKENDS = ("inductor", "aot_eager")
DEVICES = ("cpu", "cuda")
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "uint8": torch.uint8,
    "bool": torch.bool,
}
FULL = os.environ.get("EMBER_OPINFO", "ci") == "all"


class Case(NamedTuple):
    op_name: str
    variant: str
    dtype: str
    phase: str
    backend: str
    device: str

    @property
    def id(self) -> str:
        op = f"{self.op_name}.{self.variant}" if self.variant else self.op_name
        return f"{op}-{self.dtype}-{self.phase}-{self.backend}-{self.device}"


def sample_limit() -> int | None:
    value = os.environ.get("EMBER_OPINFO_SAMPLES", "3" if FULL else "1")
    return None if value == "all" else int(value)


def _bucket(op: Any) -> int:
    """A stable number in [0, 100) for the op."""
    return zlib.crc32(f"{op.name}.{op.variant_test_name}".encode()) % 100


def _in_ci_share(op: Any, dtype: str, phase: str, backend: str) -> bool:
    b = _bucket(op)
    if dtype == "float32":
        if backend == "inductor":
            return b < 8
        return phase == "bwd" and 8 <= b < 12
    # A few ops in each other dtype, forward on inductor (backward in float64 too).
    offset = 12 + 2 * list(DTYPES).index(dtype)
    return backend == "inductor" and offset <= b < offset + 2 and (phase == "fwd" or dtype == "float64")


def _phases(op: Any, device: str, dtype: torch.dtype) -> list[str]:
    phases = ["fwd"]
    if dtype.is_floating_point and op.supports_autograd and dtype in op.supported_backward_dtypes(device):
        phases.append("bwd")
    return phases


def cases(op_db: list, device: str) -> list[Case]:
    """Every case of ``op_db`` on ``device`` (cuda dtypes from the OpInfo's cuda list)."""
    out = []
    for op in op_db:
        supported = op.supported_dtypes(device)
        for name, dtype in DTYPES.items():
            if dtype not in supported:
                continue
            for phase in _phases(op, device, dtype):
                for backend in BACKENDS:
                    if FULL or _in_ci_share(op, name, phase, backend):
                        out.append(Case(op.name, op.variant_test_name, name, phase, backend, device))
    return out
