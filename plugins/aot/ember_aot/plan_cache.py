"""On-disk cache of compiled plans: a new process skips tracing, partitioning and compiling.

Used when the caller's compilers can save what they compiled (a :class:`PlanCodec`; ember_inductor
has one). The key covers everything a plan is built from:
- the captured graph, node by node: op, target by qualified name, arguments. A graph is not
  stored when a target cannot be named the same way in another process (a user function, an
  operator outside ``aten``/``prims``) or an argument is an object rather than a plain value;
- each input: tensor type, shape, stride, dtype, device, requires_grad, leafness and the first
  input sharing its storage; non-tensor inputs by type and value (plain values only);
- grad mode, autocast state, default dtype, deterministic algorithms;
- ember_aot's own source, torch's version and the codec's salt (its compilers, their settings
  and versions).
Plans traced with symbolic sizes are not stored (their layouts are expressions over one
process's size symbols); the per-shape plans of a dynamic graph are, keyed on their sizes.

An entry is one pickle, written to a temporary file and renamed into place, behind a SHA-256 of
its bytes: a corrupt, truncated or unreadable entry is a miss. The codec's directory is private
to its user (ember_inductor checks that), so reading a pickle from it trusts that user's own
processes, like loading the compiled libraries stored beside it.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import logging
import os
import pickle
import sys
import tempfile
from typing import Any, Callable, Protocol, Sequence

import torch
import torch.fx
from torch.fx.node import _get_qualified_name, map_aggregate
from torch.utils import _pytree as pytree

from .analysis import CONSTANT
from .runtime import CompiledPlan

log = logging.getLogger("ember.aot")

_MAGIC = b"ember-plan-1\n"
_PLAIN = (bool, int, float, complex, str, type(None), torch.dtype, torch.device, torch.memory_format,
          torch.layout, slice, type(Ellipsis))
_TARGET_MODULES = ("torch", "_operator", "operator", "math", "builtins")
_OP_NAMESPACES = ("aten", "prims")
_NOT_STORED = ("gm", "fw", "bw", "bw_variants")  # bw_variants: compiled anew on need, not stored
_PLAN_FIELDS = [f.name for f in dataclasses.fields(CompiledPlan) if f.name not in _NOT_STORED]


class PlanCodec(Protocol):
    """What the plan cache needs from the caller's compilers."""

    salt: str  # identifies the compilers, their settings and versions

    def directory(self) -> str:
        """A private directory for the entries."""
        ...

    def dump(self, compiled: Callable) -> Any:
        """A picklable description of a compiled graph, or None when it cannot be saved."""
        ...

    def load(self, artifact: Any) -> Callable:
        """The compiled graph ``dump`` described (raises when that is no longer possible)."""
        ...


class _Uncacheable(Exception):
    """The graph, an input or an output cannot be saved or named across processes."""


def plan_path(gm: torch.fx.GraphModule, args: Sequence[Any], codec: PlanCodec) -> str | None:
    """Where the plan for ``gm`` called with ``args`` in the current state lives; None when such
    a plan is not stored (the reason is logged at DEBUG)."""
    try:
        h = hashlib.sha256()
        own = source_hash(os.path.dirname(os.path.abspath(__file__)))
        for part in (own, torch.__version__, codec.salt, _graph_text(gm), repr(_inputs(args)),
                     repr(_global_state())):
            h.update(part.encode())
            h.update(b"\0")
        return os.path.join(codec.directory(), h.hexdigest()[:40] + ".plan")
    except Exception as exc:  # _Uncacheable, or a directory that cannot be used
        log.debug("plan cache: not storing this graph: %s", exc)
        return None


