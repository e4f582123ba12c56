"""docs/dynamo_behaviours.md from the records of a full refresh: totals per torch test file, failures
grouped by reason, and graph counts against torch.compile's."""
from __future__ import annotations

import collections
from typing import Any

INTRO = """\
# Behaviours ported from PyTorch's Dynamo tests

PyTorch's own Dynamo tests (`test/dynamo/` in the pytorch repository) are the reference for the Python
semantics capture must keep. `tests/dynamo_behaviours/` holds the facts they check, rewritten as
ember's own tests: one file per torch test file (`test_functions_behaviours.py` for
`test_functions.py`, ...), each case a tiny program of our own plus its inputs, checking the same
construct captured with the same result as eager (and, where the torch test uses `make_test`,
`nopython` or `fullgraph=True`, captured as one graph). Where the torch test counts frames or graphs,
and for every case that is not fullgraph, the case also runs through `torch.compile` with a counting
backend in the same test, and ember must compile as many graphs. torch's code is not copied.

- Run: `python -m pytest -q -p no:cacheprovider tests/dynamo_behaviours` (one process per worker,
  a few minutes on 2 cores).
- Cases ember fails today are in one table of strict expected failures,
  `tests/dynamo_behaviours/behaviour_expected.py`, with ember's reason: a fix shows up as XPASS.
- After a capture change, `python -m tests.dynamo_behaviours.refresh` reruns every case and rewrites
  that table and this page (`-k TEXT` for some cases, table only; `-j 2` on two processes;
  `--torch` runs every case through torch.compile to prove the ports themselves).
"""


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def render(records: list[dict[str, Any]]) -> str:
    by_suite: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in records:
        by_suite[r["suite"]].append(r)
    lines = [INTRO, "## Totals", "",
             "| torch test file | torch tests | behaviours | pass | fail | pass rate | graph counts compared "
             "| same as torch.compile | ember more | ember fewer |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    total = collections.Counter()
    for suite, rs in by_suite.items():
        row = _row(rs)
        total.update(row)
        lines.append(f"| `{suite}.py` | " + " | ".join(_cells(row)) + " |")
    lines.append("| **all** | " + " | ".join(f"**{c}**" for c in _cells(total)) + " |")
    lines += ["", "Graph counts are compared on the cases that count them; \"ember more\" / \"ember fewer\" "
              "are cases where ember compiled more / fewer graphs than torch.compile (a fewer count with a "
              "fallback warning means ember ran code eagerly that torch.compile captured).", ""]

    reasons = collections.Counter(r["reason"] for r in records if r["status"] == "fail")
    lines += ["## Failures by reason, all files", "", "| cases | reason ember gives |", "|---:|---|"]
    lines += [f"| {n} | {_cell(reason)} |" for reason, n in reasons.most_common()]
    lines.append("")
    for suite, rs in by_suite.items():
        lines += [f"## `{suite}.py`", ""]
        row = _row(rs)
        lines.append(f"{row['behaviours']} behaviours from {row['torch tests']} torch tests; {row['pass']} pass "
                     f"({_pct(row['pass'], row['behaviours'])}), {row['fail']} fail.")
        if row["counted"]:
            lines.append(f"Graph counts: {row['counted']} cases compared with torch.compile, {row['same']} "
                         f"the same, {row['more']} with more graphs in ember, {row['fewer']} with fewer.")
        fails = collections.Counter(r["reason"] for r in rs if r["status"] == "fail")
        if fails:
            lines += ["", "| cases | reason ember gives |", "|---:|---|"]
            lines += [f"| {n} | {_cell(reason)} |" for reason, n in fails.most_common()]
        lines.append("")
    return "\n".join(lines)


def _row(rs: list[dict[str, Any]]) -> collections.Counter:
    row: collections.Counter = collections.Counter()
    row["torch tests"] = len({r["torch_test"] for r in rs})
    row["behaviours"] = len(rs)
    row["pass"] = sum(r["status"] == "pass" for r in rs)
    row["fail"] = sum(r["status"] == "fail" for r in rs)
    counted = [r for r in rs if r["counts"] and r["ember_graphs"] is not None and r["torch_graphs"] is not None]
    row["counted"] = len(counted)
    row["same"] = sum(r["ember_graphs"] == r["torch_graphs"] for r in counted)
    row["more"] = sum(r["ember_graphs"] > r["torch_graphs"] for r in counted)
    row["fewer"] = sum(r["ember_graphs"] < r["torch_graphs"] for r in counted)
    return row


def _cells(row: collections.Counter) -> list[str]:
    return [str(row["torch tests"]), str(row["behaviours"]), str(row["pass"]), str(row["fail"]),
            _pct(row["pass"], row["behaviours"]), str(row["counted"]), str(row["same"]), str(row["more"]),
            str(row["fewer"])]


def _cell(text: str) -> str:
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"
