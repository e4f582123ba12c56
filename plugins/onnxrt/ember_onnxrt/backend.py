"""Backend "onnxrt": run ember graphs in onnxruntime (inference only).

``onnxrt(gm, example_inputs, mode=None, options=None)`` returns a callable that, per input
signature (dtypes, shapes, strides, devices, Python scalar values), has ember_aot lower ``gm``
to a functional aten inference graph (:func:`compile_aten` is its ``inference_compiler``),
splits that into onnxruntime pieces and PyTorch eager pieces, builds one InferenceSession per
piece, and reuses them on every later call with that signature. The example inputs' signature
is built at compile time, so conversion errors surface there (ember's core then runs the graph
eagerly with a warning).

Inference only: onnxruntime computes no gradients. A call with grad mode on and an input that
requires grad runs ``gm`` in PyTorch eager with one warning (``options={"on_grad": "raise"}``
raises :class:`ember.EmberError` instead). Wrap inference in ``torch.no_grad()`` /
``torch.inference_mode()`` to use onnxruntime for modules whose parameters require grad.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Hashable, Sequence

import ember_aot
import torch
import torch.fx
from ember import EmberError

from . import cache, converter, partition, session, torchlib_bridge
from .decompositions import onnx_decompositions
from .options import OnnxrtOptions

log = logging.getLogger("ember.onnxrt")


def onnxrt(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """The ember backend contract: ``(gm, example_inputs) -> callable`` (see module docstring)."""
    opts = OnnxrtOptions.from_dict(options)
    session.validate(opts)
    if mode not in (None, "default"):
        log.info("onnxrt: mode=%r has no effect; use options['graph_optimization_level']", mode)
    compiled = OnnxrtCompiled(gm, opts)
    compiled.prepare(list(example_inputs))
    return compiled


def compile_aten(
    aten_gm: torch.fx.GraphModule, example_inputs: Sequence[Any], opts: OnnxrtOptions
) -> torch.fx.GraphModule:
    """Compile a functional aten graph (``meta["val"]`` on every node): partition it and swap
    each convertible piece for an onnxruntime session. The result takes the same inputs."""
    torchlib_bridge.insert_type_promotion(aten_gm)
    part = partition.partition(aten_gm, opts.opset)
    if part.eager_ops and not opts.fallback:
        raise EmberError(
            "onnxrt cannot convert: "
            + "; ".join(part.reasons.get(op, op) for op in sorted(part.eager_ops))
        )
    failed: dict[str, str] = {}
    onnx_ops = 0
    for name in part.submodule_names:
        piece = getattr(part.gm, name)
        try:
            setattr(part.gm, name, _session_for(piece, opts))
        except Exception as exc:  # onnxruntime refused the model: keep the piece in PyTorch
            if not opts.fallback:
                raise
            failed[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            continue
        onnx_ops += sum(1 for n in piece.graph.nodes if n.op == "call_function")
    partition.log_placement(part, onnx_ops, failed)
    part.gm.meta["ember_onnxrt"] = {
        "onnx_ops": onnx_ops,
        "sessions": len(part.submodule_names) - len(failed),
        "eager_ops": dict(part.eager_ops),
        "failed_partitions": failed,
    }
    return part.gm


def _session_for(piece: torch.fx.GraphModule, opts: OnnxrtOptions) -> session.OrtModule:
    placeholders = [n for n in piece.graph.nodes if n.op == "placeholder"]
    in_metas = [n.meta["val"] for n in placeholders]
    (result,) = [n.args[0] for n in piece.graph.nodes if n.op == "output"]
    single = not isinstance(result, (list, tuple))
    out_metas = [a.meta["val"] for a in ((result,) if single else result)]
    devices = {m.device for m in in_metas + out_metas}
    device = next((d for d in devices if d.type != "cpu"), torch.device("cpu"))
    key = cache.graph_key(piece, opts.opset, opts.optimize)
    model = cache.load_or_build(
        key,
        lambda: converter.to_onnx(piece, opts.opset, opts.optimize).SerializeToString(),
        opts.cache,
    )
    return session.OrtModule(
        model, [p.name for p in placeholders], in_metas, out_metas, device, opts, single_output=single
    )


def _no_training(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
    # OnnxrtCompiled applies the on_grad policy before ember_aot could need a training graph.
    raise EmberError("backend 'onnxrt' is inference-only: it compiles no training graphs")


def _signature(args: Sequence[Any]) -> Hashable:
    return tuple(
        (a.dtype, a.shape, a.stride(), a.device, a.requires_grad)
        if isinstance(a, torch.Tensor) else (type(a), a)
        for a in args
    )


class OnnxrtCompiled:
    """The callable the backend returns: one compiled entry per input signature."""

    def __init__(self, gm: torch.fx.GraphModule, opts: OnnxrtOptions) -> None:
        self.gm = gm
        self.opts = opts
        self._entries: dict[Hashable, Callable[..., Any]] = {}
        self._placements: list[dict[str, Any]] = []
        self._lock = threading.RLock()
        self._warned_grad = False
        self._aot = ember_aot.aot_autograd(
            fw_compiler=_no_training,
            inference_compiler=self._compile_inference,
            decompositions=onnx_decompositions(opts.opset),
        )

    def _compile_inference(self, aten_gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        compiled = compile_aten(aten_gm, example_inputs, self.opts)
        self._placements.append(compiled.meta["ember_onnxrt"])
        return compiled

    def prepare(self, example_inputs: list[Any]) -> None:
        """Build the entry for ``example_inputs``' signature now (errors propagate)."""
        self._entries[_signature(example_inputs)] = self._build(example_inputs)

    def _build(self, args: Sequence[Any]) -> Callable[..., Any]:
        with torch.no_grad():  # nothing here needs autograd: ember_aot traces for inference
            return self._aot(self.gm, list(args))

    def _entry(self, key: Hashable, args: Sequence[Any]) -> Callable[..., Any]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                try:
                    entry = self._build(args)
                except Exception as exc:
                    if not self.opts.fallback:
                        raise
                    log.warning("onnxrt: compiling failed for new inputs, running eagerly: %s", exc)
                    entry = self.gm
                self._entries[key] = entry
        return entry

    def placements(self) -> list[dict[str, Any]]:
        """What ran where, per compiled aten graph: onnx op count, sessions, eager ops."""
        return list(self._placements)

    def __call__(self, *args: Any) -> Any:
        if torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in args
        ):
            return self._with_grad(args)
        key = _signature(args)
        entry = self._entries.get(key) or self._entry(key, args)
        with torch.no_grad():  # no input requires grad: the same inference plan either way
            return entry(*args)

    def _with_grad(self, args: Sequence[Any]) -> Any:
        if self.opts.on_grad == "raise":
            raise EmberError(
                "backend 'onnxrt' is inference-only: an input requires grad and grad mode is on; "
                "call it under torch.no_grad() / torch.inference_mode(), or pass "
                "options={'on_grad': 'eager'} to run such calls in PyTorch eager"
            )
        if not self._warned_grad:
            self._warned_grad = True
            log.warning(
                "onnxrt: inputs require grad, running this graph in PyTorch eager so autograd "
                "works (onnxruntime is inference-only; use torch.no_grad() for onnxruntime)"
            )
        return self.gm(*args)
