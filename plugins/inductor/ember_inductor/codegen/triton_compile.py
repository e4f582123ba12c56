"""Compiling generated Triton kernels: here, or in parallel in worker processes.

Compiling a Triton kernel is mostly Python and MLIR work under the GIL: two threads compile a
ResNet-18's kernels little faster than one. ``precompile`` hands the compilations to worker
processes (``python -m ember_inductor.codegen.triton_compile``) that compile for the explicit
target with no CUDA context (``CUDA_VISIBLE_DEVICES`` is empty there); each binary lands in
Triton's cache (``TRITON_CACHE_DIR``, passed down through the environment), from which the
compiling process then loads it in milliseconds. A job may also ask for the kernel's C launcher
(a gcc build per new signature, cached by Triton the same way), so that those builds overlap
with the compilations instead of following them. This module imports neither torch nor the rest
of ember, so that a worker starts quickly. The workers start once per process, the first time
there is more than one kernel to compile, and exit with it. A worker that fails costs only
time: whatever it did not compile is compiled in the calling process as before.
``EMBER_COMPILE_WORKERS=0`` turns the workers off.

Protocol on the worker's stdin/stdout: length-prefixed pickles, a :class:`Job` in, a
``Result`` out (the binary's hash in Triton's cache, or why there is none). With the hash the
calling process reads the binary back without importing the kernel's module (``load_compiled``
with a :class:`KernelRef`).
"""
from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import json
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from typing import IO, Any, Sequence

_HEADER = struct.Struct("<I")
MAX_WORKERS = 16


@dataclasses.dataclass(frozen=True)
class Job:
    """One launch configuration of one kernel to compile."""

    path: str                  # the kernel's source file in the ember cache
    fn_name: str
    signature: dict[str, str]
    constexprs: dict[str, int]  # block sizes of the launch configuration
    num_warps: int
    num_stages: int
    target: Any                # triton.backends.compiler.GPUTarget
    launcher: bool = False     # also build Triton's C launcher for this signature
    divisible: tuple[int, ...] = ()  # positions of int arguments assumed multiples of 16


#: A worker's answer to one job: the binary's hash in Triton's cache, or why there is none.
Result = tuple[str | None, str | None]


class KernelRef:
    """What Triton reads of a jit function to *load* a binary compiled from it: its name and its
    parameter names. Stands in for the ``JITFunction`` in ``load_compiled``, so that loading a
    compiled kernel does not import its module (seven ``triton.jit`` decorations, each reading
    its source back through ``inspect``)."""

    def __init__(self, name: str, arg_names: list[str]) -> None:
        self.__name__ = name
        self.arg_names = arg_names


_IMPORT_LOCK = threading.Lock()


