"""Rerun every ported Dynamo behaviour and rewrite the expected-failure table and the doc from the results.

    python -m tests.dynamo_behaviours.refresh            # all cases: behaviour_expected.py + docs/dynamo_behaviours.md
    python -m tests.dynamo_behaviours.refresh -k ctx     # only keys containing "ctx": their table entries only
    python -m tests.dynamo_behaviours.refresh --torch    # prove the ports: every case through torch.compile
    python -m tests.dynamo_behaviours.refresh -j 2       # cases spread over 2 processes

Every case runs in this process (or in ``-j`` worker processes), as under pytest. A case whose port
torch.compile itself fails (PortError) is printed and never written to the table: fix the case.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import glob
import importlib
import multiprocessing
import os
import signal
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TABLE = os.path.join(HERE, "behaviour_expected.py")
DOC = os.path.join(ROOT, "docs", "dynamo_behaviours.md")
CASE_SECONDS = 120


def _paths() -> None:
    for path in (HERE, os.path.join(HERE, "..", "core", "corpus")):
        if path not in sys.path:
            sys.path.insert(0, path)


def suites() -> list[Any]:
    """Every Suite, one per ``test_*_behaviours.py`` module of this folder, in file order."""
    _paths()
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "test_*_behaviours.py"))):
        module = importlib.import_module(os.path.basename(path)[:-3])
        out.append(module.SUITE)
    return out


def _expired(signum: int, frame: Any) -> None:
    raise TimeoutError(f"ran over {CASE_SECONDS} s")


def run_keys(keys: list[str], compiler: str) -> list[dict[str, Any]]:
    """One record per case: status "pass", "fail" (with ember's reason) or "port" (a wrong port)."""
    import logging
    import warnings

    import torch

    torch._logging.set_logs(dynamo=logging.ERROR)  # torch.compile's graph-break advice, once per case
    warnings.simplefilter("ignore")

    import ember
    from behaviour_harness import Failure, Outcome, PortError, check, normalise

    wanted = set(keys)
    records = []
    signal.signal(signal.SIGALRM, _expired)
    for suite in suites():
        for b in suite.cases:
            if b.key not in wanted or (compiler == "torch" and b.torch_differs):
                continue
            outcome = Outcome()
            record: dict[str, Any] = {"key": b.key, "suite": b.suite, "torch_test": b.torch_test,
                                      "counts": b.counts_graphs, "status": "pass", "reason": ""}
            signal.alarm(CASE_SECONDS)
            try:
                check(b, compiler, outcome)
            except PortError as exc:
                record.update(status="port", reason=normalise(str(exc), 300))
            except Failure as exc:
                record.update(status="fail", reason=exc.reason)
            except Exception as exc:  # a crash of the harness or of ember outside the call
                record.update(status="fail", reason=normalise(f"{type(exc).__name__}: {exc}"))
            finally:
                signal.alarm(0)
                ember.reset()
            record.update(ember_graphs=outcome.ember_graphs, torch_graphs=outcome.torch_graphs)
            records.append(record)
    return records


def write_table(failures: dict[str, str]) -> None:
    """behaviour_expected.py: the failing keys grouped by reason, largest group first."""
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for key, reason in failures.items():
        groups[reason].append(key)
    with open(TABLE) as f:
        head = f.read().split("EXPECTED: dict[str, str] = {")[0]
    lines = [head.rstrip() + "\n", "", "EXPECTED: dict[str, str] = {"]
    for reason, keys in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"    # {len(keys)}")
        lines.append("    **dict.fromkeys([")
        lines.extend(f"        {key!r}," for key in sorted(keys))
        lines.append(f"    ], {reason!r}),")
    lines.append("}")
    with open(TABLE, "w") as f:
        f.write("\n".join(lines) + "\n")


def _chunks(keys: list[str], n: int) -> list[list[str]]:
    return [keys[i::n] for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the cases whose key contains this text")
    parser.add_argument("-j", type=int, default=1, help="worker processes")
    parser.add_argument("--torch", action="store_true", help="run the cases through torch.compile (check the ports)")
    parser.add_argument("--no-write", action="store_true", help="print, write nothing")
    opts = parser.parse_args(argv)
    keys = [b.key for s in suites() for b in s.cases if opts.k in b.key]
    compiler = "torch" if opts.torch else "ember"
    if opts.j > 1:
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(opts.j, mp_context=ctx) as pool:
            parts = pool.map(run_keys, _chunks(keys, opts.j), [compiler] * opts.j)
        order = {k: i for i, k in enumerate(keys)}
        records = sorted((r for part in parts for r in part), key=lambda r: order[r["key"]])
    else:
        records = run_keys(keys, compiler)

    status = collections.Counter(r["status"] for r in records)
    print(f"{len(records)} cases: {status['pass']} pass, {status['fail']} fail, {status['port']} wrong ports")
    for r in records:
        if r["status"] == "port" or (opts.torch and r["status"] == "fail"):
            print(f"{r['status'].upper()} {r['key']}: {r['reason']}")
    reasons = collections.Counter(r["reason"] for r in records if r["status"] == "fail")
    for reason, n in reasons.most_common(25):
        print(f"{n:5d}  {reason}")
    if opts.torch or opts.no_write:
        return 0

    _paths()
    from behaviour_expected import EXPECTED

    failures = {k: v for k, v in EXPECTED.items() if opts.k not in k}  # entries outside this run stay
    known = {b.key for s in suites() for b in s.cases}
    failures = {k: v for k, v in failures.items() if k in known}
    failures.update({r["key"]: r["reason"] for r in records if r["status"] == "fail"})
    write_table(failures)
    print(f"wrote {os.path.relpath(TABLE, ROOT)} ({len(failures)} expected failures)")
    if not opts.k:
        import behaviour_doc

        with open(DOC, "w") as f:
            f.write(behaviour_doc.render(records))
        print(f"wrote {os.path.relpath(DOC, ROOT)}")
    else:
        print("-k given: the doc keeps its figures (run without -k to rewrite it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
