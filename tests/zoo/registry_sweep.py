"""The registry sweep: every architecture of transformers' auto mappings (tests/zoo/registry.py),
built tiny by one generic shrinker and called as the zoo calls its models, through ember and
through torch.compile (a counting backend), compared with eager.

    python -m tests.zoo.registry_sweep [--mappings causal_lm sequence_classification ...]
        [--modes eval train generate] [--limit N] [--timeout S] [--out docs/registry_sweep.md] [--inductor]

Each case (architecture, mode) runs in a worker subprocess with a timeout: a hang or a crash of
the process costs that case only (the worker is killed and a fresh one takes the next case).
A worker runs several cases in a row (``--cases-per-worker``; 1: a fresh process per case) to
spare the imports. Results go to a JSON-lines file as they come (``--jsonl``; ``--resume``
skips the cases already there) and the Markdown report is rewritten after every case.

``--inductor`` also runs each case through ember's ``inductor`` backend (C++ kernels on the CPU,
strict: a graph it cannot compile is an error) and compares its outputs and gradients with
eager's: the table's "inductor" column (ok, WRONG, crash, fallback; "-": not run).

Not run in CI (it takes an hour or more on 2 cores): tests/zoo/test_registry_sweep.py is CI's
fixed share of it."""
from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import selectors
import subprocess
import sys
import time
import traceback
import warnings
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = "@@registry-sweep@@ "
DEFAULT_MAPPINGS = ["causal_lm", "sequence_classification"]