def import_kernel(path: str, fn_name: str) -> Any:
    """The jit function ``fn_name`` of the kernel source file ``path`` (imported once)."""
    mod_name = f"ember_triton_{os.path.splitext(os.path.basename(path))[0]}"
    with _IMPORT_LOCK:
        module = sys.modules.get(mod_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(mod_name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[mod_name] = module
    return getattr(module, fn_name)


def _source(fn: Any, signature: dict[str, str], constexprs: dict[str, int], divisible: Sequence[int] = ()) -> Any:
    from triton.compiler import ASTSource
    known = [i for i, t in enumerate(signature.values()) if t.startswith("*")] + list(divisible)
    attrs = {(i,): [["tt.divisibility", 16]] for i in known}
    return ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)


def compile_kernel(fn: Any, signature: dict[str, str], constexprs: dict[str, int], num_warps: int,
                   num_stages: int, target: Any, divisible: Sequence[int] = ()) -> Any:
    """``triton.compile`` of one launch configuration, pointers assumed 16-byte aligned and the
    int arguments at ``divisible`` multiples of 16 (so that loads along them vectorize, as
    Triton's own launcher specialises); a kernel
    that checks indirect indices with ``tl.device_assert`` is built with Triton's ``debug``,
    without which its asserts are dropped (as torch's inductor does)."""
    import triton
    return triton.compile(_source(fn, signature, constexprs, divisible), target=target,
                          options={"num_warps": num_warps, "num_stages": num_stages,
                                   "debug": "tl.device_assert(" in fn.src})


def load_compiled(fn: Any, signature: dict[str, str], constexprs: dict[str, int], binary_hash: str,
                  binary_ext: str, divisible: Sequence[int] = ()) -> Any:
    """The binary an earlier ``compile_kernel`` stored in Triton's cache under ``binary_hash``,
    read without computing its key again (the key needs a hash of Triton's own sources: slow,
    once per process); None when the cache no longer holds it. ``fn`` is the jit function
    or its :class:`KernelRef`. Only the metadata and the ``binary_ext`` file are read, not the
    intermediate IRs stored beside them."""
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.cache import get_cache_manager
    src = _source(fn, signature, constexprs, divisible)
    manager = get_cache_manager(binary_hash)
    group = manager.get_file(f"__grp__{src.name[:150]}.json")
    if group is None:
        return None
    with open(group) as f:
        names = json.load(f).get("child_paths") or {}
    # the group's files beside it: Triton records where they were written, and a package
    # (``ember_inductor.package``) carries them elsewhere
    needed = {name: os.path.join(os.path.dirname(group), name) for name in names
              if name.endswith((".json", f".{binary_ext}"))}
    if not needed or not all(os.path.exists(path) for path in needed.values()):
        return None
    return CompiledKernel(src, needed, binary_hash)


def binary_ext(target: Any) -> str:
    """The file extension of the binaries Triton builds for ``target`` ("cubin" on NVIDIA)."""
    from triton.compiler.compiler import make_backend
    return make_backend(target).binary_ext


def binary_context(target: Any) -> str:
    """What a binary's hash was computed for besides the kernel: the target and Triton's
    cache-invalidating settings (a stored hash is used only in the same context)."""
    import triton
    from triton.compiler.compiler import get_cache_invalidating_env_vars
    return repr((triton.__version__, target, sorted(get_cache_invalidating_env_vars().items())))


def build_launcher(binary: Any) -> None:
    """Build (into Triton's cache) the C launcher of a kernel compiled for an NVIDIA target,
    without a CUDA context: what ``driver.active.launcher_cls`` would build at the first launch."""
    from triton.backends.nvidia.driver import CudaLauncher
    CudaLauncher(binary.src, binary.metadata)


def _send(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _recv(stream: IO[bytes]) -> Any:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError("worker stream closed")
    (size,) = _HEADER.unpack(head)
    return pickle.loads(stream.read(size))


def worker_count() -> int:
    """Workers to start: ``EMBER_COMPILE_WORKERS`` if set, else one per CPU (at most 16)."""
    setting = os.environ.get("EMBER_COMPILE_WORKERS", "")
    if setting:
        return max(0, int(setting))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cpus, MAX_WORKERS)


class WorkerPool:
    """Worker processes, started once; ``run`` spreads jobs over them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._procs: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._run_lock = threading.Lock()  # one run at a time: the pipes carry one job each way

    def start(self) -> None:
        with self._lock:
            if self._procs or self.size < 1:
                return
            env = dict(os.environ, CUDA_VISIBLE_DEVICES="",
                       PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            env.pop("TRITON_INTERPRET", None)
            for _ in range(self.size):
                self._procs.append(subprocess.Popen(  # own session: a Ctrl-C is the parent's alone
                    [sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, env=env, start_new_session=True))
            atexit.register(self.close)

    def run(self, jobs: Sequence[Job]) -> list[Result]:
        """Compile ``jobs`` into Triton's cache; per job the binary's hash, or why there is none."""
        with self._run_lock:
            return self._run(jobs)

    def _run(self, jobs: Sequence[Job]) -> list[Result]:
        self.start()
        results: list[Result] = [(None, "not compiled")] * len(jobs)
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(len(jobs)):
            todo.put(i)

        def feed(proc: subprocess.Popen) -> None:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    _send(proc.stdin, jobs[i])
                    results[i] = _recv(proc.stdout)
                except (OSError, EOFError, pickle.PickleError) as exc:  # the worker died
                    results[i] = (None, f"worker failed: {exc}")
                    return

        threads = [threading.Thread(target=feed, args=(p,), daemon=True)
                   for p in self._procs if p.poll() is None]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except BaseException:  # a Ctrl-C while waiting: these feeders still talk to the workers,
            self.close(kill=True)  # so the next run must not share their pipes: new workers
            raise
        return results

    def close(self, kill: bool = False) -> None:
        with self._lock:
            for proc in self._procs:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
                if kill:
                    proc.kill()
            for proc in self._procs:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
            self._procs = []


_POOL: WorkerPool | None = None


def pool() -> WorkerPool:
    global _POOL
    if _POOL is None:
        _POOL = WorkerPool(worker_count())
    return _POOL


def precompile(jobs: Sequence[Job]) -> list[str | None]:
    """Compile ``jobs`` in the workers (started on first use, with the caller's environment:
    set ``TRITON_CACHE_DIR`` before) and return each binary's hash in Triton's cache; with fewer
    than two jobs or no workers, nothing is done. Whatever fails here (None) is compiled again,
    and reported, by the caller."""
    if len(jobs) < 2 or pool().size < 1:
        return [None] * len(jobs)
    return [binary_hash for binary_hash, _ in pool().run(jobs)]


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    import triton.compiler  # noqa: F401  (imported before the first job arrives)
    while True:
        try:
            job = _recv(stdin)
        except EOFError:
            return
        try:
            binary = compile_kernel(import_kernel(job.path, job.fn_name), job.signature, job.constexprs,
                                    job.num_warps, job.num_stages, job.target, job.divisible)
            if job.launcher and job.target.backend == "cuda":
                build_launcher(binary)
            result: Result = (binary.hash, None)
        except Exception as exc:  # reported to the parent, which compiles (and builds) it itself
            result = (None, f"{type(exc).__name__}: {exc}")
        _send(stdout, result)


if __name__ == "__main__":
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # anything printed while compiling must not corrupt the protocol
    _serve(sys.stdin.buffer, out)
