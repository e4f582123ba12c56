"""The C++ half of the guards, built once per machine: ``TensorMatch`` (tensor_match.cpp) and
``SourceWalk`` (source_walk.cpp), one extension module.

A guard checks the type, dtype, device, shape, strides and requires_grad of every tensor it
reads: in Python that is most of the guard of a model with hundreds of parameters (densenet121
has 607 tensors). ``TensorMatch`` does those checks for all the tensors of a guard in one call,
far cheaper a tensor (``benchmarks/guard_walk.py`` times the guard each way). ``SourceWalk`` does the reads before them (a
module's ``._modules['layer1']``, its parameters, its attributes) and the simple checks on what
they read (types, constants, dict keys, lengths, identity), in the order the Python guard would.

The extension is compiled against the installed torch with the system C++ compiler, in a
detached background process started the first time a guard is compiled on the machine (a run
of the C++ compiler, seconds), and stored in ``$EMBER_NATIVE_DIR`` (default ``$EMBER_CACHE_DIR/native``) under a key of
its sources, the compiler, torch and Python. Until it is there, guards check tensors in Python,
as they do when it cannot be built (the reason is logged once) or when
``ember.config.native_guards`` is False. Both kinds of check accept exactly the same calls
(tests/core/test_native_guards.py, tests/core/test_source_walk.py).

Loading a damaged shared library kills the process (SIGBUS, SIGSEGV, SIGILL), and every later
one that loads it. So the build loads the library once in a child process before keeping it, and
records its SHA-256 beside it (``.sha256``, as the kernel caches do); a library whose bytes do not
match (truncated, bit-flipped, emptied, unreadable, no digest) or that does not load is deleted
and built again in the background, with one warning, while guards check in Python.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import logging
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from typing import Any

import torch

from . import config
from .disk_cache import cache_root, compiler_identity, digest_matches, file_digest, private_dir, write_digest

log = logging.getLogger("ember.guards")

_HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = [os.path.join(_HERE, name) for name in ("tensor_match.cpp", "source_walk.cpp")]
HEADERS = [os.path.join(_HERE, name) for name in ("guard_values.h", "read_memo.h")]
MODULE = "ember_tensor_match"  # the name its PyInit_ function carries
CXX = os.environ.get("CXX", "g++")
STALE_BUILD_S = 600  # a build marker older than this belongs to a build that died

_loaded: Any = None  # the extension module
_gave_up = False
_warned_damaged = False
_started = False
_builder: subprocess.Popen | None = None  # held so that it is not reported as leaked


def _flags() -> list[str]:
    torch_dir = os.path.dirname(torch.__file__)
    lib = os.path.join(torch_dir, "lib")
    return ["-O2", "-shared", "-fPIC", "-std=c++17", "-w",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
            "-I", os.path.join(torch_dir, "include"), "-I", sysconfig.get_paths()["include"],
            "-L", lib, f"-Wl,-rpath,{lib}", "-ltorch_python", "-lc10"]


@functools.lru_cache(None)
def library_path() -> str:
    """Where the built extension is (or will be) for this source, compiler, torch and Python;
    fixed at the first call in a process."""
    h = hashlib.sha256()
    for name in SOURCES + HEADERS:
        with open(name, "rb") as f:
            h.update(f.read())
    for part in (CXX, compiler_identity(CXX), " ".join(_flags()), torch.__version__, sys.version,
                 sysconfig.get_config_var("EXT_SUFFIX") or ""):
        h.update(b"\0" + part.encode())
    return os.path.join(private_dir(native_dir()), f"{MODULE}-{h.hexdigest()[:32]}.so")


def native_dir() -> str:
    """``$EMBER_NATIVE_DIR``, else ``native`` in the cache root."""
    return os.environ.get("EMBER_NATIVE_DIR") or os.path.join(cache_root(), "native")


def tensor_match() -> type | None:
    """The ``TensorMatch`` type, or None: native guards are off, cannot be built, or are still
    being built (the first call on a machine starts the build in the background)."""
    module = _extension()
    return None if module is None else module.TensorMatch


def source_walk() -> type | None:
    """The ``SourceWalk`` type (source_walk.cpp), or None as for :func:`tensor_match`."""
    module = _extension()
    return None if module is None else module.SourceWalk


def _extension() -> Any:
    """The loaded extension module, or None (see :func:`tensor_match`)."""
    global _loaded, _gave_up
    if not config.native_guards:
        return None
    if _loaded is not None or _gave_up:
        return _loaded
    try:
        path = library_path()
        if os.path.exists(path) and not digest_matches(path):
            _damaged(path, "its bytes do not match the SHA-256 recorded when it was built")
        if os.path.exists(path):
            try:
                _loaded = _load(path)
            except Exception as exc:  # intact but not loadable here: built again, once
                _damaged(path, f"it does not load ({type(exc).__name__}: {exc})")
            else:
                return _loaded
        if os.path.exists(path + ".failed"):
            with open(path + ".failed") as f:
                reason = f.read()[-2000:]
            raise RuntimeError(f"its build failed (delete {path}.failed to retry):\n{reason}")
        _start_build(path)
    except Exception as exc:  # any failure leaves the Python checks in place, which are exact
        _gave_up = True
        log.warning("ember: guards check tensors in Python; the C++ tensor check is unavailable: %s", exc)
    return None


def _damaged(path: str, why: str) -> None:
    """Delete a damaged library so that it is built again (in the background); warn once."""
    global _warned_damaged
    if not _warned_damaged:
        _warned_damaged = True
        log.warning("ember: the C++ guard helper %s is damaged (%s); it is being built again, and guards "
                    "check tensors in Python until it is ready", path, why)
    for leftover in (path, path + ".sha256"):
        try:
            os.unlink(leftover)
        except FileNotFoundError:
            pass


def ensure_built() -> type | None:
    """Build the extension now if it is missing or damaged (tests and benchmarks, which must not
    switch from Python to C++ checks part-way), then return ``tensor_match()``."""
    try:
        path = library_path() if config.native_guards else ""
        if path and os.path.exists(path) and not digest_matches(path):
            _damaged(path, "its bytes do not match the SHA-256 recorded when it was built")
        if path and not os.path.exists(path) and not os.path.exists(path + ".failed"):
            build(path)
    except Exception:  # tensor_match() says why, once
        pass
    return tensor_match()


def _load(path: str) -> Any:
    spec = importlib.util.spec_from_file_location(MODULE, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _start_build(path: str) -> None:
    """Start one detached build process per machine (a marker file claims the build)."""
    global _started, _builder
    if _started:
        return
    marker = path + ".building"
    try:
        if time.time() - os.path.getmtime(marker) > STALE_BUILD_S:
            os.unlink(marker)
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:  # another process is building it
        _started = True
        return
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # importable as ember
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    _builder = subprocess.Popen([sys.executable, "-m", "ember.native_guards", path], env=env,
                                start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _started = True
    log.info("ember: building the C++ tensor check of guards in the background (about 15 s, once "
             "per machine); guards check tensors in Python until it is ready")


def build(path: str) -> None:
    """Compile the extension into ``path`` (written under a temporary name, loaded once in a child
    process, then renamed, after its SHA-256); a failure leaves the reason in ``path + '.failed'``."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    try:
        proc = subprocess.run([CXX, *SOURCES, "-o", tmp, *_flags()], capture_output=True, text=True)
        failure = f"{CXX} exited with {proc.returncode}:\n{proc.stderr[-4000:]}" if proc.returncode else _load_failure(tmp)
        if failure:
            with open(path + ".failed", "w") as f:
                f.write(failure)
            return
        write_digest(path, file_digest(tmp))  # first: a reader never finds the library without it
        os.replace(tmp, path)
    finally:
        for leftover in (tmp, path + ".building"):
            if os.path.exists(leftover):
                os.unlink(leftover)


def _load_failure(library: str) -> str | None:
    """Why ``library`` does not load, found in a child process (a crash there costs only it)."""
    check = ("import sys, torch, importlib.util as u; s = u.spec_from_file_location(sys.argv[2], sys.argv[1]); "
             "m = u.module_from_spec(s); s.loader.exec_module(m); m.TensorMatch, m.SourceWalk")
    proc = subprocess.run([sys.executable, "-c", check, library, MODULE], capture_output=True, text=True)
    return f"the built library does not load (exit {proc.returncode}):\n{proc.stderr[-4000:]}" if proc.returncode else None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Build ember's C++ tensor check into PATH.")
    parser.add_argument("path")
    build(parser.parse_args().path)
