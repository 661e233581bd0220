"""The recorder's reader of the executors' event batches (playground/batches.py), against the
test's Redis and database: a read's runs commit together, one run's failure holds up no other and
is taken again, a batch that keeps failing is given up, and a recorder that died mid-read has its
batches taken over. Each test has a stream of its own, so a live stack's recorder never reads it.
Through the whole stack, every run the suite makes is recorded this way."""

from __future__ import annotations

import time
import uuid

import pytest

from executor import events as ev
from executor import submit
from playground import batches
from playground.batches import BatchReader
from playground.models import Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queue(redis_client):
    name = f"record-test-{uuid.uuid4().hex[:8]}"
    yield name
    redis_client.delete(submit.record_stream(name))


def a_run() -> str:
    return str(Run.objects.create(code="print(1)", device="cpu").id)


def whole_run(now: float) -> list[dict]:
    return [{"seq": 2, "type": ev.STARTED, "ts": now, "worker": "cpu@test", "device": "cpu"},
            {"seq": 3, "type": ev.STDOUT, "ts": now, "text": "1\n"},
            {"seq": 4, "type": ev.FINISHED, "ts": now, "status": ev.SUCCEEDED, "wall_ms": 3.0}]


def read(reader: BatchReader, redis_client) -> list:
    reader._ensure_group()
    answer = redis_client.xreadgroup(submit.RECORD_GROUP, reader.name, {reader.key: ">"}, count=100, block=100)
    return [entry for _stream, entries in answer or [] for entry in entries]


def test_a_reads_runs_are_recorded_and_their_entries_go(redis_client, queue):
    runs = [a_run() for _ in range(3)]
    now = time.time()
    for run_id in runs:  # the first run's events in two batches, the others in one
        events = whole_run(now)
        if run_id == runs[0]:
            submit.send_batch(redis_client, queue, run_id, events[:1])
            submit.send_batch(redis_client, queue, run_id, events[1:])
        else:
            submit.send_batch(redis_client, queue, run_id, events)
    reader = BatchReader(redis_client, queue, "recorder@one")
    entries = read(reader, redis_client)
    assert len(entries) == 4
    reader.record(entries)
    for run_id in runs:
        run = Run.objects.get(id=run_id)
        assert run.status == ev.SUCCEEDED and run.worker == "cpu@test" and run.wall_ms == 3.0
        assert list(RunEvent.objects.filter(run_id=run_id).values_list("seq", flat=True).order_by("seq")) == [2, 3, 4]
    # Recorded, acknowledged and deleted: the stream holds only what waits.
    assert redis_client.xlen(reader.key) == 0
    assert redis_client.xpending(reader.key, submit.RECORD_GROUP)["pending"] == 0


def test_one_runs_failure_holds_up_no_other_and_it_is_taken_again(redis_client, queue, monkeypatch):
    good, bad = a_run(), a_run()
    now = time.time()
    submit.send_batch(redis_client, queue, good, whole_run(now))
    submit.send_batch(redis_client, queue, bad, whole_run(now))
    submit.send_batch(redis_client, queue, "not-a-run", whole_run(now))  # not even an id
    real = batches.do_record_events
    failing = {bad}

    def record(run_id, events):
        if run_id in failing:
            raise RuntimeError("the database said no")
        real(run_id, events)

    monkeypatch.setattr(batches, "do_record_events", record)
    monkeypatch.setattr(batches, "RETRY_IDLE_MS", 50)
    reader = BatchReader(redis_client, queue, "recorder@one")
    reader.record(read(reader, redis_client))
    assert Run.objects.get(id=good).status == ev.SUCCEEDED
    assert Run.objects.get(id=bad).status == ev.STATUS_QUEUED
    # "not-a-run" is no run's id: dropped at once, with a warning; the failed run's batch waits.
    assert redis_client.xpending(reader.key, submit.RECORD_GROUP)["pending"] == 1
    assert redis_client.xlen(reader.key) == 1
    # Once it has waited RETRY_IDLE_MS, any recorder takes it again, and it is recorded now.
    failing.clear()
    time.sleep(0.1)
    taken = BatchReader(redis_client, queue, "recorder@two")._retries()
    assert [fields[b"run"].decode() for _, fields in taken] == [bad]
    reader.record(taken)
    assert Run.objects.get(id=bad).status == ev.SUCCEEDED
    assert redis_client.xlen(reader.key) == 0


