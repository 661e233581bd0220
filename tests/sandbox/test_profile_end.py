"""A profiled run ends when its code does: the runner says "ended" before it stops the profiler,
the supervisor sends the run's end then (``end_early``), its trace's URL answering "building",
and follows the runner on for its raw profile alone, within PROFILE_STOP_S. Runners scripted on
the event pipe, so that the profiler's stop can be made as slow as a pmap's 80,000 events make it,
or never end."""

from __future__ import annotations

import base64
import json
import textwrap
import time

import pytest

from executor import supervisor as supervisor_module
from executor.sandbox import DirectLauncher
from executor.sessions import CellSupervision
from executor.supervisor import run_request, supervise, wait_ready

from .conftest import LIMITS, fake_runner

RAW = b"the raw profile's bytes"


def scripted(after_ended: str, *, end: str = "exit", ended: bool = True) -> str:
    """A runner that prints "1", says "ended" (unless not ``ended``), runs ``after_ended``, then
    says ``end`` ("exit", or a session's "cell_done" and back to its stdin)."""
    tail = ('say({"type": "cell_done", **DONE}); sys.stdin.readline(); time.sleep(30)' if end == "cell_done" else
            'say({"type": "exit", **DONE}); [os.close(f) for f in (0, 1, 2, fd)]; time.sleep(30)')
    return textwrap.dedent(f"""
        import base64, json, os, sys, time
        fd = int(sys.argv[1])
        def say(message):
            os.write(fd, json.dumps(message).encode() + b"\\n")
        DONE = {{"status": "succeeded", "cpu_ms": 12.5, "host_peak_kb": 2048}}
        say({{"type": "ready", "warmup_ms": 1}})
        sys.stdin.readline()
        os.write(1, b"1\\n")
        if {ended!r}:
            say({{"type": "ended", **DONE}})
        {after_ended}
        {tail}
    """)


def hand_over(delay_s: float) -> str:
    raw = base64.b64encode(RAW).decode()
    return f'time.sleep({delay_s}); say({{"type": "profile_trace", "raw": "{raw}", "profile_ms": {delay_s * 1000}}})'


class Keeper:
    """The executor's ProfileKeeper as the supervisor sees it, writing down what it is told."""

    def __init__(self):
        self.told: list[tuple] = []

    def __call__(self, trace: bytes) -> str:
        self.told.append(("now", trace))
        return "/now"

    def later(self, bundle: bytes) -> str:
        self.told.append(("later", bundle))
        return "/later"

    def reserve(self) -> str:
        self.told.append(("reserve", time.monotonic()))
        return "/api/runs/r/profile"

    def give(self, bundle: bytes, stop_ms=None) -> None:
        self.told.append(("give", bundle, stop_ms, time.monotonic()))

    def build(self) -> None:
        self.told.append(("build", time.monotonic()))

    def fail(self, state: dict) -> None:
        self.told.append(("fail", state, time.monotonic()))


def run_scripted(script: str, *, profile: bool = True, early: bool = True, cell: bool = False):
    """(finished, events, when end_early was called (None: not), the keeper, how long it all took)."""
    runner = fake_runner(script)
    launcher = DirectLauncher(limits=LIMITS)
    events, ended_at, keeper = [], [], Keeper()
    options = {"profile": True} if profile else {}

    def end_early(finished):
        ended_at.append((time.monotonic(), finished))
        events.append({"type": "finished", **finished})

    def emit(type_, **fields):
        events.append({"type": type_, **fields})

    try:
        wait_ready(runner, 10)
        t0 = time.monotonic()
        if cell:
            supervision = CellSupervision(runner, launcher, LIMITS, emit, should_cancel=lambda: False,
                                          tick=lambda: None, tick_every_s=0.2, keep_profile=keeper,
                                          end_early=end_early if early else None, cpu_s=3,
                                          should_end=lambda: False)
            finished, session_ended = supervision.run_cell({"code": "print(1)", "options": options, "fresh": True})
            assert session_ended is None
        else:
            finished = supervise(runner, launcher, run_request("print(1)", options, ""), LIMITS, emit,
                                 keep_profile=keeper, end_early=end_early if early else None)
        took = time.monotonic() - t0
    finally:
        launcher.cleanup(runner.proc)
        runner.proc.kill()
        runner.proc.wait()
        runner.close()
    return finished, events, (ended_at[0][0] - t0 if ended_at else None), keeper, took, ended_at


@pytest.mark.parametrize("cell", [False, True], ids=["run", "chip's kept runner (a cell)"])
def test_a_profiled_run_ends_with_its_code_and_its_profile_is_handed_over_after(cell):
    finished, events, ended_after, keeper, took, ended_at = run_scripted(
        scripted(hand_over(1.5), end="cell_done" if cell else "exit"), cell=cell)
    assert finished["status"] == "succeeded", finished
    # Its end went out at "ended", 1.5 s before the profile came; the run's wall clock stops there.
    assert ended_after is not None and ended_after < 1.0 and finished["wall_ms"] < 1000, (ended_after, finished)
    assert took >= 1.5
    assert ended_at[0][1] is finished  # one end, the one returned: not logged twice
    # Output, then the profile's URL (building), then the end; nothing after it.
    assert [e["type"] for e in events] == ["stdout", "profile", "finished"], events
    assert events[1] == {"type": "profile", "url": "/api/runs/r/profile", "building": True}
    # What the runner read of itself stands where there is no sandbox to count.
    assert finished["cpu_ms"] == 12.5 and finished["peak_memory_kb"] == 2048
    # The raw profile went to the keeper after the end, with what its stop took.
    kinds = [t[0] for t in keeper.told]
    assert kinds == ["reserve", "give", "build"], keeper.told
    assert keeper.told[1][1] == RAW and keeper.told[1][2] == 1500
    assert keeper.told[1][3] > ended_at[0][0]


