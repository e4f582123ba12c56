"""A Ctrl-C while the compile workers run (issue 45, item 14) must not leave the next run sharing
their pipes with the interrupted run's feeder threads, which would hand a kernel another
kernel's binary; and the workers, in a session of their own, survive a terminal's Ctrl-C."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ember_inductor.codegen.triton_compile import Job, WorkerPool


def _jobs(tmp_path: Path, n: int) -> list[Job]:
    return [Job(str(tmp_path / f"missing_{i}.py"), f"kernel_{i}", {}, {}, 4, 1, None) for i in range(n)]


def test_an_interrupted_run_leaves_the_next_run_its_own_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = WorkerPool(2)
    real_join = threading.Thread.join
    interrupted = []

    def join(self: threading.Thread, *args, **kwargs) -> None:
        if not interrupted:  # Ctrl-C while the main thread waits for the feeders
            interrupted.append(self)
            raise KeyboardInterrupt
        return real_join(self, *args, **kwargs)

    try:
        monkeypatch.setattr(threading.Thread, "join", join)
        with pytest.raises(KeyboardInterrupt):
            pool.run(_jobs(tmp_path, 300))
        monkeypatch.undo()
        jobs = _jobs(tmp_path, 40)
        results: list = []
        runner = threading.Thread(target=lambda: results.extend(pool.run(jobs)), daemon=True)
        runner.start()
        runner.join(timeout=120)
        assert not runner.is_alive(), "the next run hangs on pipes the interrupted run still reads"
        for i, (binary, error) in enumerate(results):  # each job's own answer
            assert binary is None and f"missing_{i}.py" in error, (i, error)
    finally:
        pool.close()
