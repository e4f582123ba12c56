"""The ``options=`` dict of backend "onnxrt", parsed and checked once per compile.

Keys (all optional):

``providers``               execution providers, e.g. ``["CUDAExecutionProvider", "CPUExecutionProvider"]``;
                            default: CUDA (then CPU) when the inputs are on a GPU and the installed
                            onnxruntime has CUDA, else CPU. TensorRT is used only when listed here.
``provider_options``        one dict per provider (passed to ``InferenceSession``).
``session_options``         a ``onnxruntime.SessionOptions``, or a dict of its attributes
                            (``{"intra_op_num_threads": 2}``).
``graph_optimization_level`` "disable", "basic", "extended" or "all" (default: "all", or the level
                            of a given ``SessionOptions`` object).
``opset``                   ONNX opset of the converted models (default 18).
``optimize``                run onnxscript's optimizer (constant folding, inlining) first (default True).
``cache``                   keep converted models on disk, keyed by a hash of the graph (default True);
                            directory ``$EMBER_CACHE_DIR/onnxrt`` or ``~/.cache/ember/onnxrt``.
``on_grad``                 what to do when called with grad mode on and an input that requires grad:
                            "eager" (default) runs the graph in PyTorch eager, with one warning, so
                            autograd works; "raise" raises :class:`ember.EmberError`.
``fallback``                True (default): operators the converter cannot handle run in PyTorch
                            eager; False: raise instead (to find out what is missing).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import torch

_LEVELS = ("disable", "basic", "extended", "all")


@dataclasses.dataclass(frozen=True)
class OnnxrtOptions:
    providers: tuple[str, ...] | None = None
    provider_options: tuple[dict[str, Any], ...] | None = None
    session_options: Any = None
    graph_optimization_level: str | None = None
    opset: int = 18
    optimize: bool = True
    cache: bool = True
    on_grad: str = "eager"
    fallback: bool = True

    @classmethod
    def from_dict(cls, options: Mapping[str, Any] | None) -> "OnnxrtOptions":
        """Parse ``options``; unknown keys and bad values raise ``ValueError``."""
        options = dict(options or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown onnxrt option(s) {unknown}; known: {sorted(known)}")
        for key in ("providers", "provider_options"):
            if options.get(key) is not None:
                options[key] = tuple(options[key])
        parsed = cls(**options)
        if parsed.graph_optimization_level not in (None, *_LEVELS):
            raise ValueError(f"graph_optimization_level must be one of {_LEVELS}")
        if parsed.on_grad not in ("eager", "raise"):
            raise ValueError('on_grad must be "eager" or "raise"')
        if parsed.provider_options is not None and (
            parsed.providers is None or len(parsed.provider_options) != len(parsed.providers)
        ):
            raise ValueError("provider_options needs one dict per entry of providers")
        return parsed

    def providers_for(self, device: torch.device, available: list[str]) -> list[str]:
        """The execution providers for inputs on ``device``, given the installed ones."""
        if self.providers is not None:
            missing = [p for p in self.providers if p not in available]
            if missing:
                raise ValueError(f"onnxruntime has no provider(s) {missing}; available: {available}")
            return list(self.providers)
        if device.type == "cuda" and "CUDAExecutionProvider" in available:
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]
        return ["CPUExecutionProvider"]


#: the keys ``options=`` may hold (declared in the plugin's BackendSpec: ember.compile checks them)
NAMES = tuple(f.name for f in dataclasses.fields(OnnxrtOptions))
