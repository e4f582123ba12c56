"""``ember.aot_compile`` / ``ember.aot_load``: a model compiled ahead of time into a folder, run by another process.

What AOTInductor gives torch users. ``aot_compile`` captures one call (``aot_capture``), hands
the graph to the backend's packager (``BackendSpec.packager``; the inductor's writes its built
kernels, C++ shared objects or Triton binaries, and its generated wrapper) and writes beside it:

    manifest.json   versions (ember, torch, Python, machine, and the backend's: triton, device),
                    the call's tensor arguments (name, shape, dtype, device, stride), the graph's
                    inputs (arguments and weights, in order), the result's structure
    weights.pt      the parameters, buffers and other tensors the graph reads (``torch.save``, from
                    the CPU; the manifest names each one's device)

``aot_load`` (in any process) checks the versions, loads the weights and the packager's part and
returns an :class:`AOTPackage`: nothing is captured, traced, generated or compiled. Packages are
for inference: they run under no_grad. Each call's tensors are checked against the manifest.
"""
from __future__ import annotations

import importlib
import json
import os
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

from .aot_capture import capture_call
from .backends import REGISTRY
from .cache_artifacts import versions
from .errors import BackendUnavailable, PackageMismatch
from .plugin import Packager

FORMAT = 1
MANIFEST = "manifest.json"
WEIGHTS = "weights.pt"


def aot_compile(model_or_fn: Callable[..., Any], example_args: tuple, path: str, *, backend: str = "inductor",
                options: dict[str, Any] | None = None, example_kwargs: dict[str, Any] | None = None) -> str:
    """Compile ``model_or_fn(*example_args, **example_kwargs)`` (tensors only; one graph, run under
    no_grad) into the folder ``path`` for :func:`aot_load`; returns ``path``. The package runs
    tensors of the example's shapes, dtypes and devices only."""
    packager = _packager(backend)
    kwargs = dict(example_kwargs or {})
    captured = capture_call(model_or_fn, tuple(example_args), kwargs)
    os.makedirs(path, exist_ok=True)
    info = packager.save(captured.gm, captured.example_inputs, path, dict(options or {}))
    torch.save({name: t.cpu() for name, t in captured.weights.items()}, os.path.join(path, WEIGHTS))
    tensors = dict(zip(captured.arg_names, [*example_args, *kwargs.values()]))
    manifest = {
        "format": FORMAT, "backend": backend, "versions": {**versions(), **packager.versions(info)},
        "inputs": [_spec(n, tensors[n]) for n in captured.arg_names],
        "graph_inputs": captured.inputs, "weights": {name: str(t.device) for name, t in captured.weights.items()},
        "outputs": {"spec": pytree.treespec_dumps(captured.out_spec), "leaves": captured.out_leaves},
        "backend_info": info,
    }
    with open(os.path.join(path, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    return path


def aot_load(path: str) -> AOTPackage:
    """The package at ``path`` as a callable (see the module docstring); ``PackageMismatch`` when it
    was built for other versions of ember, torch, Python, Triton, or another machine or device."""
    with open(os.path.join(path, MANIFEST)) as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT:
        raise PackageMismatch(f"{path} is not an ember package of format {FORMAT}")
    packager = _packager(manifest["backend"])
    here = {**versions(), **packager.versions(manifest["backend_info"])}
    made = manifest["versions"]
    differ = [f"{k} {made.get(k)!r} (this process has {here.get(k)!r})" for k in sorted({*made, *here})
              if made.get(k) != here.get(k)]
    if differ:
        raise PackageMismatch(f"the ember package {path} was built for other versions or another machine: "
                              f"{'; '.join(differ)}")
    weights = torch.load(os.path.join(path, WEIGHTS), weights_only=True, mmap=True)  # saved on the CPU
    weights = {name: t.to(manifest["weights"][name]) for name, t in weights.items()}
    run = packager.load(path, manifest["backend_info"])
    return AOTPackage(run, manifest, weights)


def _packager(backend: str) -> Packager:
    entry = REGISTRY.entries().get(backend)
    packager = entry.spec.load_packager() if entry is not None else None
    if packager is None:
        raise BackendUnavailable(f"backend {backend!r} cannot make ahead-of-time packages")
    return packager


def _spec(name: str, t: torch.Tensor) -> dict[str, Any]:
    return {"name": name, "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
            "device": str(t.device), "stride": list(t.stride())}


def _import_output_types(node: dict[str, Any]) -> None:
    """Import the modules of the classes named in a node of a dumped tree spec (where they
    register with pytree: a transformers ``ModelOutput``)."""
    module = (node.get("type") or "").rpartition(".")[0]
    if module:
        importlib.import_module(module)
    for child in node.get("children_spec", ()):
        _import_output_types(child)


class AOTPackage:
    """A loaded package: ``package(*args, **kwargs)`` with the example call's tensor arguments."""

    def __init__(self, run: Callable[..., tuple], manifest: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
        self.manifest = manifest
        self._run = run
        self._inputs = manifest["inputs"]
        self._weights = weights
        self._graph_inputs = manifest["graph_inputs"]
        outputs = manifest["outputs"]
        _import_output_types(json.loads(outputs["spec"])[1])  # [protocol, root node]
        self._spec = pytree.treespec_loads(outputs["spec"])
        self._leaves = outputs["leaves"]

    def __call__(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        tensors = self._bind(args, kwargs)
        inputs = [tensors[name] if kind == "arg" else self._weights[name] for kind, name in self._graph_inputs]
        with torch.no_grad():
            outs = self._run(*inputs)
        leaves = [outs[leaf["output"]] if "output" in leaf else leaf["constant"] for leaf in self._leaves]
        return pytree.tree_unflatten(leaves, self._spec)

    def _bind(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, torch.Tensor]:
        names = [spec["name"] for spec in self._inputs]
        if len(args) > len(names) or set(kwargs) - set(names[len(args):]) or len(args) + len(kwargs) != len(names):
            raise TypeError(f"this ember package takes the tensor arguments ({', '.join(names)}); got "
                            f"{len(args)} positional and {sorted(kwargs)} keyword argument(s)")
        given = [*args, *(kwargs[n] for n in names[len(args):])]
        return {spec["name"]: _checked(value, spec) for value, spec in zip(given, self._inputs)}


def _checked(value: Any, spec: dict[str, Any]) -> torch.Tensor:
    """``value`` when it matches ``spec``, a copy with the packaged strides when only they differ;
    ``PackageMismatch`` naming the argument otherwise."""
    if not isinstance(value, torch.Tensor):
        raise PackageMismatch(f"argument {spec['name']!r} of this ember package is a tensor, not "
                              f"{type(value).__name__}")
    got = _spec(spec["name"], value)
    for key in ("shape", "dtype", "device"):
        if got[key] != spec[key]:
            raise PackageMismatch(f"argument {spec['name']!r} of this ember package has {key} {spec[key]}, "
                                  f"not {got[key]} (packages run the example's shapes, dtypes and devices)")
    if got["stride"] != spec["stride"]:
        value = torch.empty_strided(spec["shape"], spec["stride"], dtype=value.dtype, device=value.device).copy_(value)
    return value


__all__ = ["AOTPackage", "aot_compile", "aot_load"]
