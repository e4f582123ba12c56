"""Where ember keeps its files on disk, and the rule that keeps them private.

Every on-disk cache lives in a folder under ``$EMBER_CACHE_DIR`` (default ``~/.cache/ember``):
compiled C++ and Triton kernels, compile plans, the C++ guard helper. The folders are created
owner-only and refused when other users can write to them or own them, since ember loads code
from them.
"""
from __future__ import annotations

import functools
import os
import stat
import subprocess


class UnsafeCacheDir(RuntimeError):
    """The cache directory is writable by other users."""


def cache_root() -> str:
    return os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ember")


def cache_dir(sub: str) -> str:
    """The private cache directory ``$EMBER_CACHE_DIR/<sub>``, created if needed."""
    root = private_dir(cache_root())
    return private_dir(os.path.join(root, sub))


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
