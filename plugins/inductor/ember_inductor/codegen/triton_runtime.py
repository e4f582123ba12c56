"""Loading, compiling, autotuning and launching generated Triton kernels.

Each kernel's source is written to ``$EMBER_CACHE_DIR/triton/<hash>.py`` (atomic rename, same
private-directory rules as the C++ cache), imported from there when needed, so ``triton.jit`` sees
a real file. On a GPU every launch configuration is compiled up front with ``triton.compile``
(kernels and configurations in parallel in worker processes, see ``triton_compile``; Triton keeps
the binaries in its own cache, placed under the ember cache unless ``TRITON_CACHE_DIR`` is set).
The first call times every configuration on the real inputs and stores the winner next to the
source (``<hash>.<device>.json``), so a second process compiles and runs only that one; a process
loading a stored plan reads that binary straight from Triton's cache by the hash the first process
recorded (``load_compiled``). A binary found by its hash (from a stored plan, or from the worker
that compiled it) is loaded without importing the kernel's module; the module is imported only to
compile here or to launch through ``JITFunction``. Each binary's GPU module and C launcher are
loaded once, by the thread that loads the binary. Later calls go straight to the compiled kernel's
launcher with a precomputed grid. Under ``TRITON_INTERPRET=1`` kernels run through Triton's
interpreter with their first configuration.

A kernel with symbolic sizes takes them as ``i32`` (or ``i64``) arguments; its grid is computed
from them at each launch, and it is autotuned once per size bucket (the next powers of two of
its sizes), without storing the choice (it depends on the sizes). Where the example's sizes were
multiples of 16, its configurations are compiled assuming so (``LaunchConfig.divisible``: loads
along them vectorize), with a generic fallback for calls whose sizes are not. A dual reduction
(persistent and looped forms in one function) adds its row length's bucket to the key, and a
persistent configuration competes only in buckets whose rows it holds whole
(``LaunchConfig.rmax``).
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import json
import logging
import os
import statistics
import tempfile
from typing import Any, Callable, Iterator, Sequence

import torch
from ember.disk_cache import cache_root, out_of_space, work_dir

from . import triton_check
from .triton import SIZE_TYPES
from .triton_configs import LaunchConfig
from .triton_compile import (Job, KernelRef, binary_context, binary_ext, compile_kernel, import_kernel, load_compiled,
                             pool, precompile)
from .triton_device import interpreting

log = logging.getLogger("ember.inductor")

#: Timed launches per configuration when autotuning.
AUTOTUNE_REPS = 10
#: GPU clock cycles (a few hundred microseconds) the stream waits before a configuration's timed
#: launches, so that they are queued when the first starts and each time is the GPU's. A kernel of
#: a few microseconds launches slower than it runs: timed as launched, its configurations timed
#: alike (the host's cost) and the choice among them was noise.
AUTOTUNE_HOLD_CYCLES = 500_000
#: Version of the way configurations are timed (``_time``): a saved choice made another way, or
#: among other configurations, is tuned again (choices timed as launched, from a warm cache,
#: were noise for short kernels).
AUTOTUNE_SCHEME = 2


#: kernel key -> the folder of a loaded package that holds its source (``reading_from``)
_PACKAGED: dict[str, str] = {}


@contextlib.contextmanager
def reading_from(folder: str) -> Iterator[None]:
    """Kernels loaded in this block come from a package's ``folder`` (``ember_inductor.package``):
    their sources and autotuning choices from ``folder/triton`` (for good), their binaries and C
    launchers from ``folder/triton_bin`` (Triton's cache points there while the block runs)."""
    sources = os.path.join(folder, "triton")
    _PACKAGED.update((name[:-3], sources) for name in os.listdir(sources) if name.endswith(".py"))
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton_bin")
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TRITON_CACHE_DIR"]
        else:
            os.environ["TRITON_CACHE_DIR"] = saved


def kernel_dir() -> str:
    directory = work_dir("triton")
    os.environ.setdefault("TRITON_CACHE_DIR", work_dir("triton_bin"))
    return directory


def start_compile_workers() -> None:
    """Start the compile worker processes now, with this cache's ``TRITON_CACHE_DIR``, so that
    they import Triton while the first graph is lowered."""
    kernel_dir()
    pool().start()


def source_key(source: str) -> str:
    import triton
    return hashlib.sha256(f"{source}\0{triton.__version__}\0{torch.__version__}".encode()).hexdigest()[:40]


def _atomic_write(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_kernel(source: str) -> str:
    """Write ``source`` to the cache unless it holds it already; returns its key (see
    ``kernel_path``). An entry with other bytes (corrupt or truncated) is rewritten."""
    key = source_key(source)
    path = kernel_path(key)
    try:
        with open(path, "rb") as f:
            intact = f.read() == source.encode()
    except OSError:
        intact = False
    if not intact:
        try:
            _atomic_write(path, source)
        except OSError as exc:  # on a full disk, into a temporary folder (kernel_path follows)
            if not out_of_space(exc, os.path.dirname(path)):
                raise
            _atomic_write(os.path.join(kernel_dir(), f"{key}.py"), source)
    return key



def kernel_path(key: str) -> str:
    """The kernel's source: in this process's kernel folder, else where it was written before the
    disk filled up (``ember.disk_cache.out_of_space`` moved the folder)."""
    if key in _PACKAGED:
        return os.path.join(_PACKAGED[key], f"{key}.py")
    path = os.path.join(kernel_dir(), f"{key}.py")
    earlier = os.path.join(cache_root(), "triton", f"{key}.py")
    return earlier if not os.path.exists(path) and os.path.exists(earlier) else path


def compile_config(fn: Any, signature: dict[str, str], cfg: LaunchConfig, target: Any) -> Any:
    """``triton.compile`` of one configuration, pointers assumed 16-byte aligned (and the sizes
    at ``cfg.divisible`` multiples of 16)."""
    return compile_kernel(fn, signature, cfg.kwargs(), cfg.num_warps, cfg.num_stages, target, cfg.divisible)


class TritonLauncher:
    """Callable running one generated kernel on tensors (positional, in parameter order)."""

    def __init__(self, key: str, fn_name: str, signature: dict[str, str], configs: list[LaunchConfig],
                 grids: list[tuple], unaligned_ok: Sequence[bool], row_length: str = "",
                 accumulated: Sequence[int] = ()) -> None:
        """``accumulated``: positions of the tensors the kernel adds into (a scatter's target),
        which autotuning's repeated launches must not touch."""
        self.key = key
        self.accumulated = tuple(accumulated)
        self.fn_name = fn_name
        self.ref = KernelRef(fn_name, list(signature))
        self.signature = signature
        self.configs = configs
        self.grids = grids
        self.size_pos = tuple(i for i, t in enumerate(signature.values()) if t in SIZE_TYPES)
        sizes = [name for name, t in signature.items() if t in SIZE_TYPES]
        self.grid_fns = [_grid_fn(g, sizes) for g in grids]
        self.row_fn = _sizes_fn(row_length, sizes) if row_length else None
        # sizes some configurations assume multiples of 16 (LaunchConfig.divisible)
        self.divisible = next((c.divisible for c in configs if c.divisible), ())
        self.buckets: dict[tuple, Callable] = {}  # symbolic sizes: launch per size bucket
        self.check = tuple(i for i, ok in enumerate(unaligned_ok) if not ok)
        self.binaries: dict[int, Any] = {}
        self.binary_hashes: dict[int, str] = {}  # of compiled configurations, valid in hash_context
        self.hash_context = ""
        self.choice: int | None = None
        self._launch: Callable | None = None
        self._stream: Callable | None = None

    @functools.cached_property
    def fn(self) -> Any:
        """The kernel's ``JITFunction`` (its module imported on first use)."""
        return import_kernel(kernel_path(self.key), self.fn_name)

    # -- compilation -------------------------------------------------------------------------
    def _tuning_path(self) -> str:
        dev = torch.cuda.get_device_name().replace(" ", "_").replace("/", "_")
        return os.path.join(os.path.dirname(kernel_path(self.key)), f"{self.key}.{dev}.json")

    def files(self) -> dict[str, str]:
        """The files this kernel runs from, by their path in a package: its source, its autotuning
        choice, and the Triton cache entries of its compiled binaries and their C launchers."""
        from triton.runtime.cache import get_cache_manager
        found = {f"triton/{self.key}.py": kernel_path(self.key)}
        tuning = self._tuning_path() if self.binaries else ""
        if os.path.exists(tuning):
            found[f"triton/{os.path.basename(tuning)}"] = tuning
        for binary in self.binaries.values():
            launcher = getattr(getattr(binary.run.launch, "__self__", None), "__file__", "")
            for entry in (get_cache_manager(binary.hash).cache_dir, os.path.dirname(launcher) if launcher else ""):
                for name in os.listdir(entry) if entry else ():
                    if os.path.isfile(os.path.join(entry, name)):
                        found[f"triton_bin/{os.path.basename(entry)}/{name}"] = os.path.join(entry, name)
        return found

    def _offered(self) -> list[str]:
        """The configurations a choice is made among, as saved with it."""
        return [self._describe(i) for i in range(len(self.configs))]

    def pending_compiles(self) -> list[int]:
        """Configuration indices to compile: the cached choice alone when there is one, made
        by this ``AUTOTUNE_SCHEME`` among these configurations."""
        if self.size_pos:
            return list(range(len(self.configs)))
        try:
            with open(self._tuning_path()) as f:
                saved = json.load(f)
            if not isinstance(saved, dict) or saved.get("scheme") != AUTOTUNE_SCHEME \
                    or saved.get("offered") != self._offered():
                return list(range(len(self.configs)))
            idx = [i for i, c in enumerate(self.configs) if list(map(list, c.meta)) == saved["meta"]
                   and c.num_warps == saved["num_warps"] and c.num_stages == saved["num_stages"]]
            if idx:
                self.choice = idx[0]
                return idx
        except (OSError, ValueError, KeyError):
            pass
        return list(range(len(self.configs)))

    def compiled(self, index: int, binary: Any) -> None:
        self.binaries[index] = binary

    # -- launching ---------------------------------------------------------------------------
    def __call__(self, *args: torch.Tensor) -> None:
        if self.size_pos:
            return self._call_symbolic(args)
        if self._launch is not None:
            for i in self.check:
                if args[i].data_ptr() & 15:
                    return self._generic(args)
            return self._launch(*args)
        if interpreting():
            cfg = self.configs[0]
            self.fn[self.grids[0]](*args, **cfg.kwargs())
            return None
        self._first_call(args)
        return None

    def _grid(self, index: int, args: Sequence[Any]) -> tuple:
        fn = self.grid_fns[index]
        return self.grids[index] if fn is None else fn(*[args[i] for i in self.size_pos])

    def _call_symbolic(self, args: Sequence[Any]) -> None:
        sizes = [args[i] for i in self.size_pos]
        rows = _bucket(self.row_fn(*sizes)) if self.row_fn is not None else 0
        aligned = all(args[i] % 16 == 0 for i in self.divisible)
        bucket = (*map(_bucket, sizes), rows, aligned)
        if interpreting():
            index = self._fitting(rows, aligned)[0]
            self.fn[self._grid(index, args)](*args, **self.configs[index].kwargs())
            return None
        launch = self.buckets.get(bucket)
        if launch is not None and not any(args[i].data_ptr() & 15 for i in self.check):
            return launch(*args)
        if self._stream is None:
            self._set_stream()
        if any(args[i].data_ptr() & 15 for i in self.check):
            fitting = self._fitting(rows, aligned)
            return self._generic(args, self.choice if self.choice in fitting else fitting[0])
        self.choice = self._autotune(args, save=False, among=self._fitting(rows, aligned))
        launch = self.buckets[bucket] = self._make_launch(self.choice)
        return launch(*args)

    def _fitting(self, rows: int, aligned: bool) -> list[int]:
        """Configurations valid for every call of a bucket whose rows round up to ``rows`` and
        whose sizes are (``aligned``) or not all multiples of 16 where configurations assume so:
        a persistent one must hold the rows, a divisible one get aligned sizes."""
        return [i for i, c in enumerate(self.configs)
                if (not c.rmax or rows <= c.rmax) and (aligned or not c.divisible)]

    def _generic(self, args: Sequence[torch.Tensor], index: int | None = None) -> None:
        """Through ``JITFunction`` (any alignment), with configuration ``index`` (default: the
        chosen one)."""
        index = (self.choice or 0) if index is None else index
        cfg = self.configs[index]
        self.fn[self._grid(index, args)](*args, **cfg.kwargs(), num_warps=cfg.num_warps,
                                         num_stages=cfg.num_stages)

    def _set_stream(self) -> None:
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        device = torch.cuda.current_device()
        # a C-level partial: no Python frame in the launch of every kernel
        self._stream = functools.partial(raw, device) if raw is not None else (
            lambda: torch.cuda.current_stream(device).cuda_stream)

    def _first_call(self, args: Sequence[torch.Tensor]) -> None:
        self._set_stream()
        if any(args[i].data_ptr() & 15 for i in self.check):
            self.choice = self.choice or 0
            return self._generic(args)
        if self.choice is None:
            self.choice = self._autotune(args)
        self._launch = self._make_launch(self.choice)
        self._launch(*args)
        return None

    def _make_launch(self, index: int) -> Callable:
        binary = self.binaries[index]
        run, function, packed = binary.run, binary.function, binary.packed_metadata
        stream = self._stream
        assert stream is not None
        constexprs = tuple(value for _, value in self.configs[index].meta)  # the launcher takes them too
        direct = _direct_launcher(run)
        grid_fn, pos = self.grid_fns[index], self.size_pos
        if grid_fn is not None:  # symbolic sizes: the grid of this call's sizes
            launch_fn, flags = direct if direct is not None else (None, ())

            def launch_sized(*args: Any) -> None:
                gx, gy, gz = grid_fn(*[args[i] for i in pos])
                if launch_fn is not None:
                    launch_fn(gx, gy, gz, stream(), function, *flags, packed, None, None, None, *args, *constexprs)
                else:
                    run(gx, gy, gz, stream(), function, packed, None, None, None, *args, *constexprs)
            return launch_sized
        gx, gy, gz = self.grids[index]
        if direct is not None:
            c_launch, flags = direct

            def launch(*args: torch.Tensor) -> None:
                c_launch(gx, gy, gz, stream(), function, *flags, packed, None, None, None, *args, *constexprs)
            return launch

        def launch_generic(*args: torch.Tensor) -> None:
            run(gx, gy, gz, stream(), function, packed, None, None, None, *args, *constexprs)
        return launch_generic

    def _autotune(self, args: Sequence[torch.Tensor], save: bool = True, among: Sequence[int] | None = None) -> int:
        usable = sorted(i for i in self.binaries if among is None or i in among)
        if not usable:
            raise RuntimeError(f"no compiled launch configuration of kernel {self.key} fits these sizes")
        if triton_check.enabled():
            triton_check.check(self.key, {i: self._make_launch(i) for i in usable}, args, self._describe)
        if len(usable) == 1:
            best = usable[0]
        else:
            timings = {}
            flush = _l2_flush_buffer()
            # each configuration runs AUTOTUNE_REPS + 1 times: it adds into copies, not the result
            timed = [_copy_of(a) if i in self.accumulated else a for i, a in enumerate(args)]
            for i in usable:
                try:
                    timings[i] = self._time(self._make_launch(i), timed, flush)
                except Exception as exc:  # e.g. out of shared memory / registers on this device
                    log.debug("triton config %s failed: %s", self.configs[i], exc)
            if not timings:
                raise RuntimeError(f"no launch configuration of kernel {self.key} runs on this device")
            best = min(timings, key=timings.__getitem__)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("autotuned %s: %s", self.key, "; ".join(
                    f"{self._describe(i)} {t:.4f}{' *' if i == best else ''}" for i, t in timings.items()))
        cfg = self.configs[best]
        if not save:
            return best
        try:
            _atomic_write(self._tuning_path(), json.dumps(
                {"meta": list(map(list, cfg.meta)), "num_warps": cfg.num_warps, "num_stages": cfg.num_stages,
                 "scheme": AUTOTUNE_SCHEME, "offered": self._offered()}))
        except OSError as exc:
            log.debug("could not save the autotuning choice: %s", exc)
        return best

    def _describe(self, index: int) -> str:
        cfg = self.configs[index]
        return f"{dict(cfg.meta)} w{cfg.num_warps} s{cfg.num_stages}"

    @staticmethod
    def _time(launch: Callable, args: Sequence[torch.Tensor], flush: torch.Tensor | None) -> float:
        """The median GPU time of one launch, each with the L2 cache emptied first (``flush``
        overwritten), as in a training step whose activations outgrow the cache. Warm and cold
        rank differently: a hand-written column sum of [2048, 1152] float32, 8 columns a program,
        is faster with 4 warps than with 8 warm and slower cold (H200,
        ``benchmarks/column_sums.py``)."""
        launch(*args)
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(AUTOTUNE_REPS)]
        torch.cuda._sleep(AUTOTUNE_HOLD_CYCLES)
        for start, end in events:
            if flush is not None:
                flush.zero_()
            start.record()
            launch(*args)
            end.record()
        torch.cuda.synchronize()
        return statistics.median(start.elapsed_time(end) for start, end in events)


def _copy_of(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` with its strides (an input written in place may have gaps, which
    ``clone`` would close)."""
    return torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device).copy_(t)


def _l2_flush_buffer() -> torch.Tensor | None:
    """Bytes on the current GPU twice its L2 cache: overwriting them evicts whatever it held.
    None where the memory is not there (the timings are then taken with warm inputs)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    size = 2 * (getattr(props, "L2_cache_size", 0) or 64 << 20)
    try:
        return torch.empty(size, dtype=torch.int8, device="cuda")
    except torch.cuda.OutOfMemoryError:
        return None


def _bucket(n: int) -> int:
    """The size bucket of ``n`` for autotuning: the next power of two."""
    return 1 << max(0, (int(n) - 1).bit_length())


def _grid_fn(grid: tuple, names: list[str]) -> Callable | None:
    """The grid as a function of the size arguments, None for a static grid."""
    if all(isinstance(g, int) for g in grid):
        return None
    return _sizes_fn(f"({', '.join(str(g) for g in grid)},)", names)


def _sizes_fn(source: str, names: list[str]) -> Callable:
    """``source`` (Python over the size symbols ``names``) as a function of the size arguments."""
    return eval(f"lambda {', '.join(names)}: {source}")  # noqa: S307 (generated)


def _direct_launcher(run: Any) -> tuple[Callable, tuple] | None:
    """Triton's C launch function and its fixed leading flags, when the kernel needs no scratch
    memory: calling it directly skips the Python ``CudaLauncher.__call__`` (a frame, a closure
    and two scratch allocations per launch). None when this Triton lays its launcher out otherwise."""
    try:
        if run.global_scratch_size or run.profile_scratch_size:
            return None
        return run.launch, (run.launch_cooperative_grid, run.launch_pdl, None, None)
    except AttributeError:
        return None


def _load_binary(ln: TritonLauncher, index: int, target: Any, binary_hash: str | None, ext: str,
                 device: int) -> Any:
    """Configuration ``index`` of ``ln``: the binary stored under ``binary_hash``, else compiled
    here; then loaded onto ``device`` with Triton's C launcher for its signature (a C compile the
    first time a signature is seen, cached on disk), which Triton would otherwise do at the first
    launch, one kernel after another."""
    cfg = ln.configs[index]
    binary = load_compiled(ln.ref, ln.signature, cfg.kwargs(), binary_hash, ext, cfg.divisible) if binary_hash else None
    if binary is None:
        binary = compile_config(ln.fn, ln.signature, cfg, target)
    with torch.cuda.device(device):
        binary.run  # noqa: B018  (the property loads the module and the launcher)
    return binary


def compile_all(launchers: list[TritonLauncher]) -> None:
    """Compile every pending configuration of every kernel: in the worker processes first (into
    Triton's cache), then load them here on a thread pool, compiling what the workers did not."""
    if interpreting() or not launchers:
        return
    from triton.runtime import driver
    target = driver.active.get_current_target()
    context = binary_context(target)
    ext = binary_ext(target)
    device = torch.cuda.current_device()
    jobs = [(ln, i) for ln in launchers for i in ln.pending_compiles()]
    hashes = {(id(ln), i): h for ln in launchers if ln.hash_context == context for i, h in ln.binary_hashes.items()}
    # a kernel with a saved autotuning choice was compiled by an earlier process: in Triton's cache
    worker_jobs, signatures, todo = [], set(), []
    for ln, i in jobs:
        if ln.choice is not None or (id(ln), i) in hashes:
            continue
        cfg = ln.configs[i]
        # configurations differing only in block sizes share one launcher: build it once
        signature = (tuple(ln.signature.items()), tuple(cfg.kwargs()))
        worker_jobs.append(Job(kernel_path(ln.key), ln.fn_name, ln.signature, cfg.kwargs(),
                               cfg.num_warps, cfg.num_stages, target, signature not in signatures, cfg.divisible))
        signatures.add(signature)
        todo.append((id(ln), i))
    for job_key, binary_hash in zip(todo, precompile(worker_jobs)):
        if binary_hash is not None:
            hashes[job_key] = binary_hash
    workers = max(1, min(len(jobs), os.cpu_count() or 1, 16))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = {pool.submit(_load_binary, ln, i, target, hashes.get((id(ln), i)), ext, device): (ln, i)
                   for ln, i in jobs}
        errors = []
        for fut in concurrent.futures.as_completed(futures):
            ln, i = futures[fut]
            try:
                ln.compiled(i, fut.result())
            except Exception as exc:
                errors.append((ln, i, exc))
    for ln, i, exc in errors:
        log.debug("triton config %s of %s did not compile: %s", ln.configs[i], ln.key, exc)
    for ln in launchers:
        if not ln.binaries:
            raise RuntimeError(f"Triton kernel {ln.key} did not compile: {errors[-1][2]}")
        ln.binary_hashes = {i: b.hash for i, b in ln.binaries.items()}
        ln.hash_context = context
