"""The warm pool: runners are ready before a run, serve one run each, leave nothing for the
next, and a runner that dies while idle is replaced."""

from __future__ import annotations

import math
import os
import signal
import time

import pytest

from executor.events import SUCCEEDED
from executor.local import RunResult
from executor.pool import RunnerPool
from executor.runner import protocol
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


def run_on(pool: RunnerPool, code: str, taken: list | None = None) -> tuple[RunResult, float]:
    t0 = time.monotonic()
    runner = pool.acquire()
    acquired_s = time.monotonic() - t0
    if taken is not None:
        taken.append(runner)
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
    with pool._lock:
        waiting = list(pool._ready)
    taken: list = []
    result, acquired_s = run_on(pool, "import sys\nprint('jax' in sys.modules)\n", taken)
    assert result.status == SUCCEEDED, result
    assert result.stdout == "True\n"  # jax was imported before the run
    # One of those that waited, not one started for it (a fork of the template takes less than
    # a tenth of a second, so a time alone cannot tell); and no template was started meanwhile,
    # with room for a loaded machine keeping this thread from running for a while.
    assert taken[0] in waiting
    assert acquired_s < 1.0
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


@pytest.fixture
def idle_pool(launcher):
    """A pool on an idle node: its waiting runners warm up (two slots, three runners)."""
    idle = {"now": True}
    pool = RunnerPool(launcher, size=3, concurrency=2, idle=lambda: idle["now"])
    pool.idle_flag = idle
    pool.start()
    yield pool
    pool.stop()


