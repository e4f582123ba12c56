"""OpInfo tests: a compile cache kept across runs when ``EMBER_CACHE_DIR`` is set (a private
one otherwise), strict compilation, backend errors raised, and a JSON record of every case.

``EMBER_OPINFO_TIMEOUT`` bounds each case in full runs. The record (``EMBER_OPINFO_REPORT``, default ``$TMPDIR/ember_opinfo_results.json``) is what
``python -m tests.ops.report`` summarises.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile

import pytest

os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember_opinfo_tests_"))
os.environ["EMBER_INDUCTOR_STRICT"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

REPORT = os.environ.get("EMBER_OPINFO_REPORT", os.path.join(tempfile.gettempdir(), "ember_opinfo_results.json"))


def _worker() -> bool:
    """A pytest-xdist worker: its reports reach the controller, which writes the records."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _worker():
        open(REPORT, "w").close()


@pytest.fixture(autouse=True)
def _time_limit():
    """``EMBER_OPINFO_TIMEOUT`` seconds per case (full runs): a case that hangs fails instead."""
    seconds = int(os.environ.get("EMBER_OPINFO_TIMEOUT", "0"))
    if seconds <= 0:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"case took more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture(autouse=True)
def _compiled_code_only(monkeypatch: pytest.MonkeyPatch):
    """The compiled code itself is compared: no measured choice of eager (for these tests only;
    a module-level setting would reach every test of the session)."""
    monkeypatch.setenv("EMBER_INDUCTOR_EAGER_FALLBACK", "0")


@pytest.fixture(autouse=True)
def _strict_backend_errors():
    import ember

    saved = ember.config.suppress_errors
    ember.config.suppress_errors = False
    yield
    ember.config.suppress_errors = saved


def _outcome(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.failed and "XPASS(strict)" in str(report.longrepr):
        return "xpassed"
    return report.outcome


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call" and not (report.when == "setup" and report.skipped):
        return
    case = getattr(report, "opinfo_case", None)
    if case is None or _worker():
        return
    message = ""
    if report.failed or report.skipped:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)[-300:]
    record = {**case, "outcome": _outcome(report),
              "message": message.splitlines()[0][:300] if message else "", "seconds": round(report.duration, 3)}
    with open(REPORT, "a") as f:  # one JSON record a line, written as it comes: a cut run keeps its part
        f.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: object):
    outcome = yield
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "case" in callspec.params:
        outcome.get_result().opinfo_case = callspec.params["case"]._asdict()  # plain data: xdist sends it

