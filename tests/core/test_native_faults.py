"""A damaged C++ guard helper costs speed, never the process (issue 45, item 13).

The helper (``ember.native_guards``) is a shared library that every process loads; one truncated,
bit-flipped or emptied used to kill each later process on load (SIGBUS, SIGSEGV, SIGILL). Each
damage here is done to a copy in a private ``EMBER_NATIVE_DIR``; then a child process must compute
right with Python checks and one warning, the helper must be built again (by a stand-in compiler
that copies the real library, so that a rebuild takes a second), and the process after that must
use it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from ember import native_guards
from ember.disk_cache import digest_matches, file_digest, write_digest

CHILD = """
import torch, ember
from ember import native_guards
print("NATIVE", native_guards.tensor_match() is not None)  # what the first guard gets
x = torch.randn(3, 5)
f = ember.compile(lambda t: t * 2 + 1, backend="eager")
for v in (x, x + 1, torch.randn(4, 2)):
    assert torch.equal(f(v), v * 2 + 1)
"""


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(64, len(data), max(1, len(data) // 97)):  # through headers, code and tables
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 3]),
    "bit_flipped": _flip,
    "emptied": lambda p: p.write_bytes(b""),
    "unreadable": lambda p: p.chmod(0),
    "digest_missing": lambda p: Path(f"{p}.sha256").unlink(),
    "digest_damaged": lambda p: Path(f"{p}.sha256").write_text("0" * 64),
    "not_loadable": lambda p: (p.write_bytes(b"\x7fELF not really a library"), write_digest(str(p))),
}


@pytest.fixture
def helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An intact copy of the helper where a child process finds it (``EMBER_NATIVE_DIR``), and a
    stand-in compiler (``CXX``) whose "build" copies the real library."""
    real = native_guards.ensure_built() and native_guards.library_path()
    if not real:
        pytest.skip("the C++ guard helper cannot be built here")
    cxx = tmp_path / "cxx"
    cxx.write_text(f"""#!/bin/sh
if [ "$1" = --version ]; then exec {native_guards.CXX} --version; fi
while [ $# -gt 0 ]; do if [ "$1" = -o ]; then cp {real} "$2"; exit 0; fi; shift; done
exit 1
""")
    cxx.chmod(0o755)
    monkeypatch.setenv("CXX", str(cxx))
    monkeypatch.setenv("EMBER_NATIVE_DIR", str(tmp_path / "native"))
    monkeypatch.setattr(native_guards, "CXX", str(cxx))
    native_guards.library_path.cache_clear()
    try:
        path = Path(native_guards.library_path())
    finally:
        native_guards.library_path.cache_clear()
    shutil.copy(real, path)
    write_digest(str(path))
    return path


def _child() -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=300)


def _rebuilt(path: Path, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if digest_matches(str(path)) and not Path(f"{path}.building").exists():
            return True
        time.sleep(0.2)
    return False


def test_an_intact_helper_is_used_silently(helper: Path) -> None:
    run = _child()
    assert run.returncode == 0, run.stderr
    assert "NATIVE True" in run.stdout and "damaged" not in run.stderr


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_helper_is_rebuilt_and_costs_only_speed(helper: Path, damage: str) -> None:
    intact = file_digest(str(helper))
    DAMAGE[damage](helper)
    run = _child()  # the next process: right results with Python checks, one warning
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    if damage == "unreadable" and os.geteuid() == 0:  # root reads a file whatever its mode
        assert "NATIVE True" in run.stdout
        return
    assert "NATIVE False" in run.stdout
    assert run.stderr.count("C++ guard helper") == 1 and "is damaged" in run.stderr, run.stderr
    assert _rebuilt(helper), "the helper was not built again"
    assert file_digest(str(helper)) == intact
    if damage in ("bit_flipped", "not_loadable"):  # the process after: the rebuilt helper, silently
        run = _child()
        assert run.returncode == 0, run.stderr
        assert "NATIVE True" in run.stdout and "damaged" not in run.stderr


def test_a_library_that_does_not_load_is_never_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build loads what the compiler made in a child process before keeping it: a library
    that does not load (or kills its loader) leaves a ``.failed`` note, not a library."""
    cxx = tmp_path / "cxx"
    cxx.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo cxx 1.0; exit 0; fi\n"
                   "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then printf 'garbage' > \"$2\"; exit 0; fi; shift; done\n")
    cxx.chmod(0o755)
    monkeypatch.setattr(native_guards, "CXX", str(cxx))
    path = tmp_path / "helper.so"
    native_guards.build(str(path))
    assert not path.exists() and not Path(f"{path}.sha256").exists()
    assert "does not load" in Path(f"{path}.failed").read_text()
