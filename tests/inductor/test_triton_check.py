"""The launch-configuration net (``EMBER_TRITON_CHECK_CONFIGS``): configurations whose results differ
beyond rounding are reported, rounding and configurations that cannot run are not."""
import pytest
import torch

from ember_inductor.codegen import triton_check


def _copy_into(x: torch.Tensor, y: torch.Tensor) -> None:
    y.copy_(x)


def test_copies_keep_the_storage_layout():
    view = torch.randn(4, 6)[:, 1:3]
    copy = triton_check._copy(view)
    assert torch.equal(copy, view) and copy.stride() == view.stride() and copy.storage_offset() == 1
    assert copy.untyped_storage().data_ptr() != view.untyped_storage().data_ptr()


def test_a_configuration_computing_otherwise_is_named(tmp_path, monkeypatch):
    log = tmp_path / "configs.log"
    monkeypatch.setenv("EMBER_TRITON_CHECK_CONFIGS", str(log))
    args = [torch.ones(3), torch.zeros(3)]
    launches = {0: _copy_into, 1: lambda x, y: y.copy_(x * 2)}
    with pytest.raises(RuntimeError, match="configuration c1 and c0 differ in argument 1"):
        triton_check.check("k", launches, args, lambda i: f"c{i}")
    assert "differ in argument 1" in log.read_text()
    assert torch.equal(args[1], torch.zeros(3))  # the check ran on copies


def test_rounding_and_failing_configurations_pass():
    def broken(x: torch.Tensor, y: torch.Tensor) -> None:
        raise RuntimeError("out of shared memory")

    args = [torch.randn(1000), torch.zeros(1000)]
    launches = {0: lambda x, y: y.copy_(x.cumsum(0)), 1: lambda x, y: y.copy_(x.double().cumsum(0)), 2: broken}
    triton_check.check("k", launches, args, str)
    triton_check.check("k", {0: _copy_into, 1: lambda x, y: y.copy_(x.to(torch.bfloat16))},
                       [torch.randn(64, dtype=torch.bfloat16), torch.zeros(64, dtype=torch.bfloat16)], str)
