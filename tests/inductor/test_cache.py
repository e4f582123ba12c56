"""The on-disk compile cache: reuse across processes, private directory, corrupt entries."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest
from ember.disk_cache import UnsafeCacheDir, cache_dir

SCRIPT = """
import sys, torch
sys.path.insert(0, {tests!r})
from ember_inductor import cache
from helpers import compile_fn
fn = lambda x: torch.softmax(torch.sin(x) * 3, -1) + 0.125
x = torch.randn(17, 29)
out = compile_fn(fn, x)(x)
assert torch.allclose(out, fn(x), atol=1e-5)
print("COMPILES", cache.compile_count)
"""


def _run(cache_dir: str) -> int:
    env = dict(os.environ, EMBER_CACHE_DIR=cache_dir)
    tests = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=tests)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split("COMPILES")[-1])


def test_second_process_does_no_compilation(tmp_path) -> None:
    d = str(tmp_path / "cache")
    assert _run(d) == 1
    assert _run(d) == 0
    assert oct(os.stat(d).st_mode & 0o777) == "0o700"


def test_corrupt_entry_is_rebuilt(tmp_path) -> None:
    d = str(tmp_path / "cache")
    assert _run(d) == 1
    (so,) = glob.glob(os.path.join(d, "cpp", "*.so"))
    with open(so, "r+b") as f:  # a truncated entry, as a crash mid-write would leave it
        f.truncate(100)
    assert _run(d) == 1
    assert _run(d) == 0


def test_directory_writable_by_others_is_refused(tmp_path, monkeypatch) -> None:
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(d))
    with pytest.raises(UnsafeCacheDir):
        cache_dir("cpp")
