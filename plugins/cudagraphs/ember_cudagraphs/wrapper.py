"""``wrap``: run a compiled callable through CUDA graphs — warm up, record, replay, or fall back.

Per signature (input layouts and non-tensor values; one signature only when the caller's guards
already fix it, ``trust_signature=True``), a call goes through:

1. warm-up: the first ``warmup`` calls run ``fn`` eagerly (side stream). Inputs the call wrote to
   (version counters moved) make the signature run without graphs from then on.
2. record: inputs are read in place when they are parameters, outputs of another recording, or
   sat at the same address during warm-up; the others are copied into static buffers. The graph
   is recorded, then replayed for this call's result.
3. replay: a recording is replayed only if the inputs it reads in place are where they were
   (``data_ptr``) and its earlier outputs are free. When no recording matches the addresses: an
   input living in another recording's outputs gets a recording of its own for the new address
   (bounded by ``max_replicas``, least recently used evicted); any other input that moved is
   copied from then on (parameters stay in place) and the signature is re-recorded; after
   ``MAX_RERECORDS`` such re-records every input is copied.

Output policy: a replay never overwrites outputs the caller still holds. A recording whose
earlier outputs are alive is skipped for another replica (its own pool), recorded on demand up
to ``max_replicas``; when all of them are in use the call runs without graphs. Gradient accumulation without
``zero_grad`` works this way: the ``.grad`` that took over one replica's output pins it, the
next backward replays another.

Shapes: a graph with symbolic sizes (issue 25; its example inputs carry ``SymInt`` sizes) is
recorded per concrete signature, for at most ``max_shapes`` signatures (later ones run without
graphs, one warning). The first recording of each signature goes into one memory pool per
wrapper, shared; replicas have their own. In a shared pool a recording captured later may hold
its outputs in memory an earlier one uses for temporaries, so an earlier recording is replayed
only while the outputs of every later one are free.

Fallbacks (one logged warning per wrapper and reason, on ``ember.cudagraphs``): no CUDA, inputs
not all on one CUDA device, a graph that mutates its inputs, calls that record autograd history,
capture errors (host syncs such as ``.item()`` / ``nonzero``), inputs that overlap themselves.
They run ``fn`` as is: never a wrong result.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any, Callable, Sequence

import torch
import torch.fx

from . import registry
from .checks import cuda_reason, device_reason, graph_device_reason, mutation_reason
from .host_scalars import HostScalars, host_scalar_inputs, on_device
from .inputs import signature
from .recording import Recording

log = logging.getLogger("ember.cudagraphs")

MAX_RERECORDS = 8
MAX_SHAPES = 8


@dataclasses.dataclass
class _Signature:
    """Recording state of one input signature."""

    warmups: int = 0
    warm_ptrs: dict[int, int] = dataclasses.field(default_factory=dict)
    copied: set[int] = dataclasses.field(default_factory=set)
    recordings: list[Recording] = dataclasses.field(default_factory=list)
    retired: list[Recording] = dataclasses.field(default_factory=list)  # not replayed, not freed yet
    rerecords: int = 0
    classified: bool = False
    eager_reason: str = ""


def _is_stable_kind(t: torch.Tensor) -> bool:
    return isinstance(t, torch.nn.Parameter) or registry.in_pool(t.untyped_storage().data_ptr())


def _versions(args: Sequence[Any]) -> list[int | None]:
    out: list[int | None] = []
    for a in args:
        try:
            out.append(a._version if isinstance(a, torch.Tensor) else None)
        except RuntimeError:  # inference tensors have no version counter
            out.append(None)
    return out


class CudaGraphed:
    """Callable running ``fn`` through CUDA graphs (see the module docstring)."""

    def __init__(self, fn: Callable, *, recorder: Any = None, warmup: int = 1, max_replicas: int = 4,
                 trust_signature: bool = False, name: str = "", max_shapes: int = MAX_SHAPES) -> None:
        if recorder is None:
            from .recorder import CudaRecorder
            recorder = CudaRecorder()
        self.fn = fn
        self.recorder = recorder
        self.warmup = max(1, warmup)
        self.max_replicas = max(1, max_replicas)
        self.trust_signature = trust_signature
        self.max_shapes = max(1, max_shapes)
        self._pool: Any = None    # shared by the first recording of every signature
        self._captures = 0
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self.stats = {"warmups": 0, "captures": 0, "replays": 0, "eager": 0}
        self._states: dict[Any, _Signature] = {}
        self._logged: set[str] = set()
        self._lock = threading.RLock()
        registry.track(self, _releaser(self._states))

    def graph_count(self) -> int:
        return sum(len(s.recordings) for s in list(self._states.values()))

    def _log(self, reason: str) -> None:
        if reason not in self._logged:
            self._logged.add(reason)
            log.warning("ember_cudagraphs: running %s without CUDA graphs: %s", self.name, reason)

    def _eager(self, args: Sequence[Any], reason: str) -> Any:
        self._log(reason)
        self.stats["eager"] += 1
        return self.fn(*args)

    def __call__(self, *args: Any) -> Any:
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return self._eager(args, "the call records autograd history (wrap the forward/backward "
                                     "graphs, e.g. through ember_aot, not the autograd function)")
        with self._lock:
            key = None if self.trust_signature else signature(args)
            state = self._states.get(key)
            if state is None:
                if len(self._states) >= self.max_shapes:
                    return self._eager(args, f"more than {self.max_shapes} input shapes recorded")
                state = self._states[key] = _Signature()
            if state.eager_reason:
                return self._eager(args, state.eager_reason)
            if state.warmups < self.warmup:
                return self._warm(state, args)
            recording = self._pick(state, args)
            if recording is None:
                return self._eager(args, state.eager_reason or f"outputs of all {self.max_replicas} "
                                   "recorded copies of the graph are still in use")
            self.stats["replays"] += 1
            return recording.replay(args)

    def _warm(self, state: _Signature, args: Sequence[Any]) -> Any:
        reason = self.recorder.device_reason(args)
        if reason:
            state.eager_reason = reason
            return self._eager(args, reason)
        before = _versions(args)
        out = self.recorder.warmup(self.fn, args)
        self.stats["warmups"] += 1
        mutated = [i for i, (b, a) in enumerate(zip(before, _versions(args))) if b is not None and a != b]
        if mutated:
            state.eager_reason = f"the call writes into input {mutated[0]} in place"
            self._log(state.eager_reason)
            return out
        ptrs = {i: a.data_ptr() for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
        if state.warmups:
            state.copied |= {i for i, p in ptrs.items() if state.warm_ptrs.get(i) != p}
        state.warm_ptrs = ptrs
        state.warmups += 1
        return out

    def _pick(self, state: _Signature, args: Sequence[Any]) -> Recording | None:
        """A recording free to replay for ``args`` (recorded if needed), or None to run eagerly."""
        moved: list[int] | None = None
        recordings = state.recordings
        for k, recording in enumerate(recordings):
            here = recording.inputs.moved(args)
            if here:
                moved = here if moved is None else moved
            elif not recording.busy() and not self._clobbers(recording):
                if k != len(recordings) - 1:  # most recently used last
                    recordings.append(recordings.pop(k))
                return recording
        if not state.classified:
            state.classified = True
            state.copied |= {i for i, a in enumerate(args) if isinstance(a, torch.Tensor)
                             and state.warm_ptrs.get(i) != a.data_ptr() and not _is_stable_kind(a)}
        elif moved is not None and all(r.inputs.moved(args) for r in recordings):
            self._moved(state, args, moved)
        if len(state.recordings) >= self.max_replicas and not self._evict(state):
            return None
        return self._record(state, args)

    def _clobbers(self, recording: Recording) -> bool:
        """Whether replaying ``recording`` could overwrite outputs of a later recording of the
        shared pool that are still in use (see the module docstring)."""
        if not recording.shared or len(self._states) == 1:
            return False
        return any(r.shared and r.order > recording.order and r.busy()
                   for s in self._states.values() for r in s.recordings)

    def _moved(self, state: _Signature, args: Sequence[Any], moved: list[int]) -> None:
        """No recording reads in place from where the inputs are now.

        Outputs of other recordings keep their place: another recording is made for the new
        addresses (a producer alternating between two replicas gets two consumers). Other
        inputs are copied from now on (parameters stay in place) and the old recordings go.
        """
        log.debug("ember_cudagraphs: %s: inputs %s moved", self.name, moved)
        if all(registry.in_pool(args[i].untyped_storage().data_ptr()) for i in moved):
            return
        state.rerecords += 1
        if state.rerecords > MAX_RERECORDS:
            state.copied = {i for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
        else:
            state.copied |= {i for i in moved if not _is_stable_kind(args[i])}
        state.retired.extend(state.recordings)  # kept alive: other graphs may read their memory
        state.recordings = []

    def _evict(self, state: _Signature) -> bool:
        """Drop the least recently used recording whose outputs are free; False if none is."""
        for k, recording in enumerate(state.recordings):
            if not recording.busy():
                # not freed: a recording of the backward may read this one's outputs in place;
                # its memory goes back with the wrapper (ember.reset() or garbage collection)
                state.retired.append(state.recordings.pop(k))
                return True
        return False

    def _record(self, state: _Signature, args: Sequence[Any]) -> Recording | None:
        pool = None
        if not any(r.shared for r in state.recordings):
            if self._pool is None:
                self._pool = self.recorder.new_pool()
            pool = self._pool
        self._captures += 1
        try:
            recording = Recording(self.fn, args, state.copied, self.recorder, pool, self._captures)
        except Exception as exc:
            state.eager_reason = f"recording failed ({type(exc).__name__}: {exc})".replace("\n", " ")
            state.retired.extend(state.recordings)
            state.recordings = []
            return None
        self.stats["captures"] += 1
        state.recordings.append(recording)
        return recording


def _releaser(states: dict[Any, _Signature]) -> Callable[[], None]:
    def release() -> None:
        for state in list(states.values()):
            for recording in state.recordings + state.retired:
                recording.release()
            state.recordings, state.retired = [], []
        states.clear()
    return release


def static_reason(gm: torch.fx.GraphModule | None = None, example_inputs: Sequence[Any] = (),
                  recorder: Any = None) -> str:
    """Why ``fn`` cannot be recorded at all, known before the first call ("" if it may be)."""
    if recorder is None:
        reason = cuda_reason()
        if reason:
            return reason
        reason = device_reason(example_inputs)
        if reason:
            return reason
        reason = graph_device_reason(gm)
        if reason:
            return reason
    return mutation_reason(gm)


def wrap(fn: Callable, example_inputs: Sequence[Any] = (), *, gm: torch.fx.GraphModule | None = None,
         recorder: Any = None, warmup: int = 1, max_replicas: int = 4, trust_signature: bool = False,
         name: str = "", max_shapes: int = MAX_SHAPES) -> Callable:
    """``fn`` run through CUDA graphs, or ``fn`` itself (one warning) when it cannot be recorded.

    ``example_inputs`` (real or fake tensors) and ``gm`` (the graph ``fn`` computes, if known) let
    the impossible cases be found now: no CUDA, inputs off CUDA, a graph writing into its inputs.
    ``recorder`` replaces the torch.cuda recorder (tests use a fake one on CPU).
    """
    reason = static_reason(gm, example_inputs, recorder)
    if reason:
        log.warning("ember_cudagraphs: running %s without CUDA graphs: %s",
                    name or getattr(fn, "__name__", type(fn).__name__), reason)
        return fn
    return CudaGraphed(fn, recorder=recorder, warmup=warmup, max_replicas=max_replicas,
                       trust_signature=trust_signature, name=name, max_shapes=max_shapes)


def wrap_compiler(compiler: Callable, **kwargs: Any) -> Callable:
    """An aten-graph compiler whose compiled graphs run through CUDA graphs (``wrap``).

    The signature of a compiled graph with static sizes is fixed by the caller's guards (ember's
    core, ember_aot), so it is not re-checked on every call; a graph with symbolic sizes is
    recorded per concrete signature. 0-dim CPU tensor inputs that feed device computations are
    compiled and recorded as device tensors, copied in on each call (``host_scalars``).
    """
    trust = kwargs.pop("trust_signature", True)
    name = kwargs.pop("name", "")

    def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        scalars = host_scalar_inputs(gm, example_inputs)
        if scalars:  # 0-dim CPU inputs: read from a device copy (see host_scalars)
            gm, example_inputs, device = on_device(gm, example_inputs, scalars)
        compiled = compiler(gm, example_inputs)
        graphed = wrap(compiled, example_inputs, gm=gm, name=name or _graph_name(gm),
                       trust_signature=trust and not has_symbolic_sizes(example_inputs), **kwargs)
        return HostScalars(graphed, scalars, device) if scalars else graphed
    return compile_graph


def has_symbolic_sizes(example_inputs: Sequence[Any]) -> bool:
    """Whether some example input is a ``SymInt`` or a tensor with symbolic sizes or strides."""
    for a in example_inputs:
        if isinstance(a, torch.SymInt):
            return True
        if isinstance(a, torch.Tensor) and any(
                isinstance(s, torch.SymInt) for s in (*a.shape, *a.stride())):
            return True
    return False


def _graph_name(gm: torch.fx.GraphModule) -> str:
    return f"a graph of {sum(1 for n in gm.graph.nodes if n.op == 'call_function')} ops"
