"""Taking a notebook session for a cell in one round trip (``sessionstate.take_live``), in the real
Redis: a plainly free session is taken and its state answered; anything that needs a second look
(stopped, asked to stop, busy, forgotten, its node silent) is left exactly as it was."""

from __future__ import annotations

import time
import uuid

import pytest

from executor import sessionstate

BEATS = "test:take-live:beats"
WINDOW_S = 15.0


@pytest.fixture
def session(redis_client):
    session_id = str(uuid.uuid4())
    sessionstate.create(redis_client, session_id, idle_s=600)
    yield session_id
    redis_client.delete(sessionstate.key(session_id), sessionstate.log_key(session_id), BEATS)


def take(redis_client, session_id: str, run_id: str = "run-1"):
    return sessionstate.take_live(redis_client, session_id, run_id, BEATS, WINDOW_S)


def test_a_free_session_is_taken_and_its_state_told_once(redis_client, session):
    told = redis_client.xlen(sessionstate.log_key(session))
    state = take(redis_client, session)
    assert state is not None and state["state"] == "idle" and state["busy"] is None
    now = sessionstate.read(redis_client, session)
    assert now["state"] == "live" and now["busy"] == "run-1"
    assert redis_client.xlen(sessionstate.log_key(session)) == told + 1
    # The next cell finds it busy: nothing taken, nothing changed.
    assert take(redis_client, session, "run-2") is None
    assert sessionstate.read(redis_client, session)["busy"] == "run-1"


def test_a_session_on_a_node_that_beats_is_taken_and_on_a_silent_one_is_not(redis_client, session):
    sessionstate.update(redis_client, session, node="cpu-n1@host")
    redis_client.zadd(BEATS, {"cpu-n1@host": time.time() - WINDOW_S - 5})
    before = redis_client.hgetall(sessionstate.key(session))
    assert take(redis_client, session) is None
    assert redis_client.hgetall(sessionstate.key(session)) == before
    redis_client.zadd(BEATS, {"cpu-n1@host": time.time()})
    state = take(redis_client, session)
    assert state is not None and state["node"] == "cpu-n1@host"


@pytest.mark.parametrize("change", ["stopped", "stop asked", "forgotten", "busy"])
def test_a_session_that_needs_a_second_look_is_left_as_it_was(redis_client, session, change):
    if change == "stopped":
        sessionstate.stop(redis_client, session, "ended")
    elif change == "stop asked":  # its end asked for (a DELETE), its node not yet there
        sessionstate.update(redis_client, session, stop=1)
    elif change == "forgotten":
        redis_client.delete(sessionstate.key(session))
    else:
        assert sessionstate.take(redis_client, session, "other") == "ok"
    before = redis_client.hgetall(sessionstate.key(session))
    told = redis_client.xlen(sessionstate.log_key(session))
    assert take(redis_client, session) is None
    assert redis_client.hgetall(sessionstate.key(session)) == before
    assert redis_client.xlen(sessionstate.log_key(session)) == told