def test_a_batch_that_keeps_failing_is_given_up_after_its_tries(redis_client, queue, monkeypatch, caplog):
    run_id = a_run()
    submit.send_batch(redis_client, queue, run_id, whole_run(time.time()))

    def record(run_id, events):
        raise RuntimeError("the database said no")

    monkeypatch.setattr(batches, "do_record_events", record)
    monkeypatch.setattr(batches, "RETRY_IDLE_MS", 20)
    reader = BatchReader(redis_client, queue, "recorder@one")
    reader.record(read(reader, redis_client))
    for _ in range(batches.MAX_DELIVERIES - 1):
        time.sleep(0.05)
        reader._swept = 0.0
        taken = reader._retries()
        assert len(taken) == 1
        reader.record(taken)
    time.sleep(0.05)
    reader._swept = 0.0
    with caplog.at_level("ERROR", logger="playground"):
        assert reader._retries() == []
    assert any("gave up recording" in r.getMessage() and run_id in r.getMessage() for r in caplog.records)
    assert redis_client.xlen(reader.key) == 0
    assert Run.objects.get(id=run_id).status == ev.STATUS_QUEUED  # the watchdog's, from the run's log


def test_a_recorder_that_died_mid_read_has_its_batches_taken_over(redis_client, queue, monkeypatch):
    run_id = a_run()
    submit.send_batch(redis_client, queue, run_id, whole_run(time.time()))
    monkeypatch.setattr(batches, "RETRY_IDLE_MS", 50)
    dead = BatchReader(redis_client, queue, "recorder@dead")
    assert len(read(dead, redis_client)) == 1  # read, and never recorded
    alive = BatchReader(redis_client, queue, "recorder@alive").start()
    try:
        deadline = time.monotonic() + 10
        while Run.objects.get(id=run_id).status != ev.SUCCEEDED:
            assert time.monotonic() < deadline, "the living recorder never took the dead one's batch"
            time.sleep(0.05)
    finally:
        alive.stop()
    assert redis_client.xlen(dead.key) == 0


def test_the_reader_makes_its_group_again_after_redis_forgot_it(redis_client, queue):
    reader = BatchReader(redis_client, queue, "recorder@one").start()
    try:
        first = a_run()
        submit.send_batch(redis_client, queue, first, whole_run(time.time()))
        deadline = time.monotonic() + 10
        while Run.objects.get(id=first).status != ev.SUCCEEDED:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        redis_client.delete(reader.key)  # as a Redis restarted empty would have it
        second = a_run()
        submit.send_batch(redis_client, queue, second, whole_run(time.time()))
        while Run.objects.get(id=second).status != ev.SUCCEEDED:
            assert time.monotonic() < deadline, "the reader did not read again after its group went"
            time.sleep(0.05)
    finally:
        reader.stop()


def test_a_reads_ended_runs_give_their_shares_back_together(redis_client, queue):
    """The recorder's backstop gives back the share of each run a read ended (its slot, its
    seconds counted once) once committed; a run whose share the executor gave back first counts
    nothing twice."""
    from executor import shares

    client = f"ip:203.0.113.{uuid.uuid4().int % 200}"
    runs = [a_run() for _ in range(3)]
    for run_id in runs:  # as admission takes a slot (playground/quotas.py admit)
        redis_client.set(shares.client_key(run_id), client, ex=600)
        redis_client.zadd(shares.active_key(client), {run_id: time.time()})
    assert redis_client.zcard(shares.active_key(client)) == 3
    assert shares.release(redis_client, runs[0], wall_ms=1000, kind="cpu") == client  # the executor's, first
    now = time.time()
    for run_id in runs:
        submit.send_batch(redis_client, queue, run_id, whole_run(now))
    reader = BatchReader(redis_client, queue, "recorder@one")
    reader.record(read(reader, redis_client))
    assert all(Run.objects.get(id=run_id).status == ev.SUCCEEDED for run_id in runs)
    assert redis_client.zcard(shares.active_key(client)) == 0
    assert not any(redis_client.exists(shares.client_key(run_id)) for run_id in runs)
    # 1 s from the executor's release, 3 ms from each of the other two (their wall_ms): once each.
    spent = float(redis_client.get(shares.budget_key(client, "cpu", 3600, time.time())))
    assert spent == pytest.approx(1.006)
    assert [shares.release(redis_client, run_id, wall_ms=3.0, kind="cpu") for run_id in runs] == [None] * 3
