"""A damaged or unusable compile cache costs the cache, never the compiler.

Each test runs a user program (``ember.compile`` of a module, forward and backward) in fresh
processes against a cache folder that is then damaged: every file overwritten with random bytes,
every file truncated, the folder made writable by others, or the folder impossible to create.
The next process must compile the graphs with the inductor (no "running it with aten" fallback),
match eager (outputs and gradients); after random bytes, a third process loads the rewritten
entries without compiling anything.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import torch, ember
from ember_inductor import cache

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16))
x = torch.randn(4, 8)
compiled = ember.compile(model)
out = compiled(x)
out.square().sum().backward()
grads = [p.grad.clone() for p in model.parameters()]
model.zero_grad()
expected = model(x)
expected.square().sum().backward()
torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
for got, want in zip(grads, [p.grad for p in model.parameters()]):
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
print("COMPILES", cache.compile_count)
"""


def _run(cache_dir: Path) -> tuple[int, str]:
    """C++ compilations the program did, and what it logged; fails if it failed."""
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache_dir), EMBER_INDUCTOR_STRICT="0")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "running it with aten" not in proc.stderr and "could not compile" not in proc.stderr, proc.stderr
    return int(proc.stdout.split("COMPILES")[-1]), proc.stderr


def _entries(root: Path) -> list[Path]:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".so" for p in files) and any(p.suffix == ".plan" for p in files), files
    return files


def test_entries_overwritten_with_random_bytes_are_rebuilt(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    assert _run(root)[0] > 0
    for path in _entries(root):
        path.write_bytes(os.urandom(7))
    assert _run(root)[0] > 0  # compiled again, not run with aten
    assert _run(root)[0] == 0  # and rewritten: the next process loads everything


def test_truncated_entries_are_rebuilt(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    assert _run(root)[0] > 0
    for path in _entries(root):
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size // 2)
    assert _run(root)[0] > 0


def test_folder_writable_by_others_costs_only_the_cache(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    compiles, logged = _run(root)
    assert compiles > 0 and "cannot be used" in logged and "writable by other users" in logged
    assert not any(p.is_file() for p in root.rglob("*"))  # nothing written where others can write


def test_folder_that_cannot_be_created_costs_only_the_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    compiles, logged = _run(blocker / "cache")  # running as root, chmod cannot make it unwritable
    assert compiles > 0 and "cannot be used" in logged


def test_damaged_triton_kernel_source_is_rewritten(tmp_path: Path, monkeypatch) -> None:
    from ember_inductor.codegen import triton_runtime

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    source = "import triton\n\n@triton.jit\ndef kernel(x):\n    pass\n"
    path = Path(triton_runtime.kernel_path(triton_runtime.write_kernel(source)))
    path.write_bytes(os.urandom(7))
    assert triton_runtime.write_kernel(source) == path.stem
    assert path.read_text() == source
    with open(path, "r+b") as f:
        f.truncate(10)
    triton_runtime.write_kernel(source)
    assert path.read_text() == source
