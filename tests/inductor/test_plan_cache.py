"""inductor's compiled plans on disk: a second process compiling the same model traces, lowers and
builds nothing, and gets eager's results; a compiled graph survives the trip through its
artifact, including the aten graph kept for the layout fallback."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest
import torch
from ember_aot.plan_cache import dumps
from ember_inductor.codegen.wrapper import LayoutMismatch
from ember_inductor.compile_fx import load_compiled_graph

from helpers import assert_same, compile_fn

SCRIPT = """
import copy, torch, ember
import ember_aot.api as api
from ember_inductor import cache

traced, configs = [], []
compile_plan = api.compile_plan
api.compile_plan = lambda *a: traced.append(1) or compile_plan(*a)
if {device!r} == "cuda":
    from ember_inductor.codegen import triton_runtime
    compile_config = triton_runtime.compile_config
    triton_runtime.compile_config = lambda *a: configs.append(1) or compile_config(*a)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 5)).to({device!r})
reference = copy.deepcopy(model)
x = torch.randn(4, 3, 6, 6, device={device!r})

def step(m, x):
    loss = m(x).softmax(-1).square().sum()
    loss.backward()
    return loss

compiled = ember.compile(model)
for a, b in zip((step(compiled, x), *[p.grad for p in model.parameters()]),
                (step(reference, x), *[p.grad for p in reference.parameters()])):
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
with torch.no_grad():
    torch.testing.assert_close(compiled(x + 1), reference(x + 1), rtol=1e-4, atol=1e-5)
print("TRACED", len(traced), "BUILT", cache.compile_count, "TRITON", len(configs))
"""


def _run(cache_dir: str, device: str = "cpu") -> tuple[int, int, int]:
    """Plans traced, C++ libraries built and Triton configurations compiled by a new process."""
    env = dict(os.environ, EMBER_CACHE_DIR=cache_dir)
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(device=device)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    words = proc.stdout.split()
    return tuple(int(words[words.index(w) + 1]) for w in ("TRACED", "BUILT", "TRITON"))  # type: ignore[return-value]


def test_second_process_loads_compiled_plans(tmp_path) -> None:
    d = str(tmp_path / "cache")
    assert _run(d) == (2, 3, 0)  # training plan (forward and backward sources), inference plan
    assert _run(d) == (0, 0, 0)


@pytest.mark.gpu
def test_second_process_loads_compiled_plans_on_cuda(tmp_path) -> None:
    d = str(tmp_path / "cache")
    traced, _, configs = _run(d, "cuda")
    assert traced == 2 and configs > 0
    assert _run(d, "cuda") == (0, 0, 0)  # binaries read by hash; results match eager (in the script)


def test_compiled_graph_round_trip() -> None:
    def fn(x, w):
        return torch.softmax(torch.sin(x) @ w, -1) * 2, (x + 1).t()

    x, w = torch.randn(6, 7), torch.randn(7, 3)
    compiled = compile_fn(fn, x, w).compiled
    loaded = load_compiled_graph(pickle.loads(dumps(compiled.artifact())))
    assert loaded.kernel_count == compiled.kernel_count and loaded.source == compiled.source
    assert_same(loaded(x, w), fn(x, w))
    assert_same(loaded(x, w), fn(x, w))  # the checked first call, then the fast one
    assert_same(tuple(loaded.gm(x, w)), fn(x, w))  # the aten graph, unpickled on demand


def test_loaded_graph_falls_back_on_a_layout_mismatch(monkeypatch) -> None:
    def fn(x):
        return torch.cos(x) + 1

    x = torch.randn(5, 3)
    artifact = pickle.loads(dumps(compile_fn(fn, x).compiled.artifact()))
    loaded = load_compiled_graph(artifact)

    def mismatch(*args):
        raise LayoutMismatch("simulated")
    monkeypatch.setattr(loaded, "_call", mismatch)
    assert_same(loaded(x), (fn(x),))
