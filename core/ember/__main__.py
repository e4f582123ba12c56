"""Command line: ``python -m ember backends`` prints the backend table."""
from __future__ import annotations

import argparse
import sys

from .backends import backend_table


def _print_table(rows: list[dict[str, str]]) -> None:
    if not rows:
        print("no backends found")
        return
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns[:-1]}
    print("  ".join(c.ljust(widths[c]) for c in columns[:-1]) + "  " + columns[-1])
    for row in rows:
        print("  ".join(row[c].ljust(widths[c]) for c in columns[:-1]) + "  " + row[columns[-1]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("backends", help="list the backends, who provides them and whether they work")
    parser.parse_args(argv)
    _print_table(backend_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
