"""The fuzzer's command line: generate programs, check each backend against eager, shrink failures.

    python -m tests.fuzz.run --n 10000 --backends eager,aot_eager,inductor:500 --seed 0 --out repros
    python -m tests.fuzz.run --kind python --n 10000 --backends eager,aot_eager,inductor:500

``--kind tensor`` (the default) runs tensor programs (``gen.py``), ``--kind python`` Python
programs that read and mutate state between calls (``pygen.py``); ``--skip-known`` leaves out of
those the variants that a known bug breaks (``pyregressions.known``), so that new bugs show.

``name:count`` runs a backend on the first ``count`` programs only (inductor builds C++ kernels,
about a second each). Prints, per backend, how many programs ran, matched, mismatched, crashed,
failed to compile, were captured as one graph and compiled, and had a graph or a call run eagerly
by the backend (ember_aot's warning; such a match is not a compiled one), the graphs, breaks and
eager fallbacks of capture, then the failure categories (``--reasons N``: and the N commonest
reasons of breaks and fallbacks). Each failure is shrunk (the first few of each category) and
written to ``--out`` as a program literal with its source, ready for ``test_regressions.py``
(``pyregressions.py`` for Python programs).
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import signal
import sys
import time
from typing import Any, Callable

import ember
from ember import compiled as compiled_mod
from tests.fuzz import gen, harness, pygen, pyharness
from tests.fuzz.harness import Outcome
from tests.fuzz.shrink import shrink

STATUSES = ("ok", "mismatch", "crash", "backend_error", "skipped")


@dataclasses.dataclass(frozen=True)
class Kind:
    """How to make, validate and check one kind of program."""

    generate: Callable[[int, argparse.Namespace], Any]
    expect: Callable[[Any], Any]  # eager's results, passed on to ``check``
    valid: Callable[[Any], bool]  # whether those results make the program a test
    check: Callable[..., Outcome]
    key: Callable[[Outcome], str]  # the failure category


def _python_program(seed: int, args: argparse.Namespace) -> Any:
    from tests.fuzz.pyregressions import known  # the known bugs' table: only for this kind
    return pygen.generate(seed, exclude=known() if args.skip_known else frozenset())


KINDS = {
    "tensor": Kind(lambda seed, args: gen.generate(seed, training={"random": None, "yes": True, "no": False}[
        args.training]), harness.expect, lambda runs: runs[0] is not None, harness.check, lambda o: o.category),
    # pygen keeps only the variants two eager twins run alike: no second validation
    "python": Kind(_python_program, lambda program: None, lambda _: True, pyharness.check,
                   lambda o: re.sub(r"\d+", "N", o.category.split(" (")[0])),
}


def parse_backends(spec: str, n: int) -> dict[str, int]:
    out = {}
    for part in spec.split(","):
        name, _, count = part.partition(":")
        out[name] = min(n, int(count)) if count else n
    return out


def write_reproduction(folder: str, kind: str, backend: str, outcome: Outcome, program, shrunk) -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{kind}-{backend}-{program.seed}.py")
    with open(path, "w") as f:
        f.write(f"# backend: {backend}\n# {outcome.status}: {outcome.detail}\n")
        f.write("# minimal program:\n" + "".join(f"#   {line}\n" for line in shrunk.source.splitlines()))
        f.write(f"PROGRAM = {shrunk!r}\n")
        f.write(f"ORIGINAL = {program!r}\n")
    return path


def _stop_by_signal(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="programs to generate")
    parser.add_argument("--backends", default="eager,aot_eager,inductor")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first program")
    parser.add_argument("--out", default="fuzz-reproductions", help="folder for minimal programs")
    parser.add_argument("--shrink-per-category", type=int, default=2)
    parser.add_argument("--training", choices=("random", "yes", "no"), default="random")
    parser.add_argument("--kind", choices=tuple(KINDS), default="tensor")
    parser.add_argument("--skip-known", action="store_true", help="python: leave out known bugs' variants")
    parser.add_argument("--reasons", type=int, default=0, help="print the N commonest break and fallback reasons")
    args = parser.parse_args(argv)
    backends = parse_backends(args.backends, args.n)
    available = set(ember.list_backends(exclude_tags=()))
    for name in [b for b in backends if b not in available]:
        print(f"backend {name!r} is not available here: not run", flush=True)
        del backends[name]
    signal.signal(signal.SIGTERM, _stop_by_signal)  # `timeout` still gets the report
    kind = KINDS[args.kind]
    counts = {b: collections.Counter() for b in backends}
    categories: collections.Counter = collections.Counter()
    shrunk_per_category: collections.Counter = collections.Counter()
    invalid = 0
    reasons: collections.Counter = collections.Counter()

    def tally(event: str, details: dict) -> None:
        if event in ("break", "fallback"):
            reasons[f"{event}: {re.sub(r'[0-9]+', 'N', str(details.get('reason')))[:150]}"] += 1
    start = time.time()
    done = 0
    try:
        for i in range(args.n):
            done = i + 1
            seed = args.seed + i
            try:
                program = kind.generate(seed, args)
            except Exception as exc:  # a generator bug: say so, go on with the next seed
                print(f"[seed {seed}] generator failed: {type(exc).__name__}: {exc}", flush=True)
                invalid += 1
                continue
            expected = kind.expect(program)
            if not kind.valid(expected):
                invalid += 1
                continue
            for backend, limit in backends.items():
                if i >= limit:
                    continue
                compiled_mod.OBSERVERS.append(tally)
                try:
                    outcome = kind.check(program, backend, expected)
                finally:
                    compiled_mod.OBSERVERS.remove(tally)
                ember.reset()
                c = counts[backend]
                c[outcome.status] += 1
                c["full_capture"] += outcome.full_capture
                c["backend_eager"] += outcome.backend_eager > 0
                c["graphs"] += outcome.graphs
                c["breaks"] += outcome.breaks
                c["fallbacks"] += outcome.fallbacks
                c["fallback_programs"] += outcome.fallbacks > 0
                if outcome.status in ("ok", "skipped"):
                    continue
                key = f"{backend} {kind.key(outcome)}"
                categories[key] += 1
                made_of = f" (variants: {', '.join(program.variants)})" if hasattr(program, "variants") else ""
                print(f"[seed {seed}] {key}{made_of}", flush=True)
                shrunk = program
                if shrunk_per_category[key] < args.shrink_per_category:
                    shrunk_per_category[key] += 1
                    shrunk = shrink(program, backend, log=lambda m: print(m, flush=True), check=kind.check)
                    ember.reset()
                path = write_reproduction(args.out, args.kind, backend, outcome, program, shrunk)
                print(f"  -> {path}\n" + "".join(f"     {line}\n" for line in shrunk.source.splitlines()),
                      flush=True)
            if (i + 1) % 50 == 0:
                print(f"... {i + 1} programs, {time.time() - start:.0f} s", flush=True)
    except KeyboardInterrupt:  # a long run stopped by hand still reports what it ran
        print("interrupted", flush=True)
    print(f"{done} programs generated (seeds {args.seed}..{args.seed + done - 1}), "
          f"{invalid} invalid (generator or eager failed), {time.time() - start:.0f} s")
    for backend, c in counts.items():
        ran = sum(c[s] for s in STATUSES if s != "skipped")
        print(f"{backend}: {ran} ran, {c['ok']} ok, {c['mismatch']} mismatched, {c['crash']} crashed, "
              f"{c['backend_error']} backend errors, {c['skipped']} skipped, "
              f"{c['full_capture']} captured as one graph and compiled, "
              f"{c['backend_eager']} run eagerly by the backend (a graph or a call); capture: "
              f"{c['graphs']} graphs, {c['breaks']} breaks, {c['fallbacks']} eager fallbacks "
              f"(in {c['fallback_programs']} programs)")
    for key, n in categories.most_common():
        print(f"  {n:5d}  {key}")
    if args.reasons:
        print("commonest break and fallback reasons (all backends):")
        for key, n in reasons.most_common(args.reasons):
            print(f"  {n:5d}  {key}")
    return 1 if categories else 0


if __name__ == "__main__":
    sys.exit(main())
