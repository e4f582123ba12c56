"""Every op of torch's OpInfo database through ember's inductor and aot_eager backends, against
eager: outputs and gradients, per dtype, on CPU (and CUDA under the ``gpu`` marker).

Known failures and skips come from ``expected_failures.py``; which cases run from
``opinfo_cases.py`` (CI's seeded share, or everything with ``EMBER_OPINFO=all``).
"""
from __future__ import annotations

import pytest

import expected_failures
from opinfo_cases import DEVICES, DTYPES, Case, cases, sample_limit
from opinfo_harness import check_sample, samples
from torch.testing._internal.common_methods_invocations import op_db

OPS = {(op.name, op.variant_test_name): op for op in op_db}


def _param(case: Case) -> object:
    marks = [pytest.mark.gpu] if case.device == "cuda" else []
    reason = expected_failures.lookup(case.op_name, case.variant, case.dtype, case.phase, case.backend)
    if reason is not None and reason.startswith(expected_failures.SKIP):
        marks.append(pytest.mark.skip(reason=reason))
    elif reason is not None and not reason.startswith((expected_failures.SHAPES, expected_failures.BREAKS)):
        marks.append(pytest.mark.xfail(reason=reason, strict=True))
    return pytest.param(case, marks=marks, id=case.id)


PARAMS = [_param(c) for device in DEVICES for c in cases(op_db, device)]


@pytest.mark.parametrize("case", PARAMS)
def test_op(case: Case) -> None:
    op = OPS[(case.op_name, case.variant)]
    reason = expected_failures.lookup(case.op_name, case.variant, case.dtype, case.phase, case.backend) or ""
    found = samples(op, case.device, DTYPES[case.dtype], case.phase, sample_limit())
    if not found:
        pytest.skip("the OpInfo has no sample for this dtype")
    tol = expected_failures.tolerance(case.op_name, case.variant, case.dtype, case.phase)
    unset = expected_failures.unset_outputs(case.op_name, case.variant)
    for sample in found:
        check_sample(op, sample, case.backend, case.phase, DTYPES[case.dtype],
                     shapes_only=reason.startswith(expected_failures.SHAPES),
                     needs_graph=not reason.startswith(expected_failures.BREAKS), tolerance=tol,
                     unset_outputs=unset)


def test_table_names_real_ops() -> None:
    """Every entry of the expected-failure table names an op of the database and a known field."""
    for name, variant, dtype, phase, backend in expected_failures.EXPECTED:
        assert (name, variant) in OPS, (name, variant)
        assert dtype == "*" or dtype in DTYPES, dtype
        assert phase in ("*", "fwd", "bwd") and backend in ("*", "inductor", "aot_eager")
    for name, variant, dtype, phase in expected_failures.TOLERANCES:
        assert (name, variant) in OPS and dtype in DTYPES and phase in ("fwd", "bwd")
    for name, variant in expected_failures.UNSET_OUTPUTS:
        assert (name, variant) in OPS, (name, variant)


def _wrong(gm: object, example_inputs: list) -> object:
    """A backend whose results are 1e-4 too large, relatively: the net must catch it."""
    def run(*args: object) -> object:
        out = gm(*args)
        return tuple(o * (1 + 1e-4) for o in out) if isinstance(out, (tuple, list)) else out * (1 + 1e-4)
    return run


def test_net_catches_a_wrong_backend_and_a_missing_graph() -> None:
    import ember

    ember.register_backend(_wrong, name="opinfo_wrong_backend")
    op = OPS[("mul", "")]
    sample = samples(op, "cpu", DTYPES["float32"], "fwd", 1)[0]
    with pytest.raises(AssertionError, match="not close"):
        check_sample(op, sample, "opinfo_wrong_backend", "fwd", DTYPES["float32"])
    op = OPS[("nonzero", "")]
    sample = samples(op, "cpu", DTYPES["float32"], "fwd", 1)[0]
    with pytest.raises(AssertionError, match="no graph reached the backend"):
        check_sample(op, sample, "aot_eager", "fwd", DTYPES["float32"])


def test_low_precision_reference_and_uninitialised_outputs() -> None:
    """The float32 reference of a bfloat16 sample is a copy of a SampleInput (which declares
    __slots__); output leaves listed as uninitialised are compared by shape and dtype only."""
    import torch

    from opinfo_harness import _close, _upcast

    sample = samples(OPS[("atanh", "")], "cpu", DTYPES["bfloat16"], "bwd", 1)[0]
    up = _upcast(sample, torch.bfloat16)
    assert up.input.dtype == torch.float32 and up.input.requires_grad and sample.input.dtype == torch.bfloat16
    assert up.output_process_fn_grad is sample.output_process_fn_grad and up.name == sample.name
    out, seed = torch.ones(3), torch.tensor(7)
    _close((out, seed), (out.clone(), torch.tensor(8)), "output", unset=(1,))
    with pytest.raises(AssertionError, match=r"output\[1\]"):
        _close((out, seed), (out.clone(), torch.tensor(8)), "output")
    with pytest.raises(AssertionError, match=r"output\[1\]"):
        _close((out, seed), (out.clone(), torch.tensor([8])), "output", unset=(1,))


def test_a_float32_result_close_to_the_float64_reference_passes() -> None:
    """Where eager's float32 rounding is what differs (layer norm over one element: an exact 0
    against eager's -3e-5), the result passes if it is close to eager in float64; a result far
    from both fails."""
    import torch

    from opinfo_harness import _close_or_wider

    eager, exact = [torch.tensor([-3e-5])], lambda: [torch.zeros(1, dtype=torch.float64)]
    _close_or_wider([torch.zeros(1)], eager, exact, "grad", torch.float32)
    with pytest.raises(AssertionError, match=r"grad \(vs torch.float64 reference\)\[0\]"):
        _close_or_wider([torch.tensor([1e-3])], eager, exact, "grad", torch.float32)
    with pytest.raises(AssertionError, match=r"grad\[0\]"):
        _close_or_wider([torch.zeros(1, dtype=torch.float64)], [torch.tensor([-3e-5], dtype=torch.float64)],
                        lambda: None, "grad", torch.float64)  # no wider dtype than float64: eager's word
