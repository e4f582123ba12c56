"""``save_cache_artifacts()`` and ``load_cache_artifacts(data)``: ember's compile caches as bytes.

What torch's ``torch.compiler.save_cache_artifacts`` / ``load_cache_artifacts`` do for its own
caches: a process that compiled a model saves the built kernels and compile plans of its cache
folder (``$EMBER_CACHE_DIR``) as one blob; another process (on another machine with the same
versions) loads the blob into its cache before its first call, which then finds every kernel
and plan built and generates no code. Capture and guards still run, as with torch's.

The blob is a gzip'd tar of the cache's ``cpp``, ``plans``, ``triton`` and ``triton_bin`` folders
(not the C++ guard helper, which each machine builds once) behind a header naming the versions
it was made with; a blob from other versions of ember, torch or Python, or for another machine
architecture, is refused. Entries keep their SHA-256 files, so one damaged in transit is a miss
that is rebuilt, never loaded; entries are written to a temporary file and renamed into place.
"""
from __future__ import annotations

import importlib.metadata
import io
import json
import os
import platform
import sys
import tarfile
import tempfile

import torch

from .disk_cache import cache_dir, cache_root

MAGIC = b"ember-cache-artifacts 1\n"
FOLDERS = ("cpp", "plans", "triton", "triton_bin")
_HEADER = "versions.json"


def versions() -> dict[str, str]:
    """What compiled artifacts depend on: ember, torch, Python (major.minor) and the machine's
    architecture (shared with ``ember.aot_compile``'s packages)."""
    try:
        ember = importlib.metadata.version("ember")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        ember = "source"
    return {"ember": ember, "torch": torch.__version__, "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "machine": platform.machine()}


def save_cache_artifacts() -> bytes:
    """Every kernel and plan in this process's cache folder, as bytes for :func:`load_cache_artifacts`."""
    root = cache_root()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        header = json.dumps(versions()).encode()
        info = tarfile.TarInfo(_HEADER)
        info.size = len(header)
        tar.addfile(info, io.BytesIO(header))
        for folder in FOLDERS:
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                continue
            for name in sorted(os.listdir(path)):
                full = os.path.join(path, name)
                if os.path.isfile(full) and not os.path.islink(full) and not name.startswith("."):
                    tar.add(full, arcname=f"{folder}/{name}", recursive=False)
    return MAGIC + buf.getvalue()


def load_cache_artifacts(data: bytes) -> int:
    """Put the kernels and plans of ``data`` into this process's cache folder; the number of
    entries written. Raises ``ValueError`` for data that is not ember's, was made with other
    versions, or holds anything but plain files of the cache's folders."""
    if not data.startswith(MAGIC):
        raise ValueError("not ember cache artifacts (made by ember.save_cache_artifacts())")
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data[len(MAGIC):]), mode="r:gz")
    except tarfile.TarError as exc:
        raise ValueError(f"damaged ember cache artifacts: {exc}") from exc
    with tar:
        header = tar.extractfile(_HEADER) if _HEADER in tar.getnames() else None
        made_with = json.load(header) if header is not None else None
        if made_with != versions():
            raise ValueError(f"ember cache artifacts made with {made_with}; this process has {versions()}")
        members = [m for m in tar.getmembers() if m.name != _HEADER]
        for m in members:
            folder, _, name = m.name.partition("/")
            if folder not in FOLDERS or not m.isfile() or not name or "/" in name or name in (".", ".."):
                raise ValueError(f"unexpected entry {m.name!r} in ember cache artifacts")
        for m in members:
            folder, _, name = m.name.partition("/")
            _write(cache_dir(folder), name, tar.extractfile(m).read())
    return len(members)


def _write(directory: str, name: str, payload: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".load-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


__all__ = ["load_cache_artifacts", "save_cache_artifacts", "versions"]
