"""``ember.set_stance``: what compiled functions do when called, as ``torch.compiler.set_stance``.

- ``"default"``: a call whose guards miss compiles, as usual.
- ``"force_eager"``: every compiled function runs its own Python code; cached entries are not
  used and nothing compiles.
- ``"eager_on_recompile"``: an entry whose guards pass still runs; a call that would compile
  (a recompile, or a function's first compile) runs eagerly instead.
- ``"fail_on_recompile"``: a call that would compile raises ``RuntimeError`` naming the function
  and the guards that failed (a function's first compile too, as torch.compile's does).

Usable as a call (the stance holds until the next call), as a context manager and as a decorator
(the stance holds inside the block or the decorated function, and the one before comes back).
``skip_guard_eval_unsafe`` is accepted for torch's signature, but guards still run in full: ember's
guard also gathers the graph's inputs, so skipping it saves nothing. The stance is process-wide,
as torch's is.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")

F = TypeVar("F", bound=Callable[..., Any])


class _State:
    """The current stance; the wrappers of compiled functions read ``force_eager`` on each call."""

    name = "default"
    force_eager = False


STATE = _State()


def _set(name: str) -> str:
    previous = STATE.name
    STATE.name = name
    STATE.force_eager = name == "force_eager"
    return previous


class set_stance:  # noqa: N801 (a function to its users, as torch.compiler.set_stance)
    """Set the stance of every compiled function (module docstring)."""

    __ember_disable__ = True  # called from compiled code: a graph break, then it runs as it is

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False) -> None:
        if stance not in STANCES:
            raise ValueError(f"unknown stance {stance!r}; expected one of {', '.join(map(repr, STANCES))}")
        self.stance = stance
        self.skip_guard_eval_unsafe = skip_guard_eval_unsafe
        self.previous = _set(stance)

    def __enter__(self) -> None:
        _set(self.stance)

    def __exit__(self, *exc: object) -> None:
        _set(self.previous)

    def __call__(self, fn: F) -> F:
        _set(self.previous)  # as a decorator, the stance holds only while ``fn`` runs
        stance = self.stance

        @functools.wraps(fn)
        def with_stance(*args: Any, **kwargs: Any) -> Any:
            previous = _set(stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _set(previous)

        return with_stance  # type: ignore[return-value]


def recompile_error(function: str, reasons: list[str]) -> RuntimeError:
    """The error of a compile under ``"fail_on_recompile"``."""
    message = f"ember: detected a recompile while the stance is 'fail_on_recompile': {function}"
    if reasons:
        message += "\n    triggered by the guard failure(s):\n" + "\n".join(f"    - {r}" for r in reasons)
    return RuntimeError(message)
