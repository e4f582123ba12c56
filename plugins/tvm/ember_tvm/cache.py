"""On-disk cache of built TVM libraries, so that a second process skips the TVM build.

Entries live in ``$EMBER_CACHE_DIR/tvm`` (default ``~/.cache/ember/tvm``), a folder created
owner-only (0o700); ember refuses to load from a folder that another user owns or can write.
An entry is a shared library exported by TVM, named by a SHA-256 of everything that affects
the built code: the imported Relax module (its text, and the bytes of every tensor constant it
holds), the target, the TVM version, the tuning options and the version of ember's own
schedule. The module's text is printed without its metadata: TVM 0.27 crashes the process
(SIGSEGV in ``ToJSONGraph``) when asked to serialize a tensor constant, so constants are read
from the IR and hashed here. Writes go to a temporary file in the same folder and are renamed
into place (atomic), with a SHA-256 of the library beside it; an entry whose bytes do not match
it, or that fails to load, is deleted and rebuilt.
"""
from __future__ import annotations

import hashlib
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from ember.disk_cache import digest_matches, file_digest, write_digest

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
        mod.script(),
        *constant_descriptions(mod),
        str(target),
        tvm.__version__,
        options_part,
        SCHEDULE_VERSION,
    ):
        digest.update(part if isinstance(part, bytes) else part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def constant_descriptions(mod: Any) -> list[bytes]:
    """Dtype, shape and bytes of each tensor constant of ``mod``'s Relax functions, in a fixed
    visiting order (with the module's text, this names every constant's value)."""
    import tvm
    from tvm import relax

    found: list[Any] = []
    for gvar in sorted(mod.functions, key=lambda g: g.name_hint):
        func = mod[gvar]
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(
                func, lambda e: found.append(e) if isinstance(e, tvm.ir.GenericConst) else None
            )
    out = []
    for const in found:
        array = const.value.numpy()
        out.append(f"{array.dtype}{list(array.shape)}".encode() + b"\0" + array.tobytes())
    return out


def load(root: Path, key: str) -> Any | None:
    """The runtime module stored under ``key``, or None (a missing, corrupt or unreadable entry).

    An entry is loaded only when its bytes match the SHA-256 stored beside it: loading a
    truncated shared library can kill the process (SIGBUS) instead of raising.
    """
    import tvm

    path = root / f"{key}.so"
    if not path.is_file():
        return None
    try:
        if not digest_matches(str(path)):
            raise ValueError("its bytes do not match its SHA-256")
        return tvm.runtime.load_module(str(path))
    except Exception as exc:  # noqa: BLE001 - a corrupt entry is a miss
        log.warning("ember.tvm: dropping unreadable cache entry %s: %s", path.name, exc)
        for stale in (path, Path(f"{path}.sha256")):
            try:
                stale.unlink()
            except OSError:
                pass
        return None


def store(root: Path, key: str, executable: Any) -> None:
    """Export ``executable`` under ``key`` atomically; failures only cost the cache entry."""
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".so", dir=root)
        os.close(fd)
        executable.export_library(tmp)
        os.chmod(tmp, 0o600)
        digest = file_digest(tmp)
        os.replace(tmp, root / f"{key}.so")
        write_digest(str(root / f"{key}.so"), digest)
    except Exception as exc:  # noqa: BLE001 - the library still runs from memory
        log.warning("ember.tvm: could not write cache entry %s: %s", key[:16], exc)
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass
