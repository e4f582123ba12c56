"""Running TVM-compiled pieces: the Relax VM with DLPack hand-off, specialization and checking.

A *piece* is one ``fused_N`` submodule of the partitioned graph. :class:`TvmPiece` stands in for
it: it keeps one VM function per input signature (shapes, dtypes, device, scalar values),
builds a new one on first sight of a signature (up to ``max_specializations``, then PyTorch),
and passes torch tensors to the VM as they are: TVM's FFI takes them through DLPack, without a
copy, and the outputs come back as torch tensors sharing TVM's buffers. Inputs that are not
contiguous, or whose data does not start on a 64-byte boundary, are copied first: TVM's kernels
assume dense buffers aligned as TVM allocates them (``kAllocAlignment``), and its vectorized
loads crash the process (SIGSEGV) on a misaligned one, such as ``x[1:]`` or a tensor made by
``torch.from_numpy``.

An output may come back in an input's buffer: TVM's importer turns ``clone`` into the identity,
so the VM hands the input itself back. Such an output, and
one sharing its buffer with an earlier output, is copied (:func:`private_outputs`): PyTorch
code after the piece, or the caller, may write into it in place, and must not reach the
caller's input or another output. Views of inputs that eager returns stay in PyTorch
(``support.views_of_inputs_returned``), so no output of a piece is meant to alias an input.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import torch
import torch.fx as fx

from . import build as tvm_build
from . import cache as disk_cache
from .importer import import_graph
from .options import TvmOptions

log = logging.getLogger("ember.tvm")

#: Byte alignment TVM's generated kernels assume for every buffer (``tvm::runtime::kAllocAlignment``).
ALIGNMENT = 64

#: (rtol, atol scale) used when checking a compiled piece against eager, per dtype.
_TOLERANCES = {
    torch.float64: (1e-6, 1e-6),
    torch.float32: (1e-3, 1e-4),
    torch.float16: (2e-2, 2e-2),
    torch.bfloat16: (5e-2, 5e-2),
}


def signature(args: Sequence[Any]) -> tuple:
    """What a compiled VM function is specialized to: tensor metadata and scalar values."""
    return tuple(
        (tuple(a.shape), a.dtype, a.device) if isinstance(a, torch.Tensor) else (type(a), a)
        for a in args
    )


class VmFunction:
    """One built ``main``: takes the piece's arguments, returns what the submodule returns."""

    def __init__(self, vm: Any, positions: list[int], returns_tuple: bool) -> None:
        self._main = vm["main"]
        self._positions = positions
        self._returns_tuple = returns_tuple

    def __call__(self, *args: Any) -> Any:
        buffers = [as_tvm_buffer(args[i]) for i in self._positions]
        out = self._main(*buffers)
        outputs = private_outputs(list(out) if self._returns_tuple else [out], buffers)
        return tuple(outputs) if self._returns_tuple else outputs[0]


def _span(t: torch.Tensor) -> tuple[int, int]:
    """The byte range of ``t``'s storage (empty for a tensor with no elements)."""
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def private_outputs(outputs: list[Any], inputs: Sequence[torch.Tensor]) -> list[Any]:
    """``outputs`` with a copy of each one whose memory overlaps an input or an earlier output."""
    taken = [_span(t) for t in inputs]
    result = []
    for out in outputs:
        if isinstance(out, torch.Tensor):
            start, end = _span(out)
            if any(start < e and s < end for s, e in taken):
                out = out.clone()
                start, end = _span(out)
            taken.append((start, end))
        result.append(out)
    return result


def as_tvm_buffer(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when TVM can read it in place (contiguous, aligned), else a fresh copy."""
    if t.is_contiguous() and t.data_ptr() % ALIGNMENT == 0:
        return t
    return t.clone(memory_format=torch.contiguous_format)


def _returns_tuple(gm: fx.GraphModule) -> bool:
    output = next(n for n in gm.graph.nodes if n.op == "output")
    return isinstance(output.args[0], (tuple, list))


def build_vm_function(gm: fx.GraphModule, args: Sequence[Any], options: TvmOptions) -> VmFunction:
    """Import, build (or load from the disk cache) and load ``gm`` specialized to ``args``."""
    from tvm import relax

    devices = {a.device for a in args if isinstance(a, torch.Tensor)}
    if len(devices) != 1:
        raise RuntimeError(f"inputs on {len(devices)} devices; TVM needs one")
    target, dev = tvm_build.choose_target(devices.pop(), options)
    mod = import_graph(gm, args)
    root = disk_cache.cache_root(options.cache_dir) if options.cache else None
    key = disk_cache.cache_key(mod, target, options.cache_key_part()) if root else ""
    lib = disk_cache.load(root, key) if root else None
    if lib is None:
        executable = tvm_build.build(mod, target, options)
        if root:
            disk_cache.store(root, key, executable)
        lib = executable
    positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    return VmFunction(relax.VirtualMachine(lib, dev), positions, _returns_tuple(gm))


def _flat(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def mismatch(compiled: Callable[..., Any], eager: Callable[..., Any], args: Sequence[Any]) -> str:
    """"" when ``compiled`` matches ``eager`` on clones of ``args``, else what differs."""
    clones = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    with torch.no_grad():
        got, want = _flat(compiled(*clones)), _flat(eager(*clones))
    if len(got) != len(want):
        return f"{len(got)} outputs instead of {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, torch.Tensor) or not isinstance(w, torch.Tensor):
            if g != w:
                return f"output {i}: {g!r} instead of {w!r}"
            continue
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {i}: {g.dtype}{list(g.shape)} instead of {w.dtype}{list(w.shape)}"
        rtol, scale = _TOLERANCES.get(w.dtype, (0.0, 0.0))
        atol = scale * max(1.0, float(w.abs().max())) if w.numel() and w.is_floating_point() else 0.0
        if not torch.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            return f"output {i} differs from eager by up to {float((g.double() - w.double()).abs().max()):.3g}"
    return ""


class TvmPiece(torch.nn.Module):
    """Drop-in replacement for one ``fused_N`` submodule (see the module docstring)."""

    def __init__(self, name: str, gm: fx.GraphModule, options: TvmOptions) -> None:
        super().__init__()
        self.piece_name = name
        self.eager = gm
        self.options = options
        self._compiled: dict[tuple, Callable[..., Any]] = {}

    def prepare(self, args: Sequence[Any]) -> str:
        """Build for ``args`` now; "" on success, else why the piece runs in PyTorch."""
        key = signature(args)
        try:
            fn: Callable[..., Any] = build_vm_function(self.eager, args, self.options)
            reason = mismatch(fn, self.eager, args) if self.options.verify else ""
        except Exception as exc:  # noqa: BLE001 - any import/build failure keeps PyTorch
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if reason:
            fn = self.eager
        self._compiled[key] = fn
        return reason

    @property
    def tvm_signatures(self) -> int:
        """How many input signatures run through TVM (not PyTorch)."""
        return sum(isinstance(fn, VmFunction) for fn in self._compiled.values())

    def forward(self, *args: Any) -> Any:
        fn = self._compiled.get(signature(args))
        if fn is None:
            if len(self._compiled) >= self.options.max_specializations:
                return self.eager(*args)
            reason = self.prepare(args)
            if reason:
                log.warning("ember.tvm: %s runs in PyTorch for new inputs: %s", self.piece_name, reason)
            fn = self._compiled[signature(args)]
        return fn(*args)
