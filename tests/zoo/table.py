"""The zoo's capture table: ``python -m tests.zoo.table [model ...]`` prints, per model and mode
(eval / train / generate), ember's graphs, breaks and eager fallback, the share of tensor ops that
ran in graphs (``ember.explain``; eval and train), torch.compile's graphs and breaks on the same
call, whether results match eager, and why capture falls short (ember's first break reason).
``python -m tests.zoo.table --vision [model ...]`` prints the same for the torchvision and timm
models of vision_models.py (torchvision and timm needed). docs/zoo.md holds its output."""
from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any

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
    return _format(model_name, mode, got, expected, theirs, share, time.perf_counter() - start)


def vision_row(model_name: str, mode: str) -> str:
    import ember
    from zoo_harness import Result, count_torch_compile, observe_ember
    from vision_models import VISION_BY_NAME, prepare, run_eval, run_train, vision_call

    zoo = VISION_BY_NAME[model_name]

    def call(wrap: Any) -> Result:
        out, grads = vision_call(zoo, mode, wrap)
        return Result([out], grads)

    start = time.perf_counter()
    expected = call(None)
    got = observe_ember(call, "aot_eager" if mode == "train" else "eager")
    theirs = count_torch_compile(call)
    model, args = prepare(zoo, mode)
    share = ember.explain(run_eval if mode == "eval" else run_train)(model, *args).graph_op_share
    ember.reset()
    return _format(model_name, mode, got, expected, theirs, share, time.perf_counter() - start)


def _format(model_name: str, mode: str, got: Any, expected: Any, theirs: Any, share: float | None,
            seconds: float) -> str:
    try:
        assert_same(got, expected, mode)
        same = "yes"
    except AssertionError as exc:
        same = f"NO: {str(exc).splitlines()[0][:60]}"
    ours = got.capture
    short = shortfall(ours, theirs)
    reason = short.replace("|", "\\|")[:140]
    return (f"| {model_name} | {mode} | {ours.graphs} | {ours.breaks} | {'yes' if ours.fallback else 'no'} | "
            f"{'-' if share is None else f'{share:.0%}'} | "
            f"{theirs.graphs} | {theirs.breaks} | {'no' if short else 'yes'} | {same} | {seconds:.1f} | {reason} |")


def main(names: list[str]) -> None:
    warnings.simplefilter("ignore")
    vision = "--vision" in names
    names = [n for n in names if n != "--vision"]
    print("| model | mode | ember graphs | ember breaks | fallback | ops in graphs | torch.compile graphs | torch.compile breaks "
          "| capture ok | matches eager | seconds | why capture falls short |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    if vision:
        from vision_models import VISION_ZOO

        for model in VISION_ZOO:
            if not names or model.name in names:
                for mode in ("eval", "train"):
                    print(vision_row(model.name, mode), flush=True)
        return
    for zoo in ZOO:
        if names and zoo.name not in names:
            continue
        for mode in zoo.modes:
            print(row(zoo.name, mode), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
