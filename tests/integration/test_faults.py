"""Faults the live stream survives, through the real processes: Redis restarting under a running
run and an open socket, recorder batches that keep failing, and a watchdog pass that meets a run
it cannot settle. (A SIGKILLed executor is in test_lost_runs.py; daphne restarting under an open
page in tests/browser/test_live_stream.py.)"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest

from bench.stack import ROOT, RedisServer, Stack
from executor import events as ev
from executor import submit
from tests.conftest import stack_env

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stack_on_own_redis(own_redis, tmp_path_factory):
    """A stack on the Redis above and a database of its own: its watchdog must not meet the
    runs of the suite's stack (whose keys are in another Redis), nor theirs its runs."""
    tmp = tmp_path_factory.mktemp("fault-stack")
    env = stack_env(own_redis.url, DATABASE_URL=f"sqlite:///{tmp / 'fault.sqlite3'}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    stack = Stack.launch(env, tmp)
    try:
        yield stack
    finally:
        stack.stop()


def first_successful_run(stack: Stack, timeout: float = 90) -> float:
    """Seconds until a new run is accepted and succeeds."""
    t0 = time.monotonic()
    while True:
        assert time.monotonic() - t0 < timeout, "no run succeeded after the restart"
        try:
            status, created = stack.post("/api/runs", {"code": "print('back')"})
        except OSError:
            status = None
        if status == 201:
            finished = stack.wait_finished(created["id"], timeout=timeout)
            assert finished["status"] == "succeeded", finished
            return time.monotonic() - t0
        assert status in (None, 503), (status, created)  # "try again", never a 500
        time.sleep(0.2)


def test_a_redis_restart_is_survived_by_every_process_and_the_open_page(stack_on_own_redis, own_redis):
    stack = stack_on_own_redis
    status, created = stack.post("/api/runs", {
        "code": "import time\nprint('before', flush=True)\ntime.sleep(8)\nprint('after', flush=True)\n"})
    assert status == 201
    run_id = created["id"]
    watched = {}
    watcher = threading.Thread(target=lambda: watched.update(w=stack.watch(run_id, timeout=120)))
    watcher.start()
    deadline = time.monotonic() + 30
    while "before" not in str(stack.get(f"/api/runs/{run_id}")["events"]):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.05)

    own_redis.restart()  # forgets everything: queues, logs, heartbeats, claims
    recovered_s = first_successful_run(stack)
    watcher.join(120)

    # The run that was running went on and ended normally; the open socket saw all of it once.
    w = watched["w"]
    assert w.finished and w.finished["status"] == "succeeded", w.events
    assert w.text() == "before\nafter\n"
    assert [e["seq"] for e in w.events] == list(range(1, len(w.events) + 1))
    stored = stack.wait_finished(run_id, timeout=60)
    assert stored["status"] == "succeeded"
    assert [e["seq"] for e in stored["events"]] == [e["seq"] for e in w.events]
    print(f"first successful run {recovered_s:.1f} s after the restart")


def test_failing_recorder_batches_hold_up_no_other_run(live_stack, redis_client):
    from web.celery import app

    for n in range(10):  # each fails and is retried for minutes
        app.send_task("recorder.record_events", args=[f"not-a-run-{n}", [{"seq": 1, "type": "stdout", "text": "x"}]],
                      queue="record")
        # The same on the recorder's stream: the read that brings them commits the other runs.
        submit.send_batch(redis_client, "record", f"not-a-run-{n}", [{"seq": 1, "type": "stdout", "text": "x"}])
    t0 = time.monotonic()
    status, created = live_stack.post("/api/runs", {"code": "print('recorded')"})
    assert status == 201
    finished = live_stack.wait_finished(created["id"], timeout=30)
    assert finished["status"] == "succeeded"
    assert "recorded" in str(finished["events"])
    assert time.monotonic() - t0 < 20


def test_a_run_the_watchdog_cannot_settle_does_not_stop_it_reaping_others(live_stack, redis_client):
    from django.utils import timezone

    from playground.models import Run, RunEvent

    long_ago = timezone.now() - timedelta(minutes=5)

    def make_run(status: str) -> str:
        run = Run.objects.create(code="print(1)", device="cpu", status=status)
        Run.objects.filter(id=run.id).update(created_at=long_ago)
        RunEvent.objects.create(run=run, seq=1, type="queued", data={"seq": 1, "type": "queued"})
        return str(run.id)

    poisoned = [make_run("running") for _ in range(3)]
    for run_id in poisoned:  # a finished log whose entries cannot be read
        redis_client.xadd(ev.log_key(run_id), {"e": b"\xff not json"}, id="0-2")
        redis_client.set(ev.done_key(run_id), 2)
    dead = make_run("running")
    redis_client.set(ev.claim_key(dead), "cpu-gone@nowhere")  # claimed, and no pulse since

    deadline = time.monotonic() + 45
    while Run.objects.get(id=dead).status != "lost":
        assert time.monotonic() < deadline, "the watchdog never reaped the dead run"
        time.sleep(0.5)
    assert "stopped responding" in Run.objects.get(id=dead).message
    for run_id in poisoned:
        assert Run.objects.get(id=run_id).status == "running"  # left for a person to look at
        Run.objects.filter(id=run_id).update(status="failed")  # let the test end cleanly
        redis_client.delete(ev.log_key(run_id), ev.done_key(run_id))
