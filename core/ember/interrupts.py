"""A Ctrl-C during a compile reaches the user and leaves the process able to compile again.

Compiling imports modules lazily (triton, parts of torch (its own compiler's modules) that torch's
own tracing code imports on first use, ember's plugins). A ``KeyboardInterrupt`` raised in the
middle of such an import leaves half of a package behind: Python drops the module whose code was
interrupted but keeps the submodules it had finished, which still hold the dropped, half-made
objects (``module 'triton.backends' has no attribute 'compiler'``, ``partially initialized module``
of torch's tracer), so that every later compile in the process fails. Importing them again does
not mend it either: a finished module that registered operators (``TORCH_LIBRARY``) refuses to
run twice.

The same holds for starting a thread: an interrupt between ``Thread.start`` and the thread pool's
record of it (``ThreadPoolExecutor.submit``) leaves a worker that nobody wakes at exit, and the
process hangs when it ends.

So while ember compiles, SIGINT is taken by :func:`_on_sigint`: outside those sections it raises
``KeyboardInterrupt`` at once, as Python's own handler does; inside one it is held until the
section is over (polled every ``POLL_S``), then raised. The user's interrupt arrives a little
later, never lost and never swallowed, and no import is left half done. A handler the program
installed itself is left alone, as are compiles on other threads (signals reach the main one).
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import threading
import types
from typing import Any, Iterator

POLL_S = 0.02  # how often a held interrupt checks whether the section is over
_IMPORT_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
_THREAD_STARTS = (threading.Thread.start.__code__, concurrent.futures.ThreadPoolExecutor.submit.__code__)

_held = False  # an interrupt arrived during an import and waits for its end


def _unbreakable(frame: types.FrameType | None) -> bool:
    """Whether ``frame`` runs inside an import or a thread start (module docstring)."""
    while frame is not None:
        if frame.f_code.co_filename in _IMPORT_FILES or frame.f_code in _THREAD_STARTS:
            return True
        frame = frame.f_back
    return False


def _resend() -> None:
    if _held:
        os.kill(os.getpid(), signal.SIGINT)


def _on_sigint(signum: int, frame: types.FrameType | None) -> Any:
    global _held
    if _unbreakable(frame):
        _held = True
        timer = threading.Timer(POLL_S, _resend)
        timer.daemon = True
        timer.start()
        return None
    _held = False
    raise KeyboardInterrupt


@contextlib.contextmanager
def safe_interrupts() -> Iterator[None]:
    """Run the block with SIGINT held during imports and thread starts (module docstring); nests."""
    global _held
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield  # another thread, a handler of the program's own, or an enclosing compile's
        return
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is _on_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if _held:  # held past the block's end: the user's interrupt wins over its outcome
            _held = False
            raise KeyboardInterrupt
