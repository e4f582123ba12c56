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
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
for got, want in zip(grads, [p.grad for p in model.parameters()]):  # a LayerNorm gradient's rounding
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4)     # differs between AVX2 and AVX-512
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


def _flip_bytes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(0, len(data), max(1, len(data) // 50)):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["bit_flipped", "emptied", "unreadable"])
def test_entries_damaged_in_place_are_rebuilt(tmp_path: Path, damage: str) -> None:
    """Every entry (kernel libraries, their digests, plans) with bytes flipped at its own length,
    emptied, or made unreadable: the next process compiles and matches eager, the one after
    loads what it rewrote."""
    root = tmp_path / "cache"
    assert _run(root)[0] > 0
    for path in _entries(root):
        if damage == "bit_flipped":
            _flip_bytes(path)
        elif damage == "emptied":
            path.write_bytes(b"")
        else:
            path.chmod(0)
    compiles = _run(root)[0]
    assert compiles > 0 or (damage == "unreadable" and os.geteuid() == 0)  # root reads any file
    assert _run(root)[0] == 0


@pytest.mark.parametrize("saved", ["{not json", "[1, 2]", '"text"', "", '{"scheme": 2, "offered": 3, "meta": 4}'])
def test_a_damaged_autotuning_choice_is_tuned_again(tmp_path: Path, monkeypatch, saved: str) -> None:
    pytest.importorskip("triton")
    from ember_inductor.codegen.triton_configs import LaunchConfig
    from ember_inductor.codegen.triton_runtime import TritonLauncher

    configs = [LaunchConfig((("XBLOCK", 1),), 4), LaunchConfig((("XBLOCK", 8),), 4)]
    launcher = TritonLauncher("k", "fn", {"in_ptr0": "*fp32"}, configs, [(1, 1, 1)] * 2, [True])
    path = tmp_path / "choice.json"
    path.write_text(saved)
    monkeypatch.setattr(launcher, "_tuning_path", lambda: str(path))
    assert launcher.pending_compiles() == [0, 1] and launcher.choice is None


FULL_DISK = """
import errno, os
full_root = os.environ["EMBER_CACHE_DIR"]
real_fdopen, real_statvfs = os.fdopen, os.statvfs


class Full:
    def __init__(self, f):
        self.f = f
    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.f.close()
    def __getattr__(self, name):
        return getattr(self.f, name)


def fdopen(fd, mode="r", *args, **kwargs):
    f = real_fdopen(fd, mode, *args, **kwargs)
    return Full(f) if "w" in mode and os.readlink(f"/proc/self/fd/{fd}").startswith(full_root) else f


def statvfs(path):
    st = real_statvfs(path)
    return os.statvfs_result((*st[:4], 0, *st[5:])) if str(path).startswith(full_root) else st


os.fdopen, os.statvfs = fdopen, statvfs
"""


def _full_disk_run(cache_dir: Path, prelude: str = "", wrap: list[str] | None = None) -> str:
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache_dir), EMBER_INDUCTOR_STRICT="0",
               PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([*(wrap or []), sys.executable, "-c", prelude + SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "running it with aten" not in proc.stderr and "could not compile" not in proc.stderr, proc.stderr
    assert int(proc.stdout.split("COMPILES")[-1]) > 0
    assert proc.stderr.count("no room left for the compile cache") == 1, proc.stderr
    return proc.stderr


def test_a_full_disk_costs_the_cache_not_the_compiled_code(tmp_path: Path) -> None:
    """Every write into the cache fails with ENOSPC (simulated in the child process): the graphs
    still compile with the inductor, built in a temporary folder, with one warning."""
    _full_disk_run(tmp_path / "cache", prelude=FULL_DISK)


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="no unprivileged mount namespace for a small tmpfs")
def test_a_really_full_disk_costs_the_cache_not_the_compiled_code(tmp_path: Path) -> None:
    """The cache on a tmpfs of 256 KB filled up to the last block (in a mount namespace of the
    child's own): the C++ compiler itself finds no room."""
    mount = tmp_path / "small"
    mount.mkdir()
    fill = (f"mount -t tmpfs -o size=256k tmpfs {mount} && mkdir -m 700 {mount}/cache && "
            f"(dd if=/dev/zero of={mount}/fill bs=4k 2>/dev/null; true) && exec \"$@\"")
    _full_disk_run(mount / "cache", wrap=["unshare", "-Urm", "sh", "-c", fill, "sh"])
