"""The zoo's capture table: ``python -m tests.zoo.table [model ...]`` prints, per model and mode
(eval / train / generate), ember's graphs, breaks and eager fallback, the share of tensor ops that
ran in graphs (``ember.explain``; eval and train), torch.compile's graphs and breaks on the same
call, whether results match eager, and why capture falls short (ember's first break reason).
docs/zoo.md holds its output."""
from __future__ import annotations

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from zoo_harness import (assert_same, graph_op_share, run_eager, run_ember, run_torch_compile,  # noqa: E402
                         shortfall)
from zoo_models import ZOO  # noqa: E402


def row(model_name: str, mode: str) -> str:
    from zoo_models import BY_NAME

    zoo = BY_NAME[model_name]
    start = time.perf_counter()
    try:
        expected = run_eager(zoo, mode)
        got = run_ember(zoo, mode)
        theirs = run_torch_compile(zoo, mode)
        share = graph_op_share(zoo, mode)
    except Exception as exc:  # noqa: BLE001 - a row reports what went wrong
        return f"| {model_name} | {mode} | error: {type(exc).__name__}: {str(exc).splitlines()[0][:80]} |"
    try:
        assert_same(got, expected, mode)
        same = "yes"
    except AssertionError as exc:
        same = f"NO: {str(exc).splitlines()[0][:60]}"
    ours = got.capture
    short = shortfall(ours, theirs)
    seconds = time.perf_counter() - start
    reason = short.replace("|", "\\|")[:140]
    return (f"| {model_name} | {mode} | {ours.graphs} | {ours.breaks} | {'yes' if ours.fallback else 'no'} | "
            f"{'-' if share is None else f'{share:.0%}'} | "
            f"{theirs.graphs} | {theirs.breaks} | {'no' if short else 'yes'} | {same} | {seconds:.1f} | {reason} |")


def main(names: list[str]) -> None:
    warnings.simplefilter("ignore")
    print("| model | mode | ember graphs | ember breaks | fallback | ops in graphs | torch.compile graphs | torch.compile breaks "
          "| capture ok | matches eager | seconds | why capture falls short |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for zoo in ZOO:
        if names and zoo.name not in names:
            continue
        for mode in zoo.modes:
            print(row(zoo.name, mode), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
