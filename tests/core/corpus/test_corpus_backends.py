"""The capture corpus on every real backend, each in a child process: a crash is a failure.

For each backend, the corpus cases run compiled with that backend in one child process
(``backend_child.py``) and are compared with eager: outputs, arguments after the call, module
state. A backend may fall back to eager; it must never take the process down nor return a
different result. When the child dies (a signal, or a hang past the time limit), the case that
was running is run again alone in a new child, which names it as the culprit (or says that it
crashes only after the earlier cases), and the rest of the batch goes on in another child.

CI runs test_corpus_backend_traps.py's cases and a fixed, seeded share of the rest of the corpus
per backend (``SHARE`` cases, a different share per backend, the same on every run);
``EMBER_CORPUS_ALL_BACKENDS=1`` runs every case. Cases marked ``xfail`` in the corpus are known
capture bugs and are left out; ``KNOWN`` lists the cases a backend is known to get wrong today.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import ember

from backend_child import corpus_cases

BACKENDS = ("eager", "aot_eager", "inductor", "onnxrt", "tvm")
#: Cases per backend in the CI share (each backend gets its own seeded sample).
SHARE = {"eager": 14, "aot_eager": 8, "inductor": 5, "onnxrt": 5, "tvm": 4}
SEED = 20261124
#: Cases every run covers on every backend: the programs that crashed a backend once.
ALWAYS = "test_corpus_backend_traps::"
CHILD = Path(__file__).with_name("backend_child.py")
#: Known differences from eager, by backend: reported, not failed; one that passes fails the
#: test until it is removed from here.
KNOWN: dict[str, dict[str, str]] = {}
CHILD_TIMEOUT_S = 600


def selected(backend: str) -> list[str]:
    """The case ids this run covers for ``backend`` (see the module docstring)."""
    ids = [case_id for case_id, case in corpus_cases().items() if case.xfail is None]
    if os.environ.get("EMBER_CORPUS_ALL_BACKENDS", "") not in ("", "0"):
        return ids
    always = [case_id for case_id in ids if case_id.startswith(ALWAYS)]
    others = [case_id for case_id in ids if not case_id.startswith(ALWAYS)]
    return always + random.Random(f"{SEED}:{backend}").sample(others, min(SHARE[backend], len(others)))


def _child(backend: str, ids: list[str], results: Path, cache: Path) -> tuple[int | None, list[dict]]:
    """Run ``ids`` in one child; its exit code (None on timeout) and the lines it recorded."""
    results.write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
               EMBER_CACHE_DIR=str(cache), EMBER_INDUCTOR_STRICT="0")
    try:
        code: int | None = subprocess.run(
            [sys.executable, str(CHILD), backend, str(results), *ids], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=CHILD_TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        code = None
    return code, [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


def _death(code: int | None) -> str:
    if code is None:
        return f"hung (no answer in {CHILD_TIMEOUT_S} s)"
    return f"killed the process (signal {-code})" if code < 0 else f"ended the process (exit code {code})"


def run_on_backend(backend: str, ids: list[str], work: Path) -> dict[str, str]:
    """Case id -> "" (matches eager) or what went wrong, running batches in child processes."""
    outcome: dict[str, str] = {}
    remaining = list(ids)
    while remaining:
        code, lines = _child(backend, remaining, work / "results.jsonl", work / "cache")
        for line in lines:
            if "case" in line:
                outcome[line["case"]] = line["error"]
        started = [line["start"] for line in lines if "start" in line]
        if code == 0 and len(started) == len(remaining):
            break
        if not started or started[-1] in outcome:  # died before or between cases
            culprit = remaining[len(started)] if len(started) < len(remaining) else remaining[-1]
        else:
            culprit = started[-1]
        alone, _ = _child(backend, [culprit], work / "alone.jsonl", work / "cache-alone")
        if alone == 0:
            outcome[culprit] = f"{_death(code)} when run after other cases; alone it passes"
        else:
            outcome[culprit] = _death(alone)
        remaining = remaining[remaining.index(culprit) + 1:]
    return outcome


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_corpus_on_backend_in_child_process(backend: str, tmp_path: Path) -> None:
    if backend not in ember.list_backends(exclude_tags=()):
        pytest.skip(f"backend {backend} is not usable here")
    ids = selected(backend)
    outcome = run_on_backend(backend, ids, tmp_path)
    missing = [case_id for case_id in ids if case_id not in outcome]
    known = KNOWN.get(backend, {})
    failures = {case_id: error for case_id, error in outcome.items() if error and case_id not in known}
    fixed = [case_id for case_id in known if outcome.get(case_id) == ""]
    assert not missing, f"{backend}: no result for {missing}"
    assert not failures, f"{backend}: {len(failures)} of {len(ids)} cases differ from eager or crash:\n" + \
        "\n".join(f"  {case_id}: {error}" for case_id, error in sorted(failures.items()))
    assert not fixed, f"{backend}: known failures now pass, remove them from KNOWN: {fixed}"
