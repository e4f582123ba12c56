"""Compile every kernel generated for the shared cases to PTX for sm_90, without a GPU.

Run as a script (``python ptx_compile.py [--all-configs] [case ...]``) in a process where
``TRITON_INTERPRET`` is unset; prints one JSON line per kernel: case, kernel, configs compiled,
whether the PTX targets sm_90, and the error if any.
"""
from __future__ import annotations

import json
import os
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))]

from triton.backends.compiler import GPUTarget  # noqa: E402

from ember_inductor.codegen.triton_backend import generate_triton  # noqa: E402
from ember_inductor.codegen.triton_compile import import_kernel  # noqa: E402
from ember_inductor.codegen.triton_runtime import compile_config, kernel_path, write_kernel  # noqa: E402
from triton_cases import CASES, inputs_on  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)
# the lowerings a CUDA graph gets (atomic adds, the pooling backward) for the CPU example tensors
os.environ["EMBER_INDUCTOR_KERNELS"] = "triton"


def main(argv: list[str]) -> int:
    all_configs = "--all-configs" in argv
    wanted = [a for a in argv if not a.startswith("--")]
    for case_id, fn, make in CASES:
        if wanted and case_id not in wanted:
            continue
        for name, (source, kernel) in generate_triton(fn, inputs_on(make, "cpu")).items():
            configs = kernel.configs() if all_configs else kernel.configs()[:1]
            row = {"case": case_id, "kernel": name, "configs": len(configs), "sm90": False, "asserts": False,
                   "error": None}
            try:
                jit_fn = import_kernel(kernel_path(write_kernel(source)), kernel.name)
                binaries = [compile_config(jit_fn, kernel.signature(), c, SM90) for c in configs]
                row["sm90"] = all(".target sm_90" in b.asm["ptx"] and b.asm.get("cubin") for b in binaries)
                row["asserts"] = all("__assertfail" in b.asm["ptx"] for b in binaries)  # bounds checks kept
            except Exception as exc:  # reported, the test fails on it
                row["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
