"""On-disk compile cache and the C++ build.

Shared objects are stored under ``$EMBER_CACHE_DIR`` (default ``~/.cache/ember``) in ``cpp/``,
named by a hash of the source, the compiler's identity, the flags and the torch version. The
directory is created owner-only and refused when other users can write to it (kernels are then
built in a private folder of the process: ``ember.disk_cache.work_dir``); entries are written to
a temporary file and renamed into place, and come with a SHA-256 of their bytes so that a
corrupt or truncated entry (or digest) is rebuilt instead of loaded.
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import subprocess
import tempfile
import threading

import torch
from ember.disk_cache import compiler_identity, digest_matches, file_digest, out_of_space, work_dir, write_digest

log = logging.getLogger("ember.inductor")

CXX = os.environ.get("CXX", "g++")
# -mprefer-vector-width=512: where the target has AVX-512, loops use all of it. gcc's tuning for
# recent Intel cores otherwise vectorizes at 256 bits, and each libm call (``cpp_math``: one
# 16-lane libmvec variant per function) then computes 8 lanes twice: sin(x) + cos(x) took
# twice as long (the suite's ``sincos`` row, ``benchmarks/run.py``). No effect on other targets.
CFLAGS = ["-O3", "-march=native", "-mprefer-vector-width=512", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off",
          "-shared", "-fPIC", "-std=c++17", "-w"]
LIBS = ["-lmvec", "-lm"]

_locks: dict[str, threading.Lock] = {}  # per source key: one build of a source at a time
_locks_lock = threading.Lock()
compile_count = 0  # C++ compilations done by this process (tests read it)


def cache_key(source: str) -> str:
    h = hashlib.sha256()
    for part in (source, CXX, compiler_identity(CXX), " ".join(CFLAGS + LIBS), torch.__version__):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def load_library(source: str) -> ctypes.CDLL:
    """Compile ``source`` (or reuse the cached build) and load it; on a full disk, in a temporary
    folder of this process (``ember.disk_cache.out_of_space``)."""
    directory = work_dir("cpp")
    try:
        return _load_or_build(source, directory)
    except Exception as exc:
        if not out_of_space(exc, directory):
            raise
        return _load_or_build(source, work_dir("cpp"))


def _load_or_build(source: str, directory: str) -> ctypes.CDLL:
    key = cache_key(source)
    so_path = os.path.join(directory, f"{key}.so")
    lib = _try_load(so_path)
    if lib is not None:
        return lib
    with _locks_lock:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        lib = _try_load(so_path)
        if lib is not None:
            return lib
        _build(source, directory, so_path)
        lib = _try_load(so_path)
        if lib is None:
            raise RuntimeError(f"cannot load freshly built {so_path}")
        return lib


def open_library(so_path: str) -> ctypes.CDLL:
    """The shared object at ``so_path`` (a package's), after checking it against its SHA-256 file."""
    if not digest_matches(so_path):
        raise RuntimeError(f"{so_path} is missing or does not match its SHA-256 file {so_path}.sha256")
    return ctypes.CDLL(so_path)


def _try_load(so_path: str) -> ctypes.CDLL | None:
    if not digest_matches(so_path):
        if os.path.exists(so_path):
            log.debug("cache entry %s is corrupt; rebuilding", so_path)
        return None
    try:
        return ctypes.CDLL(so_path)
    except OSError:
        return None


def _build(source: str, directory: str, so_path: str) -> None:
    global compile_count
    src_path = tmp_so = ""
    try:
        fd, src_path = tempfile.mkstemp(suffix=".cpp", dir=directory)
        with os.fdopen(fd, "w") as f:
            f.write(source)
        fd, tmp_so = tempfile.mkstemp(suffix=".so", dir=directory)
        os.close(fd)
        cmd = [CXX, *CFLAGS, src_path, "-o", tmp_so, *LIBS]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"C++ compilation failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}")
        compile_count += 1
        digest = file_digest(tmp_so)
        os.replace(tmp_so, so_path)
        write_digest(so_path, digest)
    finally:
        for p in (src_path, tmp_so):
            if p and os.path.exists(p):
                os.unlink(p)
