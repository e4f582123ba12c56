"""``ember.save_cache_artifacts()`` / ``ember.load_cache_artifacts()``: a second process with an
empty cache folder loads the first one's kernels and plans and makes its first call without
building a kernel (its C++ build is made to fail there), with eager's results. Blobs of other
versions, damaged blobs and entries outside the cache's folders are refused."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap

import pytest

import ember
from ember import cache_artifacts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = textwrap.dedent("""
    import sys, torch, ember
    from ember_inductor import cache
    def f(x, y):
        return (x.sin() * y).softmax(-1) + y.cumsum(0)
    x, y = torch.randn(16, 32), torch.randn(16, 32)
    if sys.argv[1] == "save":
        torch.testing.assert_close(ember.compile(f)(x, y), f(x, y))
        open(sys.argv[2], "wb").write(ember.save_cache_artifacts())
    else:
        print("entries", ember.load_cache_artifacts(open(sys.argv[2], "rb").read()))
        def no_build(*args):
            raise AssertionError("a kernel was built: the loaded artifacts were not used")
        cache._build = no_build
        torch.testing.assert_close(ember.compile(f)(x, y), f(x, y))
        print("loaded-ok")
""")


def _run(step: str, cache: str, blob: str) -> str:
    env = dict(os.environ, EMBER_CACHE_DIR=cache)
    proc = subprocess.run([sys.executable, "-c", PROGRAM, step, blob], env=env, capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_a_fresh_process_runs_from_the_loaded_artifacts(tmp_path) -> None:
    blob = str(tmp_path / "artifacts.bin")
    _run("save", str(tmp_path / "first"), blob)
    out = _run("load", str(tmp_path / "second"), blob)
    assert "loaded-ok" in out and int(out.split()[1]) > 0


def _blob(versions: dict, entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, payload in {"versions.json": json.dumps(versions).encode(), **entries}.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return cache_artifacts.MAGIC + buf.getvalue()


def test_blobs_of_other_versions_or_with_stray_entries_are_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    here = cache_artifacts.versions()
    with pytest.raises(ValueError, match="made with"):
        ember.load_cache_artifacts(_blob({**here, "torch": "0.0.1"}, {}))
    for stray in ("../escape.so", "cpp/../../escape.so", "native/guards.so", "cpp/sub/x.so"):
        with pytest.raises(ValueError, match="unexpected entry"):
            ember.load_cache_artifacts(_blob(here, {stray: b"x"}))
    with pytest.raises(ValueError, match="not ember cache artifacts"):
        ember.load_cache_artifacts(b"something else")
    with pytest.raises(ValueError, match="damaged"):
        ember.load_cache_artifacts(cache_artifacts.MAGIC + b"\x1f\x8b garbage")
    assert ember.load_cache_artifacts(_blob(here, {"cpp/k.so": b"x"})) == 1
    assert not (tmp_path.parent / "escape.so").exists()
