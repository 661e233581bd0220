"""A class's worth of people at once, through daphne (this file's own stack, behind one trusted
proxy so that each person is an address of their own, fair shares on): every websocket carries
its run to ``finished`` and then closes, every run is stored, a person's share is back as soon as
their run ends (not when the recorder stores it), and a socket whose run has a hole it cannot
fill yet waits for it instead of skipping it."""

from __future__ import annotations

import json
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench.record import one_client
from tests.conftest import own_stack

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def burst_stack(django_db_setup, django_db_blocker, tmp_path_factory):
    with own_stack("burst", 10, tmp_path_factory, RUN_MAX_ACTIVE_PER_CLIENT="4", RUN_BUDGET_S_PER_HOUR="1800",
                   RUN_QUEUE_MAX="500", TRUSTED_PROXIES="1", EXECUTOR_CONCURRENCY="2") as stack:
        yield stack


@pytest.fixture(scope="module")
def burst(burst_stack):
    """200 people press Run on the same code at once, 64 sockets open at a time."""
    with ThreadPoolExecutor(64) as pool:
        return list(pool.map(lambda i: one_client(burst_stack, f"10.20.{i // 250}.{i % 250 + 1}"), range(200)))


def test_every_run_of_a_burst_is_admitted_and_stored(burst):
    refused = [r for r in burst if "refused" in r]
    assert not refused, refused[:3]
    assert all(r.get("api_ended_wall") for r in burst), "a run the API never said had ended"


def test_every_socket_of_a_burst_ends_with_finished(burst):
    early = [r for r in burst if "run" in r and r["early_close"]]
    assert not early, f"{len(early)} sockets closed before 'finished': {early[:3]}"
    assert {r["close_code"] for r in burst if "run" in r} == {1000}


def test_a_share_is_back_when_the_run_ends_even_while_the_recorder_is_stopped(burst_stack):
    import redis

    from executor import shares

    client = redis.Redis.from_url(burst_stack.env["REDIS_URL"])
    burst_stack.kill("recorder", signal.SIGTERM)
    try:
        status, answer, _ = burst_stack.post_as("10.21.0.1", "/api/runs", {"code": "print('quick')"})
        assert status == 201, answer
        watched = burst_stack.watch(answer["id"], timeout=60)
        assert watched.finished["status"] == "succeeded"
        deadline = time.monotonic() + 5
        while client.exists(shares.client_key(answer["id"])):
            assert time.monotonic() < deadline, "the share was not given back at the run's end"
            time.sleep(0.05)
        assert burst_stack.fetch(f"/api/runs/{answer['id']}")[1]["status"] == "queued"  # nothing stored yet
        assert client.zcard(shares.active_key("10.21.0.1")) == 0
    finally:
        burst_stack.start_recorder()
    deadline = time.monotonic() + 60
    while burst_stack.fetch(f"/api/runs/{answer['id']}")[1]["status"] != "succeeded":
        assert time.monotonic() < deadline, "the restarted recorder did not store the run"
        time.sleep(0.2)


def test_a_hole_the_database_does_not_have_yet_is_waited_for(burst_stack):
    """A run whose log is gone (a Redis that restarted) and whose second event is not stored yet:
    the socket sends the first, waits, and sends the second and the rest once they are stored."""
    import threading

    from executor.runner import protocol
    from playground.models import Run, RunEvent

    run = Run.objects.create(id=uuid.uuid4(), code="print(1)", device="cpu", status="succeeded")
    body = [{"seq": 1, "type": "queued", "ts": 1.0}, {"seq": 2, "type": "started", "ts": 1.1, "worker": "w"},
            {"seq": 3, "type": "stdout", "ts": 1.2, "text": "1\n"},
            {"seq": 4, "type": "finished", "ts": 1.3, **protocol.finished_fields("succeeded")}]
    for e in (body[0], body[2], body[3]):
        RunEvent.objects.create(run=run, seq=e["seq"], type=e["type"], data=e)

    def store_the_second_later():
        time.sleep(1.5)
        RunEvent.objects.create(run=run, seq=2, type="started", data=body[1])

    late = threading.Thread(target=store_the_second_later)
    late.start()
    try:
        watched = burst_stack.watch(str(run.id), timeout=30)
    finally:
        late.join()
    assert [e["seq"] for e in watched.events] == [1, 2, 3, 4], json.dumps(watched.events)
    assert watched.close_code == 1000
    assert watched.arrived[1] - watched.arrived[0] > 1.0  # the second waited to be stored
