"""Compile kernels in ember's Triton worker processes, then in this one: the second must find
everything in Triton's cache. No GPU needed (explicit sm_90 target).

Run as a script in a process where ``TRITON_INTERPRET`` is unset; prints one JSON line: the
number of jobs, the workers' error messages, the cache files this process added afterwards, and
whether every binary has a cubin.
"""
from __future__ import annotations

import json
import os
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))]

from triton.backends.compiler import GPUTarget  # noqa: E402

from ember_inductor.codegen.triton_backend import generate_triton  # noqa: E402
from ember_inductor.codegen.triton_runtime import compile_config, kernel_path, load_kernel  # noqa: E402
from ember_inductor.codegen.triton_workers import Job, WorkerPool  # noqa: E402
from triton_cases import CASES, inputs_on  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def main(case_ids: list[str]) -> int:
    jobs, fns = [], []
    for case_id, fn, make in CASES:
        if case_id not in case_ids:
            continue
        for source, kernel in generate_triton(fn, inputs_on(make, "cpu")).values():
            jit_fn, key = load_kernel(source, kernel.name)
            for cfg in kernel.configs():
                jobs.append(Job(kernel_path(key), kernel.name, kernel.signature(), cfg, SM90))
                fns.append(jit_fn)
    pool = WorkerPool(2)
    errors = [e for e in pool.run(jobs) if e is not None]
    pool.close()
    before = _files(os.environ["TRITON_CACHE_DIR"])
    binaries = [compile_config(fn, job.signature, job.config, job.target) for fn, job in zip(fns, jobs)]
    added = sorted(_files(os.environ["TRITON_CACHE_DIR"]) - before)
    print(json.dumps({"jobs": len(jobs), "errors": errors, "added": added,
                      "cubins": all(b.asm.get("cubin") for b in binaries)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