def fetch(path: str, gm: torch.fx.GraphModule, codec: PlanCodec) -> CompiledPlan | None:
    """The plan stored at ``path``, its compiled graphs loaded by ``codec``; None on any miss."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        digest, payload = data[len(_MAGIC):len(_MAGIC) + 64], data[len(_MAGIC) + 65:]
        if not data.startswith(_MAGIC) or hashlib.sha256(payload).hexdigest().encode() != digest:
            raise ValueError("corrupt entry")
        state = pickle.loads(payload)
        fw, bw = state.pop("fw"), state.pop("bw")
        return CompiledPlan(gm=gm, fw=codec.load(fw), bw=[codec.load(b) for b in bw], **state)
    except Exception as exc:  # a stale or broken entry is recompiled (and overwritten)
        log.debug("plan cache: cannot use %s: %s: %s", path, type(exc).__name__, exc)
        return None


def store(path: str, plan: CompiledPlan, codec: PlanCodec) -> None:
    """Save ``plan`` at ``path`` when its compiled graphs and outputs can be saved."""
    try:
        if any(o.kind == CONSTANT and not _plain(o.value) for o in plan.analysis.outputs):
            raise _Uncacheable("a non-tensor output is an object")
        state = {name: getattr(plan, name) for name in _PLAN_FIELDS}
        state["fw"] = codec.dump(plan.fw)
        state["bw"] = [codec.dump(b) for b in plan.bw]
        if state["fw"] is None or any(b is None for b in state["bw"]):
            raise _Uncacheable("the compiler cannot save this graph")
        payload = dumps(state)
    except Exception as exc:
        log.debug("plan cache: not storing this plan: %s: %s", type(exc).__name__, exc)
        return
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
        os.replace(tmp, path)
    except OSError as exc:  # an unwritable cache costs the entry, not the compiled plan
        log.debug("plan cache: cannot write %s: %s", path, exc)
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


# -- pickling ------------------------------------------------------------------------------------
def _op_id(op: torch._ops.OpOverload) -> str:
    return f"{op.namespace}::{op._opname}.{op._overloadname}"


def _op_named(name: str) -> torch._ops.OpOverload:
    namespace, rest = name.split("::")
    packet, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")


class _Pickler(pickle.Pickler):
    """Operators by name; tree specs through pytree's own format (pickling one directly makes
    deprecated ``LeafSpec`` objects, which warn when loaded)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, torch._ops.OpOverload):
            return _op_named, (_op_id(obj),)
        if isinstance(obj, pytree.TreeSpec):
            return pytree.treespec_loads, (pytree.treespec_dumps(obj),)
        return NotImplemented


def dumps(obj: Any) -> bytes:
    """``obj`` pickled the way plans are stored (operators by name)."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


# -- the key -------------------------------------------------------------------------------------
@functools.lru_cache(None)
def source_hash(package_dir: str) -> str:
    """A hash of every ``.py`` file under ``package_dir``: plugins put it in their codec's salt so
    that entries made by other code are not used."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(package_dir):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return type(value) in _PLAIN or isinstance(value, torch.Size)


def _target_name(target: Any) -> str:
    if isinstance(target, str):  # call_method
        return target
    if isinstance(target, torch._ops.OpOverload):
        if target.namespace not in _OP_NAMESPACES:
            raise _Uncacheable(f"operator {target} outside {_OP_NAMESPACES}")
        return _op_id(target)
    name = _get_qualified_name(target)
    module, _, attr = name.rpartition(".")
    parts = (module or "builtins").split(".")
    # the longest loaded module prefix, then attributes: nothing is imported here
    for n in range(len(parts), 0, -1):
        obj = sys.modules.get(".".join(parts[:n]))
        if obj is not None and parts[0] in _TARGET_MODULES:
            for part in parts[n:] + [attr]:
                obj = getattr(obj, part, None)
            if obj is target:
                return name
            break
    raise _Uncacheable(f"target {name} cannot be named in another process")


def _graph_text(gm: torch.fx.GraphModule) -> str:
    def arg(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return f"%{a.name}"
        if not _plain(a):
            raise _Uncacheable(f"argument of type {type(a).__name__}")
        return a

    lines = []
    for node in gm.graph.nodes:
        if node.op in ("get_attr", "call_module"):
            raise _Uncacheable(f"{node.op} node {node.name}")
        target = node.target if node.op in ("placeholder", "output") else _target_name(node.target)
        lines.append(f"{node.op} {node.name} {target} {map_aggregate(node.args, arg)!r} "
                     f"{map_aggregate(node.kwargs, arg)!r}")
    return "\n".join(lines)


def _inputs(args: Sequence[Any]) -> list[tuple]:
    out: list[tuple] = []
    storages: dict[tuple, int] = {}
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            if type(a) not in (torch.Tensor, torch.nn.Parameter):
                raise _Uncacheable(f"input of type {type(a).__name__}")
            first = storages.setdefault((a.device, a.untyped_storage().data_ptr()), i)
            out.append((type(a).__name__, tuple(a.shape), a.stride(), a.dtype, a.device, a.requires_grad,
                        a.is_leaf, first))
        elif type(a) in _PLAIN:
            out.append((type(a).__name__, a))
        else:
            raise _Uncacheable(f"input of type {type(a).__name__}")
    return out


def _global_state() -> tuple:
    autocast = tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in ("cpu", "cuda"))
    return (torch.is_grad_enabled(), autocast, torch.get_default_dtype(),
            torch.are_deterministic_algorithms_enabled())
