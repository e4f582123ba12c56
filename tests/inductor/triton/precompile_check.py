"""Compile kernels in ember's Triton worker processes, then in this one: the second must find
everything in Triton's cache. No GPU needed (explicit sm_90 target).

Run as a script in a process where ``TRITON_INTERPRET`` is unset; prints one JSON line: the
number of jobs, the workers' error messages, the cache files this process added afterwards,
whether every binary has a cubin, whether the hashes the workers reported are those of the
binaries, and whether reading each back by its hash through a ``KernelRef`` (what a process loading
a stored plan does, without importing the kernel's module) gives the same cubin.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))]

from triton.backends.compiler import GPUTarget  # noqa: E402

from ember_inductor.codegen.triton_backend import generate_triton  # noqa: E402
from ember_inductor.codegen.triton_runtime import kernel_path, write_kernel  # noqa: E402
from ember_inductor.codegen.triton_compile import (Job, KernelRef, WorkerPool, compile_kernel, import_kernel,  # noqa: E402
                                                   load_compiled)
from triton_cases import CASES, inputs_on  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def _worker_imports_torch() -> bool:
    code = "import sys, ember_inductor.codegen.triton_compile; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def main(case_ids: list[str]) -> int:
    jobs, fns = [], []
    for case_id, fn, make in CASES:
        if case_id not in case_ids:
            continue
        for source, kernel in generate_triton(fn, inputs_on(make, "cpu")).values():
            key = write_kernel(source)
            jit_fn = import_kernel(kernel_path(key), kernel.name)
            for cfg in kernel.configs():
                jobs.append(Job(kernel_path(key), kernel.name, kernel.signature(), cfg.kwargs(), cfg.num_warps,
                                cfg.num_stages, SM90))
                fns.append(jit_fn)
    pool = WorkerPool(2)
    results = pool.run(jobs)
    errors = [e for _, e in results if e is not None]
    pool.close()
    before = _files(os.environ["TRITON_CACHE_DIR"])
    binaries = [compile_kernel(fn, job.signature, job.constexprs, job.num_warps, job.num_stages, job.target)
                for fn, job in zip(fns, jobs)]
    added = sorted(_files(os.environ["TRITON_CACHE_DIR"]) - before)
    refs = [KernelRef(job.fn_name, list(job.signature)) for job in jobs]
    reread = [load_compiled(ref, job.signature, job.constexprs, b.hash, "cubin")
              for ref, job, b in zip(refs, jobs, binaries)]
    print(json.dumps({"jobs": len(jobs), "errors": errors, "added": added,
                      "cubins": all(b.asm.get("cubin") for b in binaries),
                      "reread": all(r is not None and r.asm["cubin"] == b.asm["cubin"] and r.metadata == b.metadata
                                    for r, b in zip(reread, binaries)),
                      "worker_hashes": [h for h, _ in results] == [b.hash for b in binaries],
                      "ref_arg_names": all(ref.arg_names == fn.arg_names for ref, fn in zip(refs, fns)),
                      "missing_hash": load_compiled(refs[0], jobs[0].signature, jobs[0].constexprs, "0" * 64,
                                                    "cubin") is None,
                      "worker_imports_torch": _worker_imports_torch()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