def test_a_runner_that_never_hands_its_profile_over_is_stopped_and_its_trace_says_why(monkeypatch):
    monkeypatch.setattr(supervisor_module, "PROFILE_STOP_S", 1.0)
    finished, events, ended_after, keeper, took, _ = run_scripted(scripted("time.sleep(60)"))
    # The run stands as it ended; the runner was stopped a second after, not at its wall clock.
    assert finished["status"] == "succeeded" and ended_after < 1.0, finished
    assert 1.0 <= took < LIMITS.wall_s, took
    assert [e["type"] for e in events] == ["stdout", "profile", "finished"], events
    assert [t[0] for t in keeper.told] == ["reserve", "fail"]
    assert "stopping the profiler took over 1 s" in keeper.told[1][1]["error"]


def test_a_profile_that_failed_after_the_end_is_said_where_its_url_answers():
    why = "the profiler could not start: no"
    finished, events, _, keeper, _, _ = run_scripted(scripted(f'say({{"type": "profile_trace", "error": "{why}"}})'))
    assert finished["status"] == "succeeded"
    assert [t[0] for t in keeper.told] == ["reserve", "fail"] and keeper.told[1][1] == {"error": why}


@pytest.mark.parametrize("what", ["not profiled", "no end_early"])
def test_where_a_run_cannot_end_early_its_ended_changes_nothing(what):
    """A run that asked for no profile (a snippet writing "ended" itself), or a caller that logs the
    end itself (executor.local): the run ends at its exit, its profile kept as before."""
    finished, events, ended_after, keeper, took, _ = run_scripted(
        scripted(hand_over(1.0)), profile=what != "not profiled", early=what != "no end_early")
    assert ended_after is None and finished["status"] == "succeeded"
    assert took >= 1.0 and finished["wall_ms"] >= 1000, finished
    if what == "not profiled":  # a profile it did not ask for is dropped
        assert keeper.told == [] and "profile" not in [e["type"] for e in events]
    else:
        assert [t[0] for t in keeper.told] == ["later"]
        assert [e["type"] for e in events] == ["stdout", "profile"]


def test_a_second_ended_is_ignored():
    twice = 'say({"type": "ended", "status": "failed"}); ' + hand_over(0.2)
    finished, events, _, keeper, _, ended_at = run_scripted(scripted(twice))
    assert len(ended_at) == 1 and finished["status"] == "succeeded"
    assert [e["type"] for e in events].count("finished") == 1
    assert [t[0] for t in keeper.told] == ["reserve", "give", "build"]
    assert json.dumps(events)  # plain data, as the log takes it


class FullKeeper(Keeper):
    """A keeper whose node has MAX_WAITING traces waiting to be built: ``reserve`` refuses."""

    def reserve(self) -> str:
        self.told.append(("reserve refused",))
        raise RuntimeError("8 traces are waiting to be built on this node")


def test_a_trace_refused_at_the_early_end_is_not_given_to_the_keeper_after(monkeypatch):
    monkeypatch.setitem(globals(), "Keeper", FullKeeper)  # run_scripted's keeper
    finished, events, ended_after, keeper, _, _ = run_scripted(scripted(hand_over(0.2)))
    assert finished["status"] == "succeeded" and ended_after is not None
    profile = [e for e in events if e["type"] == "profile"]
    assert profile and "could not be kept" in profile[0]["error"], events
    assert [t[0] for t in keeper.told] == ["reserve refused"], keeper.told


def test_a_profile_line_of_tens_of_megabytes_is_read_in_a_moment():
    """The event pipe's line is split once its end has come, not at every 64 KiB read: a 48 MiB
    raw profile (base64: 64 MiB) took 15 s to read when each read copied and scanned the line."""
    big = 'say({"type": "profile_trace", "raw": "QUFB" * (15 * 1024**2)})'  # 45 MiB of "AAA"
    finished, events, ended_after, keeper, took, _ = run_scripted(scripted(big))
    assert finished["status"] == "succeeded" and ended_after < 1.0
    assert [t[0] for t in keeper.told] == ["reserve", "give", "build"], keeper.told
    assert keeper.told[1][1] == b"AAA" * (15 * 1024**2)
    assert took < 10, took


def test_a_keeper_that_cannot_reach_redis_says_why_as_a_refused_reservation(monkeypatch):
    """``reserve``'s contract, which the early end relies on: RuntimeError, saying why, for a
    Redis that cannot be reached as for a full queue; the run then stands without its trace."""
    import types

    import redis

    from executor.profiles import ProfileKeeper

    class Down:
        def set(self, *args, **kwargs):
            raise redis.exceptions.ConnectionError("Connection refused")

    executor = types.SimpleNamespace(redis=Down(), profile_builder=types.SimpleNamespace(waiting=lambda: 0))
    keeper = ProfileKeeper(executor, "r-down")
    with pytest.raises(RuntimeError, match="Redis could not be told: Connection refused"):
        keeper.reserve()
    assert keeper.waiting is False
