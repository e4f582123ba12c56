"""Latency-bound pointwise loops computed as several independent streams in one loop body.

A pointwise body whose expensive functions feed each other (``sigmoid(sigmoid(x))``, a Mish's
``tanh(log1p(exp(x)))``, the benchmark suite's four chained sigmoids) is one long chain of
dependent vector operations per vector of elements. The core's out-of-order window holds the
operations of about two such vectors at once, so most cycles wait on a result. Written as
``STREAMS`` copies of the body over ``STREAMS`` parts of the range, statement by statement
interleaved, the copies are independent in program order and fill the cycles: measured in a C
loop on the project's Xeon, four copies did best on four chained sigmoids (better than 2 or 8),
and ``tanh(tanh(tanh(x) * 2) * 2)``, ``sigmoid(sigmoid(x))`` and ``exp(exp(x))`` all gained (the
suite's ``pointwise chain`` row, ``benchmarks/run.py``). A body of independent expensive
functions is bound by their throughput instead, and more live values only spill: issue 26's
``(sin(x) * 2 + cos(x)).relu() * sigmoid(x) - 1`` got slower with 4 copies, so such a body (a
chain of one expensive function) keeps one. Each element is computed by the same
expression as before: the bits are the same.
"""
from __future__ import annotations

import re

STREAMS = 4  # copies of a latency-bound body
MIN_CHAIN = 2  # expensive functions in a row (each feeding the next) that make a body latency-bound

#: a call of an expensive function in generated C++ (also what a row kernel keeps across stages: cpp)
EXPENSIVE = re.compile(r"\be_(expm1|log|log1p|log2|log10|tanh|erf|erfc|sin|cos|tan|pow|exp|sigmoid)(?:<\w+>)?\(")
_DECLARED = re.compile(r"\b(?:auto|int64_t|const bool)\s+(\w+)\s*=")
_VALUE = re.compile(r"^auto (t\d+) = (.*);$")
_STORE = re.compile(r"^out_ptr\d+\[.*\] = .*;$")
TEMP = re.compile(r"\bt\d+\b")  # a temporary of generated C++


def chain_length(body: list[str]) -> int:
    """The most expensive functions along one chain of values of ``body`` (each the argument,
    directly or through cheap operations, of the next)."""
    depth: dict[str, int] = {}
    for line in body:
        m = _VALUE.match(line)
        if m:
            before = max((depth.get(t, 0) for t in TEMP.findall(m.group(2))), default=0)
            depth[m.group(1)] = before + (1 if EXPENSIVE.search(m.group(2)) else 0)
    return max(depth.values(), default=0)


def streams_for(body: list[str]) -> int:
    """How many streams the inner loop over ``body`` runs: ``STREAMS`` for a latency-bound body
    made only of values and stores to distinct places (no lambda of a masked load, no indirect
    index, whose stores could meet), else 1."""
    for line in body:
        if not (_VALUE.match(line) or _STORE.match(line) or line.startswith("em_far |= ")):
            return 1
        if "[&]" in line or re.search(r"\bind\d+\b", line):
            return 1
    return STREAMS if chain_length(body) >= MIN_CHAIN else 1


def interleaved(body: list[str], var: str, streams: int, part: str) -> list[str]:
    """``body`` for ``streams`` elements at once, ``var``, ``var + part``, ``var + 2 * part``,
    ..., statement by statement; each copy's values renamed (``t5`` -> ``t5_1``)."""
    declared = {name for line in body for name in _DECLARED.findall(line)}
    names = re.compile(r"\b(" + "|".join(map(re.escape, sorted(declared))) + r")\b") if declared else None
    index = re.compile(rf"\b{re.escape(var)}\b")
    out = []
    for line in body:
        for s in range(streams):
            copy = line
            if s:
                copy = index.sub(f"({var} + {s} * {part})", copy)
                if names is not None:
                    copy = names.sub(lambda m: f"{m.group(1)}_{s}", copy)
            out.append(copy)
    return out
