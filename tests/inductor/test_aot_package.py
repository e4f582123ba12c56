"""``ember.aot_compile`` / ``ember.aot_load``: a model packaged into a folder runs in a fresh process
with an empty cache folder, with eager's results, and that process captures, traces, generates
and compiles nothing (each of those is made to fail there, and the C++ build count stays 0).
Packages of other versions are refused, and so are inputs of other shapes, dtypes or devices."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import ember

LOAD = textwrap.dedent("""
    import os, sys, time, torch
    start = time.perf_counter()
    import ember, ember.capture
    import ember_inductor.cache, ember_inductor.graph, ember_inductor.codegen.wrapper
    from torch.fx.experimental import proxy_tensor
    def refuse(*args, **kwargs):
        raise AssertionError("the loading process captured, traced or generated code")
    ember.capture._capture_with_state = refuse
    proxy_tensor.make_fx = refuse
    torch.fx.Tracer.trace = refuse
    ember_inductor.graph.GraphLowering.run = refuse
    ember_inductor.codegen.wrapper.WrapperCodegen.generate = refuse
    ember_inductor.cache._build = refuse
    if '"language": "triton"' in open(os.path.join(sys.argv[1], "manifest.json")).read():
        import triton, triton.runtime.build
        triton.compile = triton.runtime.build._build = refuse  # kernels and their C launchers
    imported = time.perf_counter()
    package = ember.aot_load(sys.argv[1])
    args, expected = torch.load(sys.argv[2], weights_only=False)  # the test's own file
    out = package(*args)
    done = time.perf_counter()
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    assert type(out) is type(expected)
    assert ember_inductor.cache.compile_count == 0
    root = os.environ["EMBER_CACHE_DIR"]
    assert not os.path.exists(os.path.join(root, "cpp")), os.listdir(root)
    print(f"loaded-ok {imported - start:.3f} {done - imported:.3f}")
""")


def load_in_fresh_process(path: str, args: tuple, expected: object, tmp_path) -> tuple[float, float]:
    """Run the package at ``path`` on ``args`` in a new interpreter with an empty cache folder;
    returns (seconds importing torch and ember, seconds loading the package and calling it once)."""
    data = str(tmp_path / "call.pt")
    torch.save((args, expected), data)
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "fresh-cache"))
    proc = subprocess.run([sys.executable, "-c", LOAD, path, data], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    _, imports, load_and_call = proc.stdout.split()[-3:]
    return float(imports), float(load_and_call)


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
                               torch.nn.Linear(32, 4), torch.nn.Tanh()).eval()


class ConvNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.conv1(x)))
        x = torch.nn.functional.silu(self.conv2(x))
        return self.head(x.mean((2, 3))).softmax(-1)


def _roundtrip(model: torch.nn.Module, args: tuple, tmp_path) -> None:
    path = ember.aot_compile(model, args, str(tmp_path / "package"))
    with torch.no_grad():
        expected = model(*args)
    load_in_fresh_process(path, args, expected, tmp_path)


def test_an_mlp_package_runs_in_a_fresh_process(tmp_path) -> None:
    torch.manual_seed(0)
    _roundtrip(mlp(), (torch.randn(8, 16),), tmp_path)
    files = set(os.listdir(tmp_path / "package"))
    assert {"manifest.json", "weights.pt", "wrapper.py", "graph.pkl", "kernels"} <= files
    assert any(n.endswith(".so") for n in os.listdir(tmp_path / "package" / "kernels" / "cpp"))


def test_a_conv_net_package_runs_in_a_fresh_process(tmp_path) -> None:
    torch.manual_seed(0)
    model = ConvNet().eval()
    model.bn.running_mean.uniform_(-1, 1)  # eval-mode batch norm with stats of its own
    _roundtrip(model, (torch.randn(2, 3, 16, 16),), tmp_path)


def tiny_bert() -> torch.nn.Module:
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=64)
    return transformers.BertModel(config).eval()


def test_a_transformers_bert_package_runs_in_a_fresh_process(tmp_path) -> None:
    torch.manual_seed(0)
    model = tiny_bert()
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    _roundtrip(model, (ids, mask), tmp_path)  # the result is BERT's own output class
    manifest = json.loads((tmp_path / "package" / "manifest.json").read_text())
    assert [i["name"] for i in manifest["inputs"]] == ["input_ids", "attention_mask"]


def test_a_package_of_other_versions_is_refused(tmp_path) -> None:
    path = ember.aot_compile(mlp(), (torch.randn(4, 16),), str(tmp_path / "package"))
    manifest_path = os.path.join(path, "manifest.json")
    manifest = json.loads(open(manifest_path).read())
    for key, other in (("torch", "1.0.0"), ("ember", "0.0.1"), ("python", "2.7"), ("device_name", "another CPU")):
        tampered = {**manifest, "versions": {**manifest["versions"], key: other}}
        with open(manifest_path, "w") as f:
            json.dump(tampered, f)
        expected = f"{key} '{other}' (this process has '{manifest['versions'][key]}')"
        with pytest.raises(ember.PackageMismatch, match=re.escape(expected)):
            ember.aot_load(path)


def test_calls_are_checked_against_the_manifest(tmp_path) -> None:
    torch.manual_seed(0)
    model = mlp()
    path = ember.aot_compile(model, (torch.randn(8, 16),), str(tmp_path / "package"))
    package = ember.aot_load(path)
    with pytest.raises(ember.PackageMismatch, match=r"'input' .* shape \[8, 16\], not \[4, 16\]"):
        package(torch.randn(4, 16))
    with pytest.raises(ember.PackageMismatch, match="dtype float32, not float64"):
        package(torch.randn(8, 16, dtype=torch.float64))
    with pytest.raises(ember.PackageMismatch, match="device cpu, not meta"):
        package(torch.empty(8, 16, device="meta"))
    with pytest.raises(TypeError, match=r"takes the tensor arguments \(input\)"):
        package(torch.randn(8, 16), torch.randn(8, 16))
    x = torch.randn(16, 8).t()  # other strides: copied to the packaged ones
    with torch.no_grad():
        torch.testing.assert_close(package(x), model(x))
        torch.testing.assert_close(package(input=x), model(x))
    assert not package(x).requires_grad  # packages run under no_grad


@pytest.mark.gpu
def test_a_cuda_package_runs_triton_binaries_in_a_fresh_process(tmp_path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    torch.manual_seed(0)
    model = ConvNet().eval().cuda()
    x = torch.randn(2, 3, 16, 16, device="cuda")
    path = ember.aot_compile(model, (x,), str(tmp_path / "package"))
    manifest = json.loads(open(os.path.join(path, "manifest.json")).read())
    assert manifest["backend_info"]["language"] == "triton" and "triton" in manifest["versions"]
    with torch.no_grad():
        expected = model(x)
    load_in_fresh_process(path, (x,), expected, tmp_path)
