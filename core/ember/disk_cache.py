"""Where ember keeps its files on disk, and the rule that keeps them private.

Every on-disk cache lives in a folder under ``$EMBER_CACHE_DIR`` (default ``~/.cache/ember``):
compiled C++ and Triton kernels, compile plans, the C++ guard helper. The folders are created
owner-only and refused when other users can write to them or own them, since ember loads code
from them.

Losing the disk cache must never cost the compiler: :func:`work_dir` gives the compilers that
need a folder to build in (C++ and Triton kernels) a private temporary folder for this process
when the cache folder is refused or cannot be written, or once a build there ran out of room
(:func:`out_of_space`), with one warning. Entries that ember
loads code from carry a SHA-256 of their bytes beside them (:func:`write_digest`), so that a
corrupt or truncated entry is a miss that gets rebuilt, never loaded.
"""
from __future__ import annotations

import atexit
import errno
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
_full: BaseException | None = None  # why the cache was found out of room (see out_of_space)
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)
MIN_FREE = 16 << 20  # below this many free bytes a failed build is taken for a full disk


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
    if _full is not None:
        return private_dir(os.path.join(_fallback(_full), sub))
    try:
        return _writable(cache_dir(sub))
    except (OSError, UnsafeCacheDir) as exc:
        return private_dir(os.path.join(_fallback(exc), sub))


def out_of_space(exc: BaseException, directory: str) -> bool:
    """Whether a write into ``directory`` failed for lack of room (ENOSPC or EDQUOT anywhere in
    ``exc``'s chain, or less than ``MIN_FREE`` bytes left where it lives: a compiler that ran
    out of room says so only in its messages). When it did, :func:`work_dir` gives a private
    temporary folder on a filesystem with room for the rest of the process (one warning), so
    that the caller can build there: a full disk costs the cache, not the compiled code."""
    global _full
    seen: BaseException | None = exc
    full = False
    while seen is not None and not full:
        full = isinstance(seen, OSError) and seen.errno in _NO_ROOM
        seen = seen.__cause__ or seen.__context__
    if not full:
        full = _free_bytes(directory) < MIN_FREE
    if full and _full is None:
        _full = exc
        log.warning("ember: no room left for the compile cache in %s (%s: %s); compiled code is kept in a "
                    "temporary folder for this process only", directory, type(exc).__name__, exc)
    return full


def _free_bytes(path: str) -> int:
    try:
        st = os.statvfs(path)
    except OSError:
        return 1 << 62  # unknown: not taken for a full disk
    return st.f_bavail * st.f_frsize


@functools.lru_cache(None)
def _writable(path: str) -> str:
    """``path`` once a file could be created in it (checked once per process and folder)."""
    fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
    os.close(fd)
    os.unlink(probe)
    return path


def _fallback(reason: BaseException) -> str:
    global _fallback_root
    with _fallback_lock:
        if _fallback_root is None:
            # the first place with room: the temporary folder may share the full cache's disk
            places = [tempfile.gettempdir(), "/dev/shm"]
            place = next((p for p in places if os.path.isdir(p) and _free_bytes(p) >= MIN_FREE), places[0])
            _fallback_root = tempfile.mkdtemp(prefix="ember-cache-", dir=place)
            atexit.register(shutil.rmtree, _fallback_root, True)
            if _full is None:  # out_of_space said why already
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
