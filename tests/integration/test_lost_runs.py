"""A worker killed mid-run: its run becomes lost (heartbeat watchdog), is not re-run, and the
next executor takes new runs normally."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_killed_workers_run_becomes_lost_and_is_not_rerun(live_stack):
    status, run = live_stack.post("/api/runs", {
        "code": "import time\nprint('working', flush=True)\ntime.sleep(60)\nprint('done')\n"})
    assert status == 201
    deadline = time.monotonic() + 30
    while "working" not in str(live_stack.get(f"/api/runs/{run['id']}")["events"]):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.05)

    killed_at = time.monotonic()
    live_stack.kill("executor")  # SIGKILL to the worker's whole process group

    finished = live_stack.wait_finished(run["id"], timeout=60)
    assert time.monotonic() - killed_at < 60
    assert finished["status"] == "lost"
    assert "stopped responding" in finished["message"]
    events = finished["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "finished" and events[-1]["status"] == "lost"
    assert sum(e["type"] == "started" for e in events) == 1  # never started twice

    # A new executor comes up, takes new runs, and never picks the lost one up again.
    live_stack.start_executor()
    live_stack.wait_online()
    status, again = live_stack.post("/api/runs", {"code": "print('next run works')"})
    assert status == 201
    after = live_stack.wait_finished(again["id"])
    assert after["status"] == "succeeded"
    assert live_stack.get(f"/api/runs/{run['id']}")["events"] == events
