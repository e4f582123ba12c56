"""The backend registry: discovery through entry points, user registration, errors, the CLI."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import ember
from ember.backends import REGISTRY
from ember.plugin import BackendSpec

REPO = Path(__file__).resolve().parents[2]


def run_python(code: str, extra_path: str | None = None) -> str:
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [extra_path, env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_list_backends_defaults_exclude_debug():
    names = ember.list_backends()
    assert "inductor" in names
    assert "eager" not in names and "aot_eager" not in names
    everything = ember.list_backends(exclude_tags=())
    assert {"eager", "aot_eager", "inductor"} <= set(everything)


def test_unknown_backend_names_the_available_ones():
    with pytest.raises(ember.BackendUnavailable, match="unknown backend 'nope'.*eager"):
        ember.compile(lambda x: x, backend="nope")


def test_backend_with_missing_module_says_what_to_install():
    REGISTRY.register(BackendSpec(name="needs_missing", compiler="x:y", requires=("no_such_module_xyz",),
                                  install="ember-missing-extra"))
    assert "needs_missing" not in ember.list_backends(exclude_tags=())
    with pytest.raises(ember.BackendUnavailable, match="pip install ember-missing-extra"):
        ember.compile(lambda x: x, backend="needs_missing")


def test_register_backend_decorator_with_name_and_tags():
    seen = []

    @ember.register_backend(name="my_recorder", tags=("debug",))
    def recorder(gm, example_inputs):
        seen.append(gm)
        return gm.forward

    assert "my_recorder" in ember.list_backends(exclude_tags=())
    assert "my_recorder" not in ember.list_backends()
    f = ember.compile(lambda x: x.sin() * 2, backend="my_recorder")
    x = torch.randn(3)
    torch.testing.assert_close(f(x), x.sin() * 2)
    assert len(seen) == 1


def test_register_backend_plain_call_uses_function_name():
    def plain_backend(gm, example_inputs):
        return gm.forward

    ember.register_backend(plain_backend)
    assert "plain_backend" in ember.list_backends()


def test_custom_backend_prints_tabular(capsys):
    def custom_backend(gm: torch.fx.GraphModule, example_inputs):
        print("custom backend called with FX graph:")
        gm.graph.print_tabular()
        return gm.forward

    f = ember.compile(lambda a, b: torch.sin(a) + torch.cos(b), backend=custom_backend)
    a, b = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(f(a, b), torch.sin(a) + torch.cos(b))
    out = capsys.readouterr().out
    assert "custom backend called with FX graph:" in out
    assert "placeholder" in out and "call_function" in out and "output" in out


def test_mode_and_options_validation():
    with pytest.raises(ValueError, match="unknown mode"):
        ember.compile(lambda x: x, backend="eager", mode="warp-speed")
    with pytest.raises(ValueError, match="takes neither mode nor options"):
        ember.compile(lambda x: x, backend="eager", mode="reduce-overhead")


def test_backend_failure_falls_back_with_warning():
    def broken(gm, example_inputs):
        raise RuntimeError("kaboom")

    f = ember.compile(lambda x: x + 1, backend=broken)
    with pytest.warns(UserWarning, match="backend 'broken' failed.*kaboom"):
        out = f(torch.ones(2))
    torch.testing.assert_close(out, torch.full((2,), 2.0))


def test_backend_failure_raises_when_not_suppressed(monkeypatch):
    monkeypatch.setattr(ember.config, "suppress_errors", False)

    def broken(gm, example_inputs):
        raise RuntimeError("kaboom")

    f = ember.compile(lambda x: x + 1, backend=broken)
    with pytest.raises(ember.BackendCompilerFailed, match="kaboom"):
        f(torch.ones(2))


def test_cli_prints_backend_table():
    out = subprocess.run([sys.executable, "-m", "ember", "backends"], capture_output=True, text=True,
                         check=True).stdout
    assert "backend" in out and "plugin" in out and "distribution" in out
    eager_row = next(line for line in out.splitlines() if line.startswith("eager "))
    assert "ember 0.1.0" in eager_row and "available" in eager_row


def test_import_is_cheap_and_discovery_is_lazy():
    out = run_python(
        """
        import sys, time
        import torch
        t0 = time.perf_counter(); import ember; t1 = time.perf_counter()
        heavy = ("torch._dynamo", "torch._inductor", "onnxruntime", "tvm", "triton", "ember_")
        loaded = sorted(m for m in sys.modules if m.startswith(heavy))
        assert not loaded, loaded
        t2 = time.perf_counter(); ember.list_backends(); t3 = time.perf_counter()
        assert not any(m.startswith(("onnxruntime", "tvm", "triton", "torch._inductor")) for m in sys.modules)
        print(f"import={t1 - t0:.4f} first_list_backends={t3 - t2:.4f}")
        """
    )
    assert out.startswith("import=")


def test_torch_dynamo_backends_entry_point_is_usable(tmp_path):
    site = tmp_path / "site"
    (site / "mydynbackend").mkdir(parents=True)
    (site / "mydynbackend" / "__init__.py").write_text(
        "CALLS = []\n"
        "def my_dyn(gm, example_inputs):\n"
        "    CALLS.append(len(example_inputs))\n"
        "    return gm.forward\n"
    )
    dist = site / "mydynbackend-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mydynbackend\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[torch_dynamo_backends]\nmy_dyn = mydynbackend:my_dyn\n")
    out = run_python(
        """
        import torch, ember, mydynbackend
        assert "my_dyn" in ember.list_backends(), ember.list_backends()
        f = ember.compile(lambda x: x.cos() + 1, backend="my_dyn")
        x = torch.randn(5)
        torch.testing.assert_close(f(x), x.cos() + 1)
        print("calls", mydynbackend.CALLS)
        """,
        extra_path=str(site),
    )
    assert "calls [1]" in out


@pytest.mark.slow
def test_third_party_plugin_installs_with_pip(tmp_path):
    target = tmp_path / "target"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(REPO / "examples" / "third_party_backend")],
        check=True, capture_output=True, timeout=300,
    )
    out = run_python(
        """
        import torch, ember, ember_example_backend
        assert "example_counter" in ember.list_backends(), ember.list_backends()
        f = ember.compile(lambda x: torch.relu(x) * 3, backend="example_counter")
        x = torch.randn(6)
        torch.testing.assert_close(f(x), torch.relu(x) * 3)
        torch.testing.assert_close(f(x), torch.relu(x) * 3)
        print("graphs", len(ember_example_backend.GRAPHS))
        from ember.backends import backend_table
        row = next(r for r in backend_table() if r["backend"] == "example_counter")
        print(row["distribution"])
        """,
        extra_path=str(target),
    )
    assert "graphs 1" in out
    assert "ember-example-backend 0.1.0" in out
