"""On-disk cache of built TVM libraries, so that a second process skips the TVM build.

Entries live in ``$EMBER_CACHE_DIR/tvm`` (default ``~/.cache/ember/tvm``), a folder created
owner-only (0o700); ember refuses to load from a folder that another user owns or can write.
An entry is a shared library exported by TVM, named by a SHA-256 of everything that affects
the built code: the imported Relax module (its full text), the target, the TVM version, the
tuning options and the version of ember's own schedule. Writes go to a temporary file in the
same folder and are renamed into place (atomic); an entry that fails to load is deleted and
rebuilt.
"""
from __future__ import annotations

import hashlib
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger("ember.tvm")

#: Bump when ember's lowering or schedules change what a given Relax module builds into.
SCHEDULE_VERSION = "1"


def cache_root(configured: str | None = None) -> Path | None:
    """The cache folder (created if needed), or None when it is missing and cannot be made safe."""
    base = configured or os.environ.get("EMBER_CACHE_DIR") or os.path.join("~", ".cache", "ember")
    root = Path(base).expanduser() / "tvm"
    try:
        root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        root.mkdir(mode=0o700, exist_ok=True)
        info = root.stat()
    except OSError as exc:
        log.warning("ember.tvm: cache disabled, cannot create %s: %s", root, exc)
        return None
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        log.warning(
            "ember.tvm: cache disabled, %s is owned by another user or writable by others", root
        )
        return None
    return root


def cache_key(mod: Any, target: Any, options_part: str) -> str:
    """Hex SHA-256 naming the library built from ``mod`` for ``target`` with these options."""
    import tvm

    digest = hashlib.sha256()
    for part in (
        mod.script(show_meta=True),
        str(target),
        tvm.__version__,
        options_part,
        SCHEDULE_VERSION,
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def load(root: Path, key: str) -> Any | None:
    """The runtime module stored under ``key``, or None (missing or unreadable entry)."""
    import tvm

    path = root / f"{key}.so"
    if not path.is_file():
        return None
    try:
        return tvm.runtime.load_module(str(path))
    except Exception as exc:  # noqa: BLE001 - a corrupt entry is a miss
        log.warning("ember.tvm: dropping unreadable cache entry %s: %s", path.name, exc)
        try:
            path.unlink()
        except OSError:
            pass
        return None


def store(root: Path, key: str, executable: Any) -> None:
    """Export ``executable`` under ``key`` atomically; failures only cost the cache entry."""
    fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".so", dir=root)
    os.close(fd)
    try:
        executable.export_library(tmp)
        os.chmod(tmp, 0o600)
        os.replace(tmp, root / f"{key}.so")
    except Exception as exc:  # noqa: BLE001 - the library still runs from memory
        log.warning("ember.tvm: could not write cache entry %s: %s", key[:16], exc)
        try:
            os.unlink(tmp)
        except OSError:
            pass
