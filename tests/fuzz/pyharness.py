"""Runs a ``PyProgram``'s eager twin and its compiled twin call by call and says how they differ.

Before each call both twins get the same mutations, each on its own state; after it, the outputs,
the whole state (``pystate.compare``) and the gradients must agree. Statuses are the tensor
fuzzer's (``harness.Outcome``): ok, mismatch, crash, backend_error, invalid (the eager twin raises
or differs from a second eager twin: the program depends on something other than its state).
"""
from __future__ import annotations

from typing import Any

from ember.errors import BackendCompilerFailed
from tests.fuzz.harness import Observer, Outcome
from tests.fuzz.pyprogram import PyProgram, Twin
from tests.fuzz.pystate import compare


def expect(program: PyProgram) -> bool:
    """Whether ``program`` is a valid test: two eager twins run every call alike."""
    return check(program, None).status == "ok"


def check(program: PyProgram, backend: Any, expected: Any = None) -> Outcome:
    """Run ``program``'s eager twin and its twin compiled with ``backend`` (a name, a compiler
    callable, or None for a second eager twin), comparing them after each call. ``expected`` is
    unused (the eager twin runs alongside, call by call); it keeps ``harness.check``'s signature."""
    try:
        eager = Twin(program)
    except Exception as exc:
        return Outcome("invalid", f"setup raises {type(exc).__name__}: {exc}")
    other = Twin(program, backend, role="compiled" if backend is not None else "eager_again")
    with Observer() as observer:
        for k in range(program.calls):
            try:
                want = eager.call(k)
            except Exception as exc:
                return Outcome("invalid", f"call {k}: eager raises {type(exc).__name__}: {exc}")
            try:
                got = other.call(k)
            except BackendCompilerFailed as exc:
                return Outcome("backend_error", f"call {k}: {str(exc).splitlines()[0]}", **observer.counts())
            except Exception as exc:
                detail = f"call {k}: {type(exc).__name__}: {str(exc).strip()}"
                return Outcome("crash" if backend is not None else "invalid", detail, **observer.counts())
            if (d := compare(eager, want, other, got)):
                return Outcome("mismatch" if backend is not None else "invalid", f"call {k}: {d}",
                               **observer.counts())
    return Outcome("ok", "", **observer.counts())
