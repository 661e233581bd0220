"""A notebook session's runner in the real sandbox, driven through the executor's SessionHost and
the real supervisor (executor/sessions.py): state kept between cells, a jitted function compiled
once, a cell interrupted at its wall clock with the session alive, and cells that kill the runner
ending the session with their reason. Its state goes to a real Redis (the tests' own)."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

import pytest

from executor import events as ev
from executor import sessionstate
from executor.pool import RunnerPool
from executor.sandbox import Limits, get_launcher
from executor.sessions import SessionHost

from .conftest import BACKEND, UID_BASE

LIMITS = Limits(wall_s=6.0, cpu_s=3, memory_bytes=1024**3, output_bytes=64 * 1024,
                tmp_bytes=16 * 1024**2, pids=64)


@pytest.fixture(scope="module")
def host(redis_client):
    launcher = get_launcher(BACKEND, limits=LIMITS, uid_base=UID_BASE + 40)
    pool = RunnerPool(launcher, size=0, concurrency=1, sessions=3, session_cpu_s=60)
    host = SessionHost(redis_client=redis_client, name=f"test-{uuid.uuid4().hex[:6]}", launcher=launcher,
                       spawn=pool.spawn_session, release=pool.release)
    yield host
    host.stop_all("the tests ended")
    launcher.close()


def new_session(redis_client) -> str:
    session_id = str(uuid.uuid4())
    sessionstate.create(redis_client, session_id, idle_s=600)
    return session_id


def cell(host, session_id: str, code: str, limits: Limits = LIMITS, cancel_after: float | None = None):
    """Run one cell; (its events, its finished fields)."""
    events: list[dict] = []
    session, why_not = host.session_for(session_id, 600, limits)
    assert session is not None, why_not
    t0 = time.monotonic()
    finished = host.run_cell(
        session, code, {}, limits, lambda type_, **fields: events.append({"type": type_, **fields}),
        should_cancel=lambda: cancel_after is not None and time.monotonic() - t0 > cancel_after,
        tick=lambda: None, on_message=None, lookup=None)
    return events, finished


def text(events, kind=ev.STDOUT) -> str:
    return "".join(e["text"] for e in events if e["type"] == kind)


def test_state_lives_between_cells_and_a_jitted_function_compiles_once(host, redis_client):
    sid = new_session(redis_client)
    events, finished = cell(host, sid, "import jax, jax.numpy as jnp\n"
                                       "@jax.jit\ndef f(x):\n    return x * 2 + 1\nprint(f(jnp.arange(3)))\n")
    assert finished["status"] == ev.SUCCEEDED, finished
    assert "[1 3 5]" in text(events)
    assert sum(e["type"] == ev.COMPILED and e.get("name") == "f" for e in events) == 1
    events, finished = cell(host, sid, "y = f(jnp.arange(3.0, 6.0))\nprint(y.sum())\n")
    assert finished["status"] == ev.SUCCEEDED, finished
    assert "27.0" in text(events)
    # f was traced for int32 in the first cell; float32 here is a new specialisation, not a
    # recompilation of the first: and the same types again compile nothing at all.
    events, finished = cell(host, sid, "print(f(jnp.arange(3)) - 1)\n")
    assert finished["status"] == ev.SUCCEEDED
    assert "[0 2 4]" in text(events)
    assert not [e for e in events if e["type"] == ev.COMPILED], "the second call of f compiled again"
    shapes = [e for e in events if e["type"] == ev.SHAPES]
    assert shapes and "y" in shapes[-1]["names"] and "f" not in shapes[-1]["names"] or shapes
    state = sessionstate.read(redis_client, sid)
    assert state["state"] == sessionstate.IDLE and state["cells_run"] == 3
    assert "y" in state["names"] and state["memory_bytes"] > 10 * 1024**2


def test_a_cell_past_its_wall_clock_is_interrupted_and_the_session_keeps_its_state(host, redis_client):
    sid = new_session(redis_client)
    _, finished = cell(host, sid, "kept = 41\n")
    assert finished["status"] == ev.SUCCEEDED
    short = Limits(**{**LIMITS.as_dict(), "wall_s": 1.5})
    events, finished = cell(host, sid, "import time\nwhile True:\n    time.sleep(0.01)\n", limits=short)
    assert finished["status"] == ev.TIMED_OUT, finished
    assert "KeyboardInterrupt" in finished["message"] and "keeps its state" in finished["message"]
    assert any(e["type"] == ev.ERROR and e["exc_type"] == "KeyboardInterrupt" for e in events)
    events, finished = cell(host, sid, "print(kept + 1)\n")
    assert finished["status"] == ev.SUCCEEDED and text(events).strip() == "42"


def test_a_cancel_interrupts_the_cell_only(host, redis_client):
    sid = new_session(redis_client)
    cell(host, sid, "n = 7\n")
    _, finished = cell(host, sid, "while True:\n    pass\n", cancel_after=0.5)
    assert finished["status"] == ev.CANCELLED, finished
    events, finished = cell(host, sid, "print(n)\n")
    assert text(events).strip() == "7"


def test_a_cell_spinning_past_its_cpu_is_interrupted(host, redis_client):
    sid = new_session(redis_client)
    cell(host, sid, "m = 3\n")
    _, finished = cell(host, sid, "while True:\n    pass\n", limits=Limits(**{**LIMITS.as_dict(), "wall_s": 20.0}))
    assert finished["status"] == ev.LIMIT_EXCEEDED, finished
    assert "CPU" in finished["message"]
    events, _ = cell(host, sid, "print(m)\n")
    assert text(events).strip() == "3"


@pytest.mark.parametrize("code, words", [
    ("import os\nos._exit(3)\n", "exited with code 3"),
    ("import ctypes\nctypes.string_at(0)\n", "SIGSEGV"),
])
def test_a_cell_that_kills_its_runner_ends_the_session_and_says_so(host, redis_client, code, words):
    sid = new_session(redis_client)
    cell(host, sid, "a = 1\n")
    _, finished = cell(host, sid, code)
    assert finished["status"] in (ev.FAILED, ev.LIMIT_EXCEEDED), finished
    assert "the session ended with it" in finished["message"], finished
    if words:
        assert words in finished["message"]
    state = sessionstate.read(redis_client, sid)
    assert state["state"] == sessionstate.STOPPED and state["stopped_reason"]
    assert sid not in host.sessions
    session, why_not = host.session_for(sid, 600, LIMITS)
    assert session is None and why_not


def test_a_cell_out_of_memory_fails_alone_and_the_session_lives(host, redis_client):
    sid = new_session(redis_client)
    cell(host, sid, "c = 5\n")
    events, finished = cell(host, sid, "x = bytearray(4 * 1024**3)\n")
    assert finished["status"] == ev.FAILED, finished
    assert any(e["type"] == ev.ERROR and e["exc_type"] == "MemoryError" for e in events)
    events, finished = cell(host, sid, "print(c)\n")
    assert text(events).strip() == "5"


def test_an_idle_session_is_stopped_and_says_why(host, redis_client):
    sid = new_session(redis_client)
    cell(host, sid, "b = 2\n")
    host.sessions[sid].idle_s = 0.5
    time.sleep(0.6)
    host._look_at(host.sessions[sid])
    state = sessionstate.read(redis_client, sid)
    assert state["state"] == sessionstate.STOPPED and "idle" in state["stopped_reason"]
    assert sid not in host.sessions


def test_two_sessions_never_see_each_others_names(host, redis_client):
    one, two = new_session(redis_client), new_session(redis_client)
    cell(host, one, "secret = 'one'\n")
    events, finished = cell(host, two, "print(secret)\n")
    assert finished["status"] == ev.FAILED
    assert any(e["type"] == ev.ERROR and e["exc_type"] == "NameError" for e in events)
    for sid in (one, two):
        host.end(host.sessions[sid], "done")


def test_a_session_has_more_cpu_than_one_run(host, redis_client):
    """Each cell has its own CPU seconds: the session's runner is not held to one run's in all."""
    sid = new_session(redis_client)
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 2.0:\n    pass\nprint('ok')\n"
    # The wall clock is not what this is about: a busy machine may take three times the CPU
    # seconds in wall time, so each cell gets room for it while its CPU limit stays a run's.
    roomy = replace(LIMITS, wall_s=30.0)
    for _ in range(3):  # 6 CPU seconds in all, against a run's 3 (and the fork's 5 of set-up)
        events, finished = cell(host, sid, spin, limits=roomy)
        assert finished["status"] == ev.SUCCEEDED, finished
        assert text(events).strip() == "ok"


def test_a_forged_cell_done_does_not_end_the_cell(host, redis_client):
    """The cell's code can write on the event pipe; its "cell_done" is ignored while it runs on,
    so the cell ends when its code does, under its wall clock, and what it printed is its own."""
    sid = new_session(redis_client)
    forged = ("import os, time\nos.write(3, b'{\"type\": \"cell_done\", \"status\": \"succeeded\"}\\n')\n"
              "time.sleep(2.5)\nprint('late', flush=True)\n")
    events, finished = cell(host, sid, forged)
    assert finished["status"] == ev.SUCCEEDED, finished
    assert finished["wall_ms"] >= 2500
    assert "late" in text(events)
    events, finished = cell(host, sid, "print('next')\n")
    assert text(events).strip() == "next"



def test_first_cells_arriving_together_start_exactly_the_nodes_sessions(redis_client, monkeypatch):
    """Six sessions' first cells at once on a node of three: its slots are reserved before each
    runner starts, so exactly three start and three are told the node is full (and keep no
    claim on the node); a node that restarts stops the sessions it held, said so."""
    import threading

    from executor import settings as executor_settings

    monkeypatch.setattr(executor_settings, "MAX_SESSIONS", 3)
    launcher = get_launcher(BACKEND, limits=LIMITS, uid_base=UID_BASE + 50)
    pool = RunnerPool(launcher, size=0, concurrency=1, sessions=6, session_cpu_s=60)
    name = f"test-{uuid.uuid4().hex[:6]}"
    host = SessionHost(redis_client=redis_client, name=name, launcher=launcher, spawn=pool.spawn_session,
                       release=pool.release)
    ids = [new_session(redis_client) for _ in range(6)]
    barrier = threading.Barrier(6)
    outcomes: dict = {}

    def first_cell(sid: str) -> None:
        barrier.wait()
        outcomes[sid] = host.session_for(sid, 600, LIMITS)

    threads = [threading.Thread(target=first_cell, args=(sid,)) for sid in ids]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        started = [sid for sid, (session, _why) in outcomes.items() if session is not None]
        refused = {sid: why for sid, (session, why) in outcomes.items() if session is None}
        assert len(started) == 3 and host.count() == 3, outcomes
        assert all("holds the most sessions it may (3)" in why for why in refused.values()), refused
        assert all(sessionstate.read(redis_client, sid)["node"] is None for sid in refused)
        # The same node, started again: what it held is gone with its runners, and says so.
        again = SessionHost(redis_client=redis_client, name=name, launcher=launcher, spawn=pool.spawn_session,
                            release=pool.release)
        assert again.forget_held_before() == 3
        for sid in started:
            state = sessionstate.read(redis_client, sid)
            assert state["state"] == sessionstate.STOPPED and state["stopped_reason"] == "its node restarted"
    finally:
        host.stop_all("the tests ended")
        launcher.close()


# Every spelling of the runner's own modules, with its folder put back on sys.path: none imports.
IMPORTS_THE_RUNNER = """
import importlib, sys
sys.path[:0] = ["/opt/playground"]
refused = []
for name in ("runner", "runner.answers", "runner.common", "executor.runner.answers"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        refused.append(name)
print(len(refused), "refused")
"""


def test_no_cell_can_import_the_runners_modules_and_figures_still_draw(host, redis_client):
    for live in list(host.sessions.values()):  # the earlier tests' sessions hold the pool's slots
        host.end(live, "done")
    sid = new_session(redis_client)
    for _ in range(2):  # the first cell, and a later one of the same runner
        events, finished = cell(host, sid, IMPORTS_THE_RUNNER)
        assert finished["status"] == ev.SUCCEEDED, finished
        assert text(events) == "4 refused\n", events
    events, finished = cell(host, sid, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n")
    assert finished["status"] == ev.SUCCEEDED, finished
    assert [e.get("kind") for e in events if e["type"] == ev.DISPLAY] == ["figure"], events
    host.end(host.sessions[sid], "done")


def test_without_a_sandbox_a_cells_cpu_is_the_runners_own_reading(redis_client):
    """The unsandboxed launcher (an accelerator host without user namespaces) has no counters of its
    own: a cell's CPU is what its runner read across the cell, not missing, and not the process's
    whole life (as a reused chip's run reports it)."""
    launcher = get_launcher("none", limits=LIMITS)
    pool = RunnerPool(launcher, size=0, concurrency=1, sessions=1, session_cpu_s=60)
    plain = SessionHost(redis_client=redis_client, name=f"test-{uuid.uuid4().hex[:6]}", launcher=launcher,
                        spawn=pool.spawn_session, release=pool.release)
    try:
        sid = new_session(redis_client)
        spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}:\n    pass\n"
        _, first = cell(plain, sid, spin.format(s=0.3))
        _, second = cell(plain, sid, spin.format(s=0.05))
        assert first["status"] == second["status"] == ev.SUCCEEDED, (first, second)
        assert 300 <= first["cpu_ms"] < 1500, first
        assert 50 <= second["cpu_ms"] < first["cpu_ms"], second
    finally:
        plain.stop_all("the test ended")
        launcher.close()
