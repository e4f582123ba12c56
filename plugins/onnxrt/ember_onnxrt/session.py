"""Run one converted graph piece in an onnxruntime InferenceSession, with zero-copy IO.

The session is built once per piece. Each call binds the torch input tensors' memory directly
to onnxruntime (``IOBinding.bind_input`` with the tensor's data pointer; non-contiguous inputs
are made contiguous first) and lets onnxruntime write the results straight into torch tensors
allocated here (``bind_output`` with their data pointers): no numpy round trip, no copies.
A tensor with no elements has no memory (its data pointer is null, which onnxruntime refuses to
bind): it is bound at the address of a one-element scratch tensor that nothing reads or writes.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import onnxruntime as ort
import torch

from .options import OnnxrtOptions
from .torchlib_bridge import onnx_dtype

log = logging.getLogger("ember.onnxrt")

_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def session_options(opts: OnnxrtOptions) -> ort.SessionOptions:
    """``opts.session_options`` as an ``ort.SessionOptions`` with the requested optimisation level."""
    if isinstance(opts.session_options, ort.SessionOptions):
        so = opts.session_options
        if opts.graph_optimization_level is not None:
            so.graph_optimization_level = _LEVELS[opts.graph_optimization_level]
        return so
    so = ort.SessionOptions()
    for name, value in (opts.session_options or {}).items():
        if not hasattr(so, name):
            raise ValueError(f"onnxruntime.SessionOptions has no attribute {name!r}")
        setattr(so, name, value)
    so.graph_optimization_level = _LEVELS[opts.graph_optimization_level or "all"]
    return so


def validate(opts: OnnxrtOptions) -> None:
    """Raise ``ValueError`` now for providers or session options onnxruntime would refuse
    (configuration mistakes must not turn into a silent fallback to PyTorch)."""
    session_options(opts)
    opts.providers_for(torch.device("cpu"), ort.get_available_providers())


def _device_of(device: torch.device) -> tuple[str, int]:
    return ("cuda", device.index or 0) if device.type == "cuda" else ("cpu", 0)


class OrtModule(torch.nn.Module):
    """Calls one InferenceSession with the inputs of an fx ``fused_<n>`` piece."""

    def __init__(
        self,
        model: bytes,
        input_names: Sequence[str],
        input_metas: Sequence[torch.Tensor],
        output_metas: Sequence[torch.Tensor],
        device: torch.device,
        opts: OnnxrtOptions,
        single_output: bool = False,
    ) -> None:
        super().__init__()
        providers = opts.providers_for(device, ort.get_available_providers())
        self.session = ort.InferenceSession(
            model,
            sess_options=session_options(opts),
            providers=providers,
            provider_options=list(opts.provider_options) if opts.provider_options else None,
        )
        self.providers = self.session.get_providers()
        self.device = device
        self._single = single_output
        self._ort_device = _device_of(device)
        names = [i.name for i in self.session.get_inputs()]
        # onnxruntime may drop inputs the graph does not read; bind only the ones it kept.
        self._inputs = [
            (pos, name, int(onnx_dtype(meta.dtype)), tuple(meta.shape))
            for pos, (name, meta) in enumerate(zip(input_names, input_metas))
            if name in names
        ]
        self._outputs = [
            (o.name, int(onnx_dtype(meta.dtype)), tuple(meta.shape), meta.dtype)
            for o, meta in zip(self.session.get_outputs(), output_metas)
        ]
        _check_outputs(self.session.get_outputs(), output_metas)

    def forward(self, *args: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        kind, index = self._ort_device
        binding = self.session.io_binding()
        keep_alive = []
        for pos, name, elem_type, shape in self._inputs:
            t = args[pos]
            if not t.is_contiguous():
                t = t.contiguous()
                keep_alive.append(t)
            binding.bind_input(name, kind, index, elem_type, shape, _address(t, keep_alive))
        outputs = []
        for name, elem_type, shape, dtype in self._outputs:
            out = torch.empty(shape, dtype=dtype, device=self.device)
            binding.bind_output(name, kind, index, elem_type, shape, _address(out, keep_alive))
            outputs.append(out)
        if kind == "cuda":
            torch.cuda.current_stream(self.device).synchronize()  # inputs written by torch
        self.session.run_with_iobinding(binding)
        del keep_alive
        return outputs[0] if self._single else tuple(outputs)


def _address(t: torch.Tensor, keep_alive: list) -> int:
    """``t``'s data pointer; an empty tensor has none (0), which onnxruntime refuses to bind, so it
    gets the address of a one-element scratch tensor that nothing reads or writes."""
    if t.numel():
        return t.data_ptr()
    scratch = torch.empty(1, dtype=t.dtype, device=t.device)
    keep_alive.append(scratch)
    return scratch.data_ptr()


def _check_outputs(outputs: Sequence[Any], metas: Sequence[torch.Tensor]) -> None:
    """Refuse a model whose outputs differ in count, dtype or shape from what PyTorch computes."""
    if len(outputs) != len(metas):
        raise ValueError(f"model has {len(outputs)} outputs, the graph {len(metas)}")
    for out, meta in zip(outputs, metas):
        want = f"tensor({onnx_dtype(meta.dtype).name.lower()})"
        if out.type != want or list(out.shape) != list(meta.shape):
            raise ValueError(
                f"output {out.name} is {out.type}{out.shape}, PyTorch gives {want}{list(meta.shape)}"
            )
