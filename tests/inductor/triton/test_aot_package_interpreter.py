"""An ``ember.aot_compile`` package of Triton kernels, run by Triton's interpreter on CPU: the kernels'
sources travel in the package and a fresh process with an empty cache folder imports them from
there (the GPU variant, with binaries and launchers, is ``test_aot_package``'s ``gpu`` test)."""
from __future__ import annotations

import json
import os

import pytest
import torch
from test_aot_package import load_in_fresh_process, mlp

import ember


def test_a_triton_package_runs_in_a_fresh_process_in_the_interpreter(tmp_path, triton_kernels) -> None:
    if torch.cuda.is_available():
        pytest.skip("the interpreter runs without CUDA")
    torch.manual_seed(0)
    model, x = mlp(), torch.randn(8, 16)
    path = ember.aot_compile(model, (x,), str(tmp_path / "package"))
    info = json.loads(open(os.path.join(path, "manifest.json")).read())["backend_info"]
    assert info["language"] == "triton" and any(name.startswith("triton/") for name in info["files"])
    with torch.no_grad():
        expected = model(x)
    load_in_fresh_process(path, (x,), expected, tmp_path)
