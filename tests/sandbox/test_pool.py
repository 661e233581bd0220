"""The warm pool: runners are ready before a run, serve one run each, leave nothing for the
next, and a runner that dies while idle is replaced."""

from __future__ import annotations

import os
import signal
import time

import pytest

from executor.events import SUCCEEDED
from executor.local import RunResult
from executor.pool import RunnerPool
from executor.supervisor import supervise

from .conftest import LIMITS


@pytest.fixture
def pool(launcher):
    pool = RunnerPool(launcher, size=1, concurrency=1)
    pool.start()
    yield pool
    pool.stop()


def wait_warm(pool: RunnerPool, count: int = 1, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while pool.idle_count() < count:
        assert time.monotonic() < deadline, "the pool did not fill"
        time.sleep(0.05)


def run_on(pool: RunnerPool, code: str) -> tuple[RunResult, float]:
    t0 = time.monotonic()
    runner = pool.acquire()
    acquired_s = time.monotonic() - t0
    events = [{"type": "started", **runner.info}]
    try:
        finished = supervise(runner, pool.launcher, {"code": code, "options": {}}, LIMITS,
                             lambda type_, **f: events.append({"type": type_, **f}))
    finally:
        pool.release(runner)
    events.append({"type": "finished", **finished})
    return RunResult(events), acquired_s


def test_a_run_takes_a_runner_that_is_already_warm(pool):
    wait_warm(pool)
    result, acquired_s = run_on(pool, "import sys\nprint('jax' in sys.modules)\n")
    assert result.status == SUCCEEDED, result
    assert result.stdout == "True\n"  # jax was imported before the run
    assert acquired_s < 0.05
    wait_warm(pool)  # and the pool refills in the background


def test_no_state_passes_from_one_run_to_the_next(pool):
    wait_warm(pool)
    first, _ = run_on(pool, "import os, builtins\nopen('/tmp/left', 'w').write('x')\n"
                            "builtins.LEFT = 1\nos.environ['LEFT'] = '1'\nprint(os.getpid())\n")
    assert first.status == SUCCEEDED, first
    wait_warm(pool)
    second, _ = run_on(pool, "import os, builtins\n"
                             "print(os.path.exists('/tmp/left'), hasattr(builtins, 'LEFT'), 'LEFT' in os.environ)\n")
    assert second.status == SUCCEEDED, second
    assert second.stdout == "False False False\n"


def test_a_runner_that_dies_while_idle_is_replaced(pool):
    wait_warm(pool)
    idle = pool._ready[0]
    os.kill(idle.proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while not (pool.idle_count() == 1 and pool._ready[0] is not idle):
        assert time.monotonic() < deadline, "the dead runner was not replaced"
        time.sleep(0.05)
    result, _ = run_on(pool, "print('fine')\n")
    assert (result.status, result.stdout) == (SUCCEEDED, "fine\n"), result
