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


def test_the_watchdog_stores_what_a_vanished_executor_logged_but_never_batched(live_stack, redis_client):
    """An executor batches a run's events to the recorder every half second; one that vanishes
    (killed, cut off) between two batches leaves events in the run's log that the database never
    got. The watchdog's end comes with them, or the run would keep a hole once its log expires."""
    from datetime import timedelta

    from django.utils import timezone

    from executor import events as ev
    from playground.actions.runs import do_record_events
    from playground.models import Run

    run = Run.objects.create(code="print(1)", device="cpu", status="running")
    Run.objects.filter(id=run.id).update(created_at=timezone.now() - timedelta(minutes=1))
    run_id = str(run.id)
    log = ev.EventLog(redis_client)
    logged = [log.append(run_id, ev.make_event("queued"))]
    logged.append(log.append(run_id, ev.make_event("started", worker="cpu-gone@nowhere"), after=1))
    for n in range(3):
        logged.append(log.append(run_id, ev.make_event("stdout", text=f"line {n}\n"), after=len(logged)))
    do_record_events(run_id, logged[:2])  # the recorder got the first batch only
    redis_client.set(ev.claim_key(run_id), "cpu-gone@nowhere")  # claimed, and no pulse since

    deadline = time.monotonic() + 45
    while Run.objects.get(id=run_id).status != "lost":
        assert time.monotonic() < deadline, "the watchdog never gave the run up"
        time.sleep(0.5)
    stored = live_stack.get(f"/api/runs/{run_id}")["events"]
    assert [e["seq"] for e in stored] == [1, 2, 3, 4, 5, 6]
    assert [e.get("text") for e in stored if e["type"] == "stdout"] == ["line 0\n", "line 1\n", "line 2\n"]
    assert stored[-1]["type"] == "finished" and stored[-1]["status"] == "lost"


def test_an_executor_stops_a_run_whose_end_was_written_without_it(live_stack, redis_client):
    """A node cut off long enough for the watchdog to give its run up, then back: the run's log
    has its end, so nothing more of it will be shown. The node sees it with its next pulse (a
    quiet run sends nothing that the log could refuse) and stops the run, freeing its slot,
    rather than run it to its end for no one. Here the end is written as the watchdog writes it."""
    from executor import events as ev

    status, run = live_stack.post("/api/runs", {
        "code": "import time\nprint('working', flush=True)\ntime.sleep(40)\nprint('too late')\n"})
    assert status == 201
    run_id = run["id"]
    deadline = time.monotonic() + 30
    while "working" not in str(live_stack.get(f"/api/runs/{run_id}")["events"]):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.05)
    assert redis_client.exists(ev.alive_key(run_id))

    log = ev.EventLog(redis_client)
    last = int(redis_client.get(ev.seq_key(run_id)))
    assert log.append(run_id, ev.finished_event(ev.LOST, "given up by the watchdog"), after=last)
    ended = time.monotonic()
    # The executor deletes the run's alive key once it has let the run go.
    while redis_client.exists(ev.alive_key(run_id)):
        assert time.monotonic() - ended < 10, "the executor went on running a run that had ended"
        time.sleep(0.1)
    events = ev.decode_entries(redis_client.xrange(ev.log_key(run_id)))
    assert events[-1]["type"] == "finished" and events[-1]["status"] == "lost"
    assert "too late" not in str(events)
    assert live_stack.wait_finished(run_id, timeout=30)["status"] == "lost"
