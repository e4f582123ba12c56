"""The inductor's packager for ``ember.aot_compile`` / ``ember.aot_load`` (``ember.plugin.Packager``).

``save`` traces the torch-level graph to aten for inference, compiles it (kernels built, errors
raised: ``options={"strict": False}`` packages a graph whose kernels fail as its aten graph)
and writes into the package folder:

    wrapper.py        the generated wrapper that calls the kernels and the aten ops
    kernels/source.*  the generated kernels' source (``.cpp`` or ``.py``), for reading
    kernels/cpp/      the C++ shared object and its SHA-256 file (CPUs)
    kernels/triton/, kernels/triton_bin/   the Triton kernels' sources and autotuning choices,
                      their compiled binaries and C launchers (CUDA)
    graph.pkl         the rest of the compiled graph's description (``CompiledGraph.artifact``),
                      with the aten graph that runs it should a kernel refuse a layout

``load`` opens those files and nothing else: no cache folder, no code generation, no compiler.
C++ kernels are built for this machine's CPU (``-march=native``) and Triton binaries for its GPU,
so a package records the device's name and is refused on another.
"""
from __future__ import annotations

import os
import pathlib
import pickle
import platform
from typing import Any, Callable, Sequence

import torch
import torch.fx

_OPTIONS = ("strict",)


class InductorPackager:
    def save(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], folder: str, options: dict) -> dict:
        from .compile_fx import compile_aten_graph
        from .graph import graph_device
        from .trace import trace_inference
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise ValueError(f"unknown option(s) {unknown} for inductor packages; its options are {_OPTIONS}")
        with torch.no_grad():
            aten_gm, _ = trace_inference(gm, example_inputs)
            compiled = compile_aten_graph(aten_gm, example_inputs, strict=options.get("strict", True))
            compiled(*example_inputs)  # Triton kernels autotune now: their choice is packaged
        device = graph_device(aten_gm)
        artifact = compiled.artifact()
        kernels = compiled.built_kernels
        if artifact is None or kernels is None:  # nothing was fused: the aten graph runs as it is
            _write(folder, "graph.pkl", pickle.dumps(compiled.gm))
            return {"device": str(device), "language": ""}
        _write(folder, "wrapper.py", artifact.pop("wrapper").encode())
        extension = "cpp" if kernels.backend == "cpp" else "py"
        _write(folder, f"kernels/source.{extension}", kernels.source.encode())
        for name, path in kernels.files().items():
            _write(folder, f"kernels/{name}", pathlib.Path(path).read_bytes())
        from ember_aot.plan_cache import dumps  # operators by name, as plans are stored
        _write(folder, "graph.pkl", dumps(artifact))
        return {"device": str(device), "language": kernels.backend, "files": sorted(kernels.files())}

    def versions(self, info: dict) -> dict:
        found = {"device_name": _device_name(torch.device(info["device"]))}
        if info["language"] == "triton":
            import triton
            found["triton"] = triton.__version__
        return found

    def load(self, folder: str, info: dict) -> Callable[..., tuple]:
        from .compile_fx import load_compiled_graph, run_gm
        with open(os.path.join(folder, "graph.pkl"), "rb") as f:
            artifact = pickle.load(f)
        if not info["language"]:
            return run_gm(artifact)
        with open(os.path.join(folder, "wrapper.py")) as f:
            artifact["wrapper"] = f.read()
        kernels_dir = os.path.join(folder, "kernels")
        if info["language"] == "cpp":
            from .codegen.cpp_backend import CppBackend
            library = next(name for name in info["files"] if name.endswith(".so"))
            kernels = CppBackend().load(artifact["kernels"], os.path.join(kernels_dir, library))
        else:
            from .codegen.triton_backend import TritonBackend
            from .codegen.triton_runtime import reading_from
            with reading_from(kernels_dir):
                kernels = TritonBackend().load(artifact["kernels"])
        return load_compiled_graph(artifact, kernels)


def _write(folder: str, name: str, data: bytes) -> None:
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def _device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU's model name (what ``-march=native`` built for)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device) if torch.cuda.is_available() else "no CUDA device"
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


PACKAGER = InductorPackager()

__all__ = ["InductorPackager", "PACKAGER"]
