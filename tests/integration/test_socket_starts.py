"""Runs started on a run socket, in process: the socket waits for the run's stream before the
run exists, and leaves nothing waiting behind whatever the start's outcome; its database calls
keep one connection open between them (web/db.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.testing import WebsocketCommunicator

from web.asgi import application
from web.db import socket_db

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://127.0.0.1")]


async def _hub_waiters() -> dict:
    from playground.streams import get_hub

    return {key: len(group) for key, group in get_hub().waiters.items()}


async def _refused_then_run(code: str) -> tuple[dict, dict, list[dict], dict, dict]:
    comm = WebsocketCommunicator(application, "/ws/runs/new/", headers=ORIGIN)
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected
    try:
        await comm.send_to(text_data=json.dumps({"op": "start", "code": 5}))
        refused = json.loads(await comm.receive_from(30))
        after_refusal = await _hub_waiters()
        await comm.send_to(text_data=json.dumps({"op": "start", "code": code}))
        started = json.loads(await comm.receive_from(30))
        events = []
        while not events or events[-1]["type"] != "finished":
            events.append(json.loads(await comm.receive_from(60)))
        closed = await comm.receive_output(5)
        assert closed["type"] == "websocket.close"
        await asyncio.sleep(0.05)
        return refused, after_refusal, events, started, await _hub_waiters()
    finally:
        await comm.disconnect()


async def _run(code: str) -> tuple[list[dict], dict]:
    comm = WebsocketCommunicator(application, "/ws/runs/new/", headers=ORIGIN)
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected
    try:
        await comm.send_to(text_data=json.dumps({"op": "start", "code": code}))
        assert json.loads(await comm.receive_from(30))["type"] == "started_run"
        events = []
        while not events or events[-1]["type"] != "finished":
            events.append(json.loads(await comm.receive_from(60)))
        assert (await comm.receive_output(5))["type"] == "websocket.close"
        await asyncio.sleep(0.05)
        return events, await _hub_waiters()
    finally:
        await comm.disconnect()


def assert_whole_run(events: list[dict], printed: str) -> None:
    # Every event from seq 1, in order, none twice.
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [events[0]["type"], events[1]["type"], events[-1]["status"]] == ["queued", "started", "succeeded"]
    assert "".join(e["text"] for e in events if e["type"] == "stdout") == printed


def test_a_first_start_waits_for_its_stream_before_the_run_exists(live_stack):
    events, after_run = asyncio.run(_run("print('hi')\n"))
    assert_whole_run(events, "hi\n")  # "queued" included: the early wait saw it, nothing caught up
    assert after_run == {}


def test_a_refused_start_leaves_nothing_waiting_and_the_next_start_catches_up(live_stack):
    refused, after_refusal, events, started, after_run = asyncio.run(_refused_then_run("print('hi')\n"))
    assert (refused["type"], refused["status"]) == ("refused", 400), refused
    assert after_refusal == {}  # the refused start's wait was left
    assert started["type"] == "started_run"
    # After a refusal the socket waits for the run's stream only once the run exists (a client
    # sending refused starts in a loop wakes the hub's read no more), and catches up from seq 1.
    assert_whole_run(events, "hi\n")
    assert after_run == {}


@socket_db
def _connection():
    """The driver's connection object itself, not its id(): a closed one's id may be reused by
    the next, which would read as the same connection kept."""
    from django.db import connection

    connection.ensure_connection()
    return connection.connection


@socket_db
def _leave_a_transaction_open() -> None:
    from django.db import transaction

    transaction.set_autocommit(False)  # a call that began a transaction and never ended it


@socket_db
def _count_runs() -> int:
    from playground.models import Run

    return Run.objects.count()


async def _calls() -> tuple[object, object, object, int]:
    first, second = await _connection(), await _connection()
    await _leave_a_transaction_open()
    count = await _count_runs()
    return first, second, await _connection(), count


def test_socket_calls_keep_one_connection_and_not_one_left_in_a_transaction():
    first, second, after_left, count = asyncio.run(_calls())
    assert first is second  # kept between calls, not closed and opened again
    assert after_left is not first  # that one was closed (its transaction with it); the next opened another
    assert count == 0


async def _refused_in_a_loop() -> tuple[list[dict], dict]:
    from playground.consumers import REFUSALS_MAX

    comm = WebsocketCommunicator(application, "/ws/runs/new/", headers=ORIGIN)
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected
    answers = []
    try:
        for _ in range(REFUSALS_MAX + 3):
            await comm.send_to(text_data="{not json")
        for _ in range(REFUSALS_MAX):
            answers.append(json.loads(await comm.receive_from(10)))
        closed = await comm.receive_output(10)
        assert await comm.receive_nothing(0.3)  # nothing more was read, nothing more answered
        return answers, closed
    finally:
        await comm.disconnect()


def test_a_socket_refused_again_and_again_is_closed(live_stack):
    from playground.consumers import REFUSALS_MAX

    answers, closed = asyncio.run(_refused_in_a_loop())
    assert [(a["type"], a["status"]) for a in answers] == [("refused", 400)] * REFUSALS_MAX
    assert closed == {"type": "websocket.close", "code": 4429,
                      "reason": f"{REFUSALS_MAX} starts refused on this socket; open another"}
    events, _ = asyncio.run(_run("print('still fine')\n"))  # a new socket starts as ever
    assert_whole_run(events, "still fine\n")


def test_a_sockets_messages_are_not_each_a_hop_to_the_database_thread(live_stack, monkeypatch):
    """Channels closes old connections on the database's thread before every message a consumer
    handles; the run socket's calls all go through socket_db, which checks them there itself, so
    its connect and its start cost no such hop (its disconnect's one is left to Channels)."""
    import channels.db

    hops = []
    monkeypatch.setattr(channels.db, "close_old_connections", lambda: hops.append("hop"))
    events, after_run = asyncio.run(_run("print('no hop')"))
    assert_whole_run(events, "no hop\n")
    assert after_run == {}
    assert len(hops) <= 1, hops