def wait_warmth(pool: RunnerPool, warm: int, timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        with pool._lock:
            states = [r.warmth for r in pool._ready]
        if len(states) == pool.size and states.count("warm") == warm and "warming" not in states:
            return states
        assert time.monotonic() < deadline, f"the pool's runners are {states}"
        time.sleep(0.05)


SMALL_JIT = ("import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)\n"
             "print(f(jnp.ones((8, 8))).sum())\n")


def test_an_idle_node_warms_as_many_runners_as_it_has_slots_and_a_run_takes_one(idle_pool):
    assert sorted(wait_warmth(idle_pool, warm=2)) == ["cold", "warm", "warm"]
    assert len(idle_pool.warm_times_ms) == 2
    warm = [r for r in idle_pool._ready if r.warmth == "warm"]
    pid = idle_pool.launcher.runner_pid(warm[0].proc)
    assert os.getpriority(os.PRIO_PROCESS, pid) == 19  # warmed at the lowest priority
    result, _ = run_on(idle_pool, SMALL_JIT)
    assert result.status == SUCCEEDED, result
    # Taken first, and the warm-up's own compilation is not the run's: one compiled event, the
    # snippet's function, compiled once, with nothing said about recompiling.
    compiled = result.of("compiled")
    assert [(c["name"], c["compiles"], c["recompile"]) for c in compiled] == [("<lambda>", 1, None)], compiled
    assert float(result.stdout) == pytest.approx(64 * (8 * math.sin(1.0) + 1), rel=1e-5)
    assert not result.stderr, result.stderr


def test_a_taken_warm_runner_gets_its_priority_back_on_every_thread(idle_pool):
    wait_warmth(idle_pool, warm=2)
    runner = idle_pool.acquire()
    try:
        assert runner.warmth == "warm"
        pid = idle_pool.launcher.runner_pid(runner.proc)
        tids = os.listdir(f"/proc/{pid}/task")
        assert len(tids) > 1  # the backend's threads, started by the warm-up
        assert {os.getpriority(os.PRIO_PROCESS, int(t)) for t in tids} == {os.getpriority(os.PRIO_PROCESS, 0)}
    finally:
        idle_pool.release(runner)


def test_a_busy_node_warms_nothing_and_a_cold_runner_still_runs(idle_pool):
    idle_pool.idle_flag["now"] = False
    wait_warm(idle_pool, 3)
    time.sleep(0.5)
    with idle_pool._lock:
        assert [r.warmth for r in idle_pool._ready] == ["cold"] * 3
    result, _ = run_on(idle_pool, SMALL_JIT)
    assert result.status == SUCCEEDED, result
    assert len(result.of("compiled")) == 1


def test_a_run_that_takes_a_runner_still_warming_waits_for_it_and_is_not_disturbed(idle_pool):
    idle_pool.idle_flag["now"] = False
    wait_warm(idle_pool, 3)
    with idle_pool._lock:  # the refill thread would send it at the next look; here, at once
        for r in idle_pool._ready:
            r.warmth = "warm-sent-by-hand"
        first = idle_pool._ready[0]
        first.proc.stdin.write(protocol.request("warm"))
        first.proc.stdin.flush()
        first.warmth = "warming"
    runner = idle_pool.acquire()
    assert runner is first  # nothing better was there
    events: list[dict] = [{"type": "started", **runner.info}]
    try:
        finished = supervise(runner, idle_pool.launcher, {"code": SMALL_JIT, "options": {}}, LIMITS,
                             lambda type_, **f: events.append({"type": type_, **f}))
    finally:
        idle_pool.release(runner)
    result = RunResult(events + [{"type": "finished", **finished}])
    assert result.status == SUCCEEDED, result
    # Its late "warmed" is not the run's: no event of that type, no note about a bad event.
    assert "warmed" not in {e["type"] for e in result.events}
    assert "[playground]" not in result.stderr
    assert len(result.of("compiled")) == 1


def test_code_without_jax_takes_a_cold_runner_and_leaves_the_warm_ones(idle_pool):
    wait_warmth(idle_pool, warm=2)
    plain = idle_pool.acquire(warm=False)
    jax_run = idle_pool.acquire(warm=True)
    try:
        assert (plain.warmth, jax_run.warmth) == ("cold", "warm")
    finally:
        idle_pool.release(plain)
        idle_pool.release(jax_run)


def test_while_a_run_is_in_progress_a_taken_runner_is_replaced_only_when_too_few_wait(launcher):
    busy = {"now": False}
    pool = RunnerPool(launcher, size=3, concurrency=2, busy=lambda: busy["now"])
    pool.start()
    try:
        wait_warm(pool, 3)
        busy["now"] = True
        first = pool.acquire()  # two still wait, as many as the node has slots: not replaced yet
        time.sleep(1.5)  # a refill takes well under this here (bench.runners: refill)
        assert pool.idle_count() == 2
        second = pool.acquire()  # one waits, fewer than the slots: replaced at once
        wait_warm(pool, 2)
        assert pool.idle_count() == 2
        busy["now"] = False  # the runs ended: the pool fills
        pool.release(first)
        pool.release(second)
        pool.wake()
        wait_warm(pool, 3)
    finally:
        pool.stop()


def test_a_jax_run_takes_a_runner_still_warming_before_a_cold_one_and_other_code_the_cold_one(idle_pool):
    idle_pool.idle_flag["now"] = False
    wait_warm(idle_pool, 3)
    with idle_pool._lock:
        warming = idle_pool._ready[1]
        warming.proc.stdin.write(protocol.request("warm"))
        warming.proc.stdin.flush()
        warming.warmth = "warming"
    plain = idle_pool.acquire(warm=False)
    jax_run = idle_pool.acquire(warm=True)
    try:
        assert plain.warmth == "cold"
        assert jax_run is warming
    finally:
        idle_pool.release(plain)
        idle_pool.release(jax_run)


def wait_kinds(pool: RunnerPool, full: int, lean: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with pool._lock:
            kinds = [r.lean for r in pool._ready]
        if kinds.count(False) == full and kinds.count(True) == lean:
            return
        assert time.monotonic() < deadline, f"the pool's runners are {kinds} (lean: True)"
        time.sleep(0.05)


def test_code_that_needs_no_jax_takes_a_lean_runner_and_each_kind_is_refilled(launcher):
    from executor.pool import runner_for

    pool = RunnerPool(launcher, size=2, concurrency=1, lean_size=1)
    pool.start()
    try:
        wait_kinds(pool, full=2, lean=1)
        plain = pool.acquire(**runner_for("import numpy as np\nprint(np.arange(3).sum())\n"))
        plotted = pool.acquire(**runner_for("import matplotlib.pyplot as plt\nplt.plot([1, 2])\n"))
        jax_run = pool.acquire(**runner_for(SMALL_JIT))
        try:
            assert (plain.lean, plotted.lean, jax_run.lean) == (True, False, False)
            assert plain.info["device_count"] == jax_run.info["device_count"]  # what the full one found
            wait_kinds(pool, full=2, lean=1)  # each kind refilled to its own size
            # A graded run never takes a lean runner, nor a jax run one if no full one waits.
            assert runner_for("print(1)\n", graded=True) == {"warm": True, "lean": False}
            taken = [pool.acquire(warm=True) for _ in range(3)]
            assert [r.lean for r in taken] == [False] * 3
            for r in taken:
                pool.release(r)
            # and a lean run starts a lean runner when none waits, leaving the full ones
            wait_kinds(pool, full=2, lean=1)
            pool._stop.set()  # no refill from here
            pool._wake.set()
            pool._thread.join(timeout=10)
            extra = pool.acquire(lean=True, warm=False)
            other = pool.acquire(lean=True, warm=False)
            assert (extra.lean, other.lean) == (True, True)
            assert pool.idle_count() == 2 and not any(r.lean for r in pool._ready)
            pool.release(extra)
            pool.release(other)
        finally:
            for r in (plain, plotted, jax_run):
                pool.release(r)
        # The pool's device facts come from full runners only.
        assert "lean" not in pool.last_info
    finally:
        pool.stop()
