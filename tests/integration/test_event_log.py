"""A run's event log in the real Redis: seqs, the one "finished", the cap, a retried append, and
seqs that go on after a Redis that forgot the counter."""

from __future__ import annotations

import uuid

from executor import events as ev


def new_log(redis_client, **kwargs) -> tuple[ev.EventLog, str]:
    return ev.EventLog(redis_client, **kwargs), str(uuid.uuid4())


def test_seqs_start_at_one_and_nothing_follows_finished(redis_client):
    log, run = new_log(redis_client)
    assert log.append(run, ev.make_event(ev.QUEUED))["seq"] == 1
    assert log.append(run, ev.make_event(ev.STDOUT, text="a"))["seq"] == 2
    assert log.append(run, ev.finished_event(ev.SUCCEEDED))["seq"] == 3
    assert log.append(run, ev.make_event(ev.STDOUT, text="late")) is None
    assert log.append(run, ev.finished_event(ev.LOST)) is None
    assert [e["seq"] for e in ev.decode_entries(redis_client.xrange(ev.log_key(run)))] == [1, 2, 3]


def test_a_retried_append_that_had_happened_is_not_appended_twice(redis_client):
    log, run = new_log(redis_client)
    log.append(run, ev.make_event(ev.QUEUED))
    event = ev.make_event(ev.STDOUT, text="once")
    first = log.append(run, event, after=1, expect=2)
    again = log.append(run, event, after=1, expect=2)  # the reply of the first was lost
    assert first == again and first["seq"] == 2
    other = log.append(run, ev.make_event(ev.STDOUT, text="next"), after=2, expect=3)
    assert other["seq"] == 3
    assert redis_client.xlen(ev.log_key(run)) == 3


def test_a_full_log_refuses_all_but_finished(redis_client):
    log, run = new_log(redis_client, max_events=3)
    for text in "abc":
        assert log.append(run, ev.make_event(ev.STDOUT, text=text)) is not None
    assert log.append(run, ev.make_event(ev.STDOUT, text="d")) is None
    assert log.append(run, ev.finished_event(ev.LIMIT_EXCEEDED))["seq"] == 4


def test_seqs_go_on_from_what_the_writer_knows_after_redis_forgot(redis_client):
    log, run = new_log(redis_client)
    for _ in range(5):
        log.append(run, ev.make_event(ev.STDOUT, text="x"))
    redis_client.delete(ev.log_key(run), ev.seq_key(run))  # as a restarted Redis would
    assert log.append(run, ev.make_event(ev.STDOUT, text="y"), after=5)["seq"] == 6


def test_appends_on_a_pipeline_go_in_its_one_round_trip_in_order(redis_client):
    # A run's end appends what it held and its finished in one pipeline: no SCRIPT EXISTS of
    # redis-py's before it (a registered script's check), and seqs that follow one another.
    log, run = new_log(redis_client)
    log.append(run, ev.make_event(ev.QUEUED))
    pipe = redis_client.pipeline(transaction=False)
    held = [ev.make_event(ev.SHAPES, names={}), ev.finished_event(ev.SUCCEEDED)]
    for n, event in enumerate(held):
        log.append_in(pipe, run, event, after=1 + n, expect=2 + n)
    assert not pipe.scripts  # nothing for redis-py to look up first
    answers = pipe.execute()
    assert [ev.EventLog.appended(a)["seq"] for a in answers] == [2, 3]
    assert log.is_finished(run)
    # Sent again (a reply that was lost), the same events are found, not appended twice.
    pipe = redis_client.pipeline(transaction=False)
    for n, event in enumerate(held):
        log.append_in(pipe, run, event, after=1 + n, expect=2 + n)
    assert [ev.EventLog.appended(a)["seq"] for a in pipe.execute()] == [2, 3]
    assert redis_client.xlen(ev.log_key(run)) == 3


def test_a_cells_started_in_its_claim_is_logged_only_for_the_claims_holder_of_a_standing_session(redis_client):
    log = ev.EventLog(redis_client)
    session_key = f"test:session:{uuid.uuid4()}"
    redis_client.hset(session_key, mapping={"state": "idle"})

    def claim_and_start(run: str, owner: str, holder: str | None):
        if holder is not None:
            redis_client.set(ev.claim_key(run), holder)
        pipe = redis_client.pipeline(transaction=True)
        pipe.set(ev.claim_key(run), owner, nx=True)
        log.append_if_in(pipe, run, ev.make_event(ev.STARTED, worker=owner), claim_key=ev.claim_key(run),
                         owner=owner, session_key=session_key, after=1, expect=2)
        return ev.EventLog.appended(pipe.execute()[-1])

    def new_run() -> str:
        run = str(uuid.uuid4())
        log.append(run, ev.make_event(ev.QUEUED))
        return run

    run = new_run()
    assert claim_and_start(run, "node-a", None)["seq"] == 2  # claimed here: logged with the claim
    other = new_run()
    assert claim_and_start(other, "node-a", "cancelled") is None  # a cancel claimed it first
    assert redis_client.xlen(ev.log_key(other)) == 1
    redis_client.hset(session_key, "stop", 1)  # its end asked for (another tab)
    asked = new_run()
    assert claim_and_start(asked, "node-a", None) is None and redis_client.xlen(ev.log_key(asked)) == 1
    redis_client.hdel(session_key, "stop")
    redis_client.hset(session_key, "state", "stopped")
    stopped = new_run()
    assert claim_and_start(stopped, "node-a", None) is None and redis_client.xlen(ev.log_key(stopped)) == 1
    redis_client.delete(session_key)
