"""Where ember keeps its files on disk, and the rule that keeps them private.

Every on-disk cache lives in a folder under ``$EMBER_CACHE_DIR`` (default ``~/.cache/ember``):
compiled C++ and Triton kernels, compile plans, the C++ guard helper. The folders are created
owner-only and refused when other users can write to them or own them, since ember loads code
from them.

Losing the disk cache must never cost the compiler: :func:`work_dir` gives the compilers that
need a folder to build in (C++ and Triton kernels) a private temporary folder for this process
when the cache folder is refused or cannot be written, with one warning. Entries that ember
loads code from carry a SHA-256 of their bytes beside them (:func:`write_digest`), so that a
corrupt or truncated entry is a miss that gets rebuilt, never loaded.
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import threading

log = logging.getLogger("ember.cache")

_fallback_lock = threading.Lock()
_fallback_root: str | None = None  # this process's private stand-in for a refused cache root


class UnsafeCacheDir(RuntimeError):
    """The cache directory is writable by other users."""


def cache_root() -> str:
    return os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ember")


def cache_dir(sub: str) -> str:
    """The private cache directory ``$EMBER_CACHE_DIR/<sub>``, created if needed."""
    root = private_dir(cache_root())
    return private_dir(os.path.join(root, sub))


def work_dir(sub: str) -> str:
    """:func:`cache_dir` when it can be used and written, else ``<sub>`` in a private temporary
    folder of this process (removed at exit): the entries are then lost with the process."""
    try:
        return _writable(cache_dir(sub))
    except (OSError, UnsafeCacheDir) as exc:
        return private_dir(os.path.join(_fallback(exc), sub))


@functools.lru_cache(None)
def _writable(path: str) -> str:
    """``path`` once a file could be created in it (checked once per process and folder)."""
    fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
    os.close(fd)
    os.unlink(probe)
    return path


def _fallback(reason: Exception) -> str:
    global _fallback_root
    with _fallback_lock:
        if _fallback_root is None:
            _fallback_root = tempfile.mkdtemp(prefix="ember-cache-")
            atexit.register(shutil.rmtree, _fallback_root, True)
            log.warning("ember: the compile cache %s cannot be used (%s); compiled kernels are kept in %s "
                        "for this process only", cache_root(), reason, _fallback_root)
        return _fallback_root


def file_digest(path: str) -> str:
    """Hex SHA-256 of the file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_digest(path: str, digest: str | None = None) -> None:
    """Store ``path``'s digest (computed when not given) in ``path.sha256``, atomically."""
    digest = digest or file_digest(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".sha256")
    with os.fdopen(fd, "w") as f:
        f.write(digest)
    os.replace(tmp, path + ".sha256")


def digest_matches(path: str) -> bool:
    """True when ``path`` and ``path.sha256`` exist and agree; any other state is a miss."""
    try:
        with open(path + ".sha256", "rb") as f:
            expected = f.read().strip()
        return expected == file_digest(path).encode()
    except OSError:
        return False


def private_dir(path: str) -> str:
    """``path``, created owner-only if needed; UnsafeCacheDir if others may write to it."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    _check_private(path)
    return path


def _check_private(path: str) -> None:
    st = os.stat(path)
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeCacheDir(f"refusing to use cache directory {path}: writable by other users "
                             f"(chmod 700 it or set EMBER_CACHE_DIR)")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise UnsafeCacheDir(f"refusing to use cache directory {path}: owned by another user")


@functools.lru_cache(None)
def compiler_identity(cxx: str) -> str:
    """The first line of ``cxx --version``: part of every key of a compiled object."""
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
        return out.splitlines()[0]
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RuntimeError(f"C++ compiler {cxx!r} is not usable: {exc}") from exc