# ---------------------------------------------------------------------------------------- worker
def _where(exc: BaseException) -> str:
    """The deepest frame of ember (core/ or plugins/) the exception passed through, else the last."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/core/ember/" in f.filename or "/plugins/" in f.filename]
    f = (ours or frames or [None])[-1]
    return "" if f is None else f"{os.path.relpath(f.filename, ROOT) if f.filename.startswith(ROOT) else os.path.basename(f.filename)}:{f.lineno}"


def run_case(mapping: str, model_type: str, mode: str, inductor: bool = False) -> dict[str, Any]:
    """One (architecture, mode): built?, eager?, ember's capture and result, torch.compile's capture;
    ``inductor``: also ember's ``inductor`` backend (C++ kernels), its result against eager's."""
    import torch

    from registry import first_line, registry_models
    from zoo_harness import assert_same, run_eager, run_ember, run_torch_compile, shortfall
    from zoo_models import build, inputs

    row: dict[str, Any] = {"mapping": mapping, "model_type": model_type, "mode": mode}
    arch = next(a for a in registry_models([mapping]) if a.model_type == model_type)
    row["model_class"] = arch.model_class
    zoo = arch.zoo
    start = time.perf_counter()
    try:
        build(zoo, mode)
        inputs(zoo, mode)  # audio: the model's feature extractor
    except Exception as exc:  # noqa: BLE001 - the row says why
        row["build_error"] = first_line(exc)
        return row
    try:
        expected = run_eager(zoo, mode)
    except Exception as exc:  # noqa: BLE001 - the model's own eager call fails: not ember's
        row["eager_error"] = first_line(exc)
        return row
    row["eager_s"] = round(time.perf_counter() - start, 1)
    start = time.perf_counter()
    try:
        got = run_ember(zoo, mode)
    except Exception as exc:  # noqa: BLE001 - a crash of ember
        row["ember_error"] = first_line(exc)
        row["ember_error_at"] = _where(exc)
        got = None
    row["ember_s"] = round(time.perf_counter() - start, 1)
    if got is not None:
        c = got.capture
        row.update(ember_graphs=c.graphs, ember_breaks=c.breaks, ember_fallback=c.fallback,
                   ember_reason=c.first_reason[:300])
        try:
            assert_same(got, expected, mode, functools.cache(lambda: run_eager(zoo, mode, "cpu", torch.float64)))
            row["matches"] = True
        except AssertionError as exc:
            row["matches"] = False
            row["mismatch"] = " ".join(str(exc).split())[:300]
    if inductor:
        row.update(run_inductor(zoo, mode, expected))
    start = time.perf_counter()
    try:
        theirs = run_torch_compile(zoo, mode)
        row.update(tc_graphs=theirs.graphs, tc_breaks=theirs.breaks)
    except Exception as exc:  # noqa: BLE001 - torch.compile's own failure
        row["tc_error"] = first_line(exc)
        theirs = None
    row["tc_s"] = round(time.perf_counter() - start, 1)
    if got is not None:
        if got.capture.fallback:
            row["shortfall"] = f"eager fallback: {got.capture.first_reason}"[:300]
        elif theirs is not None:
            row["shortfall"] = shortfall(got.capture, theirs)[:300]
    torch._dynamo.reset()
    return row


def run_inductor(zoo: Any, mode: str, expected: Any) -> dict[str, Any]:
    """The case through ``backend="inductor"`` (strict: a graph the inductor cannot compile is an
    error, not a silent run of its aten graph): ``inductor_matches`` eager (outputs and gradients),
    ``inductor_fallback`` (of capture), or ``inductor_error``."""
    import torch

    from registry import first_line
    from zoo_harness import assert_same, run_eager, run_ember

    out: dict[str, Any] = {}
    start = time.perf_counter()
    old = os.environ.get("EMBER_INDUCTOR_STRICT")
    os.environ["EMBER_INDUCTOR_STRICT"] = "1"
    try:
        got = run_ember(zoo, mode, backend="inductor")
    except Exception as exc:  # noqa: BLE001 - a crash of ember's inductor
        out.update(inductor_error=first_line(exc), inductor_error_at=_where(exc))
        got = None
    finally:
        if old is None:
            del os.environ["EMBER_INDUCTOR_STRICT"]
        else:
            os.environ["EMBER_INDUCTOR_STRICT"] = old
    if got is not None:
        out.update(inductor_graphs=got.capture.graphs, inductor_fallback=got.capture.fallback)
        try:
            assert_same(got, expected, mode, functools.cache(lambda: run_eager(zoo, mode, "cpu", torch.float64)))
            out["inductor_matches"] = True
        except AssertionError as exc:
            out.update(inductor_matches=False, inductor_mismatch=" ".join(str(exc).split())[:300])
    out["inductor_s"] = round(time.perf_counter() - start, 1)
    return out


def worker() -> None:
    """Cases from stdin (one JSON list [mapping, model_type, mode] a line), a result line each."""
    import torch

    warnings.simplefilter("ignore")
    torch.set_num_threads(int(os.environ.get("EMBER_SWEEP_THREADS", "1")))
    import logging

    logging.disable(logging.WARNING)
    for line in sys.stdin:
        mapping, model_type, mode, *options = json.loads(line)
        try:
            row = run_case(mapping, model_type, mode, **(options[0] if options else {}))
        except BaseException as exc:  # noqa: BLE001 - the harness itself failed on this case
            row = {"mapping": mapping, "model_type": model_type, "mode": mode, "harness_error": f"{type(exc).__name__}: {exc}"[:300]}
        sys.stdout.write(MARK + json.dumps(row) + "\n")
        sys.stdout.flush()


# ---------------------------------------------------------------------------------------- parent
class Worker:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", TRANSFORMERS_VERBOSITY="error", HF_HUB_OFFLINE="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.zoo.registry_sweep", "--worker"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)
        self.cases = 0
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def ask(self, case: list[str], timeout: float) -> dict[str, Any] | str:
        """The case's row, or "timeout" / "crash: ..." when the process hung or died."""
        self.cases += 1
        try:
            self.proc.stdin.write(json.dumps(case) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return f"crash: worker exited with {self.proc.wait()}"
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if not self.sel.select(left):
                return "timeout"
            line = self.proc.stdout.readline()
            if not line:
                return f"crash: worker exited with {self.proc.wait()}"
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.sel.close()


def _cell(text: Any, width: int = 160) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")[:width]


def status(row: dict[str, Any]) -> str:
    """One word per row for the totals: not built, eager fails, timeout, crash, wrong, short, ok."""
    if row.get("build_error"):
        return "not built"
    if row.get("eager_error"):
        return "eager fails"
    if row.get("timeout"):
        return "timeout"
    if row.get("process_crash") or row.get("harness_error") or row.get("ember_error"):
        return "crash"
    if row.get("matches") is False:
        return "wrong"
    if row.get("shortfall"):
        return "short"
    if row.get("tc_error"):
        return "ok (torch.compile failed)"
    return "ok"


def totals(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    built = [r for r in rows if not r.get("build_error")]
    eager = [r for r in built if not r.get("eager_error")]
    ran = [r for r in eager if not r.get("timeout") and not r.get("process_crash") and not r.get("harness_error")]
    return [
        ("cases (architecture x mode)", len(rows)),
        ("built by the shrinker", len(built)),
        ("eager runs", len(eager)),
        ("torch.compile runs (no error)", sum(1 for r in ran if "tc_graphs" in r)),
        ("ember: no fallback, no more graphs or breaks than torch.compile, matches eager",
         sum(1 for r in ran if "ember_graphs" in r and r.get("matches") and not r.get("ember_fallback")
             and not r.get("shortfall") and "tc_graphs" in r)),
        ("ember: eager fallback", sum(1 for r in ran if r.get("ember_fallback"))),
        ("ember: more graphs or breaks than torch.compile (no fallback)",
         sum(1 for r in ran if r.get("shortfall") and not r.get("ember_fallback"))),
        ("ember: WRONG result (differs from eager)", sum(1 for r in ran if r.get("matches") is False)),
        ("ember: crash (exception from ember's compile or run)", sum(1 for r in ran if r.get("ember_error"))),
        ("timeouts / dead worker processes", sum(1 for r in eager if r.get("timeout") or r.get("process_crash")
                                                 or r.get("harness_error"))),
    ]


def inductor_status(row: dict[str, Any]) -> str:
    """The ``inductor`` column: "-" (not run), ok, WRONG, crash or fallback (of capture)."""
    if "inductor_s" not in row:
        return "-"
    if row.get("inductor_error"):
        return "crash"
    if row.get("inductor_matches") is False:
        return "WRONG"
    return "fallback" if row.get("inductor_fallback") else "ok"


def inductor_totals(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    ran = [r for r in rows if "inductor_s" in r]
    return [
        ("inductor: cases run", len(ran)),
        ("inductor: matches eager, no eager fallback", sum(inductor_status(r) == "ok" for r in ran)),
        ("inductor: eager fallback (of capture)", sum(inductor_status(r) == "fallback" for r in ran)),
        ("inductor: WRONG result (differs from eager)", sum(inductor_status(r) == "WRONG" for r in ran)),
        ("inductor: crash (exception from ember's compile or run, strict)", sum(inductor_status(r) == "crash"
                                                                               for r in ran)),
    ]


def totals_table(rows: list[dict[str, Any]]) -> list[str]:
    """Totals per mapping (a column each, in the rows' order) and of all of them."""
    mappings = list(dict.fromkeys(r["mapping"] for r in rows))
    groups = [[r for r in rows if r["mapping"] == m] for m in mappings] + [rows]
    inductor = any("inductor_s" in r for r in rows)
    cols = [totals(g) + (inductor_totals(g) if inductor else []) for g in groups]
    lines = ["| | " + " | ".join(mappings + ["all"]) + " |", "|---" * (len(groups) + 1) + "|"]
    for i, (name, _) in enumerate(cols[-1]):
        lines.append(f"| {name} | " + " | ".join(str(c[i][1]) for c in cols[:-1]) + f" | **{cols[-1][i][1]}** |")
    return lines


def report(rows: list[dict[str, Any]], command: str, started: str, seconds: float, done: bool,
           pending: int = 0) -> str:
    import torch
    import transformers

    lines = [
        "# Registry sweep: every transformers architecture of the auto mappings, shrunk tiny",
        "",
        f"Generated by `{command}` ({started}, {seconds / 60:.0f} min{'' if done else ', IN PROGRESS'}; CPU, "
        f"torch {torch.__version__}, transformers {transformers.__version__}, Python {platform.python_version()}).",
        "",
        "Each architecture of the mappings is built from its own config class by the one generic shrinker of "
        "`tests/zoo/registry.py` (hidden 32, 2 layers, 4 heads / 2 kv heads, intermediate 37, vocab 99, "
        "64 positions, 32x32 images of 8x8 patches, conv feature encoders of 32 channels, every dropout and "
        "SpecAugment masking probability 0, random weights, no downloads) and called as "
        "the hand-picked zoo calls its models (`tests/zoo/zoo_harness.py`, docs/zoo.md): **eval** under "
        "`no_grad` with an attention mask and ember's `eager` backend, **train** (labels and `loss.backward()`) "
        "with `aot_eager`, **generate** with a compiled forward. Text models get a padded batch of token ids "
        "(encoder-decoders `decoder_input_ids` in eval, `labels` in train); audio models two random clips "
        "(1 s and 0.75 s) through their own model type's feature extractor, padded as it pads, with a class "
        "per clip (audio classification) or 5 tokens per clip (CTC) as labels. torch.compile's graphs and "
        "breaks are counted on the same call with a counting backend. \"matches\" compares outputs and "
        "gradients (None-ness too) with eager's. The \"inductor\" column (where run, `--inductor`): the same "
        "call through ember's `inductor` backend (C++ kernels, strict), compared with eager's. A model "
        "whose own eager call fails is listed as such and not counted against ember. Each case ran in a "
        "worker subprocess with a timeout.",
        "",
        "## Totals",
        "",
    ]
    lines += totals_table(rows)
    if pending:
        lines.append(f"| cases of the command not run (the sweep was stopped; `--resume` runs them) | {pending} |")
    lines += ["", "## Cases", "",
              "| mapping | architecture | mode | status | ember graphs | ember breaks | ember fallback | "
              "torch.compile graphs | torch.compile breaks | matches eager | inductor | ember's first break / "
              "fallback reason, or why not run |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        st = status(r)
        why = (r.get("build_error") or r.get("eager_error") or (r.get("timeout") and f"timeout after {r['timeout']} s")
               or r.get("process_crash") or r.get("harness_error")
               or (r.get("ember_error") and f"ember raised {r['ember_error']} at {r.get('ember_error_at')}")
               or r.get("mismatch") or r.get("shortfall") or r.get("ember_reason") or "")
        if r.get("tc_error"):
            why = f"{why}; torch.compile raised {r['tc_error']}" if why else f"torch.compile raised {r['tc_error']}"
        bad = (r.get("inductor_error") and f"inductor raised {r['inductor_error']} at {r.get('inductor_error_at')}") \
            or (r.get("inductor_matches") is False and f"inductor: {r.get('inductor_mismatch')}")
        if bad:
            why = f"{why}; {bad}" if why else bad
        ran = "ember_graphs" in r
        lines.append(
            f"| {r['mapping']} | {r['model_type']} | {r['mode']} | {st} | "
            f"{r.get('ember_graphs', '-')} | {r.get('ember_breaks', '-')} | "
            f"{('yes' if r.get('ember_fallback') else 'no') if ran else '-'} | {r.get('tc_graphs', '-')} | "
            f"{r.get('tc_breaks', '-')} | {('yes' if r.get('matches') else 'NO') if ran else '-'} | "
            f"{inductor_status(r)} | {_cell(why)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    from registry import MAPPINGS, registry_models

    parser = argparse.ArgumentParser(prog="python -m tests.zoo.registry_sweep", description=__doc__.split("\n")[0])
    parser.add_argument("--mappings", nargs="+", default=DEFAULT_MAPPINGS, choices=list(MAPPINGS))
    parser.add_argument("--modes", nargs="+", default=["eval", "train"], choices=["eval", "train", "generate"])
    parser.add_argument("--limit", type=int, default=None, help="the first N architectures of each mapping")
    parser.add_argument("--only", nargs="+", default=None, help="these model types only")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    parser.add_argument("--cases-per-worker", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "registry_sweep.md"))
    parser.add_argument("--jsonl", default=os.path.join("/tmp", "registry_sweep.jsonl"))
    parser.add_argument("--resume", action="store_true", help="keep the rows of --jsonl, run the others")
    parser.add_argument("--report-only", action="store_true", help="rewrite --out from --jsonl")
    parser.add_argument("--inductor", action="store_true",
                        help="also run each case through ember's inductor backend (C++ kernels), strict; "
                             "with --resume, kept rows without an inductor run are run again")
    parser.add_argument("--seconds-before", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    command = "python -m tests.zoo.registry_sweep " + " ".join(argv)
    started = datetime.date.today().isoformat()
    t0 = time.perf_counter()

    cases = []
    for mapping in args.mappings:
        archs = registry_models([mapping])
        if args.only:
            archs = [a for a in archs if a.model_type in args.only]
        for arch in archs[:args.limit]:
            cases += [[mapping, arch.model_type, mode] for mode in args.modes if mode in arch.zoo.modes]
    done: dict[tuple, dict] = {}
    if (args.resume or args.report_only) and os.path.exists(args.jsonl):
        with open(args.jsonl) as f:
            for line in f:
                r = json.loads(line)
                done[(r["mapping"], r["model_type"], r["mode"])] = r
    elif os.path.exists(args.jsonl):
        os.remove(args.jsonl)
    rows = lambda: [done[tuple(c)] for c in cases if tuple(c) in done]  # noqa: E731

    def write(final: bool) -> None:
        with open(args.out, "w") as f:
            f.write(report(rows(), command, started, time.perf_counter() - t0 + args.seconds_before, final,
                           sum(tuple(c) not in done for c in cases)))

    if args.report_only:
        write(True)
        return
    work: Worker | None = None
    if args.inductor:  # rows that ran eagerly but not through the inductor: run again
        for key in [k for k, r in done.items() if "inductor_s" not in r and not r.get("build_error")
                    and not r.get("eager_error")]:
            del done[key]
    for i, case in enumerate(cases):
        if tuple(case) in done:
            continue
        if work is None or work.cases >= args.cases_per_worker:
            if work is not None:
                work.stop()
            work = Worker()
        start = time.perf_counter()
        got = work.ask(case + ([{"inductor": True}] if args.inductor else []), args.timeout)
        if isinstance(got, str):
            work.stop()
            work = None
            got = {"mapping": case[0], "model_type": case[1], "mode": case[2],
                   **({"timeout": args.timeout} if got == "timeout" else {"process_crash": got})}
        got["seconds"] = round(time.perf_counter() - start, 1)
        done[tuple(case)] = got
        with open(args.jsonl, "a") as f:
            f.write(json.dumps(got) + "\n")
        print(f"[{i + 1}/{len(cases)}] {'/'.join(case)}: {status(got)}"
              f"{'' if not args.inductor else ', inductor ' + inductor_status(got)} ({got['seconds']} s) "
              f"{got.get('shortfall') or got.get('ember_error') or got.get('mismatch') or ''}"[:220], flush=True)
        write(False)
    if work is not None:
        work.stop()
    write(True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker()
    else:
        main(sys.argv[1:])
