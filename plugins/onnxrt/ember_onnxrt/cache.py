"""On-disk cache of converted ONNX models, keyed by a hash of the graph.

Entries live in ``$EMBER_CACHE_DIR/onnxrt`` (default ``~/.cache/ember/onnxrt``), a directory
created owner-only (0o700); a directory that other users can write, or that belongs to someone
else, is not used. Writes are atomic (temporary file + rename) and leave a SHA-256 of the entry
beside it; an entry that does not match it (truncated: a cut protobuf may still parse) or does
not parse as an ONNX model is treated as a miss and rebuilt.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Callable

import onnx
import torch
import torch.fx
from ember import disk_cache

log = logging.getLogger("ember.onnxrt")

_FORMAT = "ember_onnxrt-1"


def cache_dir() -> Path | None:
    """The cache directory, created if needed; None (with a warning) when it is unsafe."""
    try:
        return Path(disk_cache.cache_dir("onnxrt"))
    except (OSError, disk_cache.UnsafeCacheDir) as exc:
        log.warning("onnxrt: model cache disabled: %s", exc)
        return None


def _versions() -> str:
    names = ("onnx", "onnxscript", "onnx_ir", "onnxruntime")
    found = []
    for name in names:
        try:
            found.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name}=?")
    return f"torch={torch.__version__};" + ";".join(found)


def graph_key(gm: torch.fx.GraphModule, *flags: object) -> str:
    """A hash of everything that shapes the converted model: the graph's code, its input
    dtypes and shapes, the conversion flags and the versions of the converting libraries."""
    h = hashlib.sha256()
    h.update(f"{_FORMAT}|{_versions()}|{flags!r}|".encode())
    h.update(gm.code.encode())
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = node.meta.get("val")
            h.update(f"|{node.name}:{getattr(val, 'dtype', type(val))}:{tuple(getattr(val, 'shape', ()))}".encode())
    return h.hexdigest()


def load_or_build(key: str, build: Callable[[], bytes], enabled: bool) -> bytes:
    """The serialized model for ``key``: from the cache when present and valid, else built
    (and stored when the cache is enabled)."""
    directory = cache_dir() if enabled else None
    if directory is None:
        return build()
    path = directory / f"{key}.onnx"
    try:
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest().encode() != Path(f"{path}.sha256").read_bytes().strip():
            raise ValueError("its bytes do not match its SHA-256")
        onnx.load_model_from_string(data)
        log.debug("onnxrt: model cache hit %s", path)
        return data
    except FileNotFoundError:
        pass
    except Exception as exc:  # truncated or corrupt entry: rebuild it
        log.warning("onnxrt: ignoring corrupt cache entry %s: %s", path, exc)
    data = build()
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".onnx")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        disk_cache.write_digest(str(path), hashlib.sha256(data).hexdigest())
    except OSError as exc:
        log.warning("onnxrt: could not write cache entry %s: %s", path, exc)
        if tmp:
            Path(tmp).unlink(missing_ok=True)
    return data
