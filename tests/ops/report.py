"""Summary of an OpInfo run: ``python -m tests.ops.report [results.json ...]``.

Reads the records that tests/ops/conftest.py writes (default ``EMBER_OPINFO_REPORT`` or
``$TMPDIR/ember_opinfo_results.json``) and prints ops covered and cases passing, expected to
fail, failing and skipped, in all and per dtype, backend, device and phase; ``--failures``
lists every unexpected failure with its message.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile

OUTCOMES = ("passed", "xfailed", "failed", "xpassed", "skipped")


def load(paths: list[str]) -> list[dict]:
    records = []
    for path in paths:
        with open(path) as f:
            text = f.read()
        if text.lstrip().startswith("["):  # a JSON list
            records.extend(json.loads(text))
        else:  # JSON lines
            records.extend(json.loads(line) for line in text.splitlines() if line.strip())
    return records


def _table(title: str, records: list[dict], key: str | None) -> list[str]:
    groups: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    ops: dict[str, set] = collections.defaultdict(set)
    for r in records:
        group = r[key] if key else "all"
        groups[group][r["outcome"]] += 1
        ops[group].add((r["op_name"], r["variant"]))
    lines = [f"{title:<12}{'ops':>6}{'cases':>7}" + "".join(f"{o:>9}" for o in OUTCOMES)]
    for group in sorted(groups):
        c = groups[group]
        lines.append(f"{group:<12}{len(ops[group]):>6}{sum(c.values()):>7}" + "".join(f"{c[o]:>9}" for o in OUTCOMES))
    return lines


def summary(records: list[dict]) -> str:
    lines = []
    failing_ops = {(r["op_name"], r["variant"]) for r in records if r["outcome"] in ("failed", "xfailed")}
    all_ops = {(r["op_name"], r["variant"]) for r in records if r["outcome"] != "skipped"}
    lines.append(f"ops covered: {len(all_ops)}, ops passing every case: {len(all_ops - failing_ops)}, "
                 f"ops with a failing case: {len(failing_ops)}")
    for title, key in (("total", None), ("dtype", "dtype"), ("backend", "backend"), ("device", "device"),
                       ("phase", "phase")):
        lines.append("")
        lines.extend(_table(title, records, key))
    return "\n".join(lines)


def _name(r: dict) -> str:
    return f"{r['op_name']}.{r['variant']}" if r["variant"] else r["op_name"]


def failures(records: list[dict]) -> str:
    rows = [r for r in records if r["outcome"] in ("failed", "xpassed")]
    return "\n".join(f"{_name(r)} {r['dtype']} {r['phase']} {r['backend']} {r['device']}: "
                     f"{r['outcome']}: {r['message']}" for r in sorted(rows, key=lambda r: (r["op_name"], r["variant"])))


def main() -> None:
    default = os.environ.get("EMBER_OPINFO_REPORT", os.path.join(tempfile.gettempdir(), "ember_opinfo_results.json"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[default])
    parser.add_argument("--failures", action="store_true", help="list every unexpected failure")
    args = parser.parse_args()
    records = load(args.paths)
    print(summary(records))
    if args.failures:
        print("\n" + failures(records))


if __name__ == "__main__":
    main()
