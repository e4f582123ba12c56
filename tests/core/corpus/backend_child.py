"""Child process of test_corpus_backends.py: run corpus cases through one real backend.

``python backend_child.py BACKEND RESULTS CASE_ID...`` compiles each case with
``ember.compile(..., backend=BACKEND)``, calls it on every argument tuple next to eager (each
call on its own clone of the arguments) and compares outputs, arguments after the call and
module state. Before a case starts it appends ``{"start": id}`` to the RESULTS file and after it
``{"case": id, "error": ""}`` (or the failure): lines written and flushed one by one, so that the
parent can tell which case was running when a backend took the process down.

A case id is ``<module>::<case name>``, the module being a ``test_corpus_*`` file of this folder.
"""
from __future__ import annotations

import copy
import importlib
import json
import os
import sys
import traceback
import warnings
from typing import Any

import torch
from torch.utils import _pytree as pytree

import ember
from harness import SEED, Case, _module_state, _split, assert_same, clone

#: Tolerances when a case sets none: backends reorder float arithmetic (looser in half precision).
TOLERANCE = 1e-4
HALF_TOLERANCE = 1e-2


def corpus_cases() -> dict[str, Case]:
    """Every case of the corpus modules, by id."""
    folder = os.path.dirname(os.path.abspath(__file__))
    cases: dict[str, Case] = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith("test_corpus_") and name.endswith(".py") and name != "test_corpus_backends.py":
            module = importlib.import_module(name[:-3])
            for case in getattr(module, "CASES", []):
                cases[f"{name[:-3]}::{case.name}"] = case
    return cases


def run_case(case: Case, backend: str) -> None:
    """Compile ``case`` with ``backend``; raise AssertionError where it differs from eager."""
    ember.reset()
    if case.module is not None:
        torch.manual_seed(SEED)
        base = case.module()
        eager, compiled_obj = copy.deepcopy(base), copy.deepcopy(base)
        compiled = ember.compile(compiled_obj, backend=backend)
    else:
        eager = compiled_obj = case.fn
        compiled = ember.compile(case.fn, backend=backend)
    for n, entry in enumerate(case.args):
        args, kwargs = _split(entry)
        eager_args, eager_kwargs = clone((args, kwargs))
        comp_args, comp_kwargs = clone((args, kwargs))
        where = f"args #{n}"
        torch.manual_seed(SEED)
        try:
            expected = eager(*eager_args, **eager_kwargs)
        except Exception as exc:
            torch.manual_seed(SEED)
            try:
                compiled(*comp_args, **comp_kwargs)
            except type(exc):
                continue
            raise AssertionError(f"{where}: eager raised {type(exc).__name__}, compiled did not")
        torch.manual_seed(SEED)
        actual = compiled(*comp_args, **comp_kwargs)
        atol, rtol = _tolerances(case, expected)
        assert_same(_floats_as_tensors(expected), _floats_as_tensors(actual), f"{where}: out", atol, rtol)
        assert_same(eager_args, comp_args, f"{where}: args after call", atol, rtol)
        assert_same(eager_kwargs, comp_kwargs, f"{where}: kwargs after call", atol, rtol)
        if case.module is not None:
            assert_same(_module_state(eager), _module_state(compiled_obj), f"{where}: module state", atol, rtol)


def _tolerances(case: Case, expected: Any) -> tuple[float, float]:
    if case.atol is not None:
        return case.atol, case.rtol if case.rtol is not None else 0.0
    half = any(isinstance(v, torch.Tensor) and v.dtype in (torch.float16, torch.bfloat16)
               for v in pytree.tree_leaves(expected))
    return (HALF_TOLERANCE, HALF_TOLERANCE) if half else (TOLERANCE, TOLERANCE)


def _floats_as_tensors(tree: Any) -> Any:
    """Python floats (``x.sum().item()``) compared as float64 tensors, with the same tolerance."""
    return pytree.tree_map(lambda v: torch.tensor(v, dtype=torch.float64) if type(v) is float else v, tree)


def main(backend: str, results: str, ids: list[str]) -> None:
    cases = corpus_cases()
    with open(results, "a") as out:
        def record(entry: dict[str, Any]) -> None:
            out.write(json.dumps(entry) + "\n")
            out.flush()

        for case_id in ids:
            record({"start": case_id})
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    run_case(cases[case_id], backend)
                error = ""
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                lines = traceback.format_exception_only(type(exc), exc)
                error = "".join(lines).strip()[-1500:]
            record({"case": case_id, "error": error})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
