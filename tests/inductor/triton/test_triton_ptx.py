"""Every generated kernel (its first launch configuration) compiles to PTX and a cubin for sm_90 without a
GPU: ``triton.compile`` with an explicit ``GPUTarget("cuda", 90, 32)`` needs no driver. Runs in a
subprocess because the interpreter (``TRITON_INTERPRET=1``) replaces ``triton.jit`` in this one."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install -e .[test])")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ptx_compile.py")


@pytest.mark.slow
def test_all_kernels_compile_to_sm90(tmp_path) -> None:
    """Each kernel's first configuration (the one the interpreter runs); every configuration is
    compiled, autotuned and run by the GPU tests (test_triton_gpu.py on the H200) and by
    ``python ptx_compile.py --all-configs``."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITON_CACHE_DIR")}
    env["EMBER_CACHE_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, SCRIPT], env=env, capture_output=True,
                          text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) >= 40
    failed = [r for r in rows if r["error"] or not r["sm90"]]
    assert not failed, failed
    # the gather/embedding kernel's index checks survive compilation (built with Triton's debug)
    assert any(r["asserts"] for r in rows if r["case"] == "indexing"), rows


@pytest.mark.slow
def test_worker_processes_fill_the_cache_this_process_compiles_from(tmp_path) -> None:
    script = os.path.join(os.path.dirname(SCRIPT), "precompile_check.py")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["EMBER_CACHE_DIR"] = str(tmp_path / "ember")
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton")
    proc = subprocess.run([sys.executable, script, "broadcast", "norms_persistent"], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    assert row["jobs"] >= 4
    assert row["errors"] == []
    assert row["added"] == []  # every configuration came from the workers' compilations
    assert row["cubins"]
    assert row["worker_hashes"]  # what the workers report is where the binaries are
    assert row["ref_arg_names"]  # a KernelRef names the parameters as the jit function does
    assert row["reread"] and row["missing_hash"]  # stored binaries load by hash; an unknown hash is a miss
    assert not row["worker_imports_torch"]  # workers start in a fraction of a second
