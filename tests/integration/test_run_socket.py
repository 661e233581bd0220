"""Starting a run on the socket a page keeps open (``/ws/runs/new/``), through daphne, as a page
and a script use it: one message starts the run and the same socket carries its events; a refusal
leaves the socket open for the next try; admission and socket limits are the POST's."""

from __future__ import annotations

import json
import threading
import time

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

pytestmark = pytest.mark.django_db(transaction=True)

ODD = "import sys\nsys.stdout.buffer.write(b'caf\\xc3\\xa9 \\xff\\xfe\\x00 end\\n')\nprint('two')\n"


def test_one_message_starts_the_run_and_its_events_follow_on_the_same_socket(live_stack):
    reply, watched = live_stack.start_on_socket({"code": ODD})
    assert reply["type"] == "started_run", reply
    run = reply["run"]
    assert run["status"] == "queued" and run["device"] == "cpu" and run["ws"] == f"/ws/runs/{run['id']}/"
    # The run's whole log, from seq 1, in order, ending with finished; then the server closes.
    seqs = [e["seq"] for e in watched.events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert watched.events[0]["type"] == "queued" and watched.finished["status"] == "succeeded", watched.events
    # Odd bytes as everywhere else: invalid UTF-8 replaced, NUL shown as its symbol.
    assert watched.text() == "café \ufffd\ufffd\u2400 end\ntwo\n"
    assert watched.close_code == 1000
    # Stored as a POSTed run is, and its own socket replays the same events.
    stored = live_stack.wait_finished(run["id"])
    assert stored["status"] == "succeeded"
    again = live_stack.watch(run["id"])
    assert [e["seq"] for e in again.events] == seqs


def test_a_refusal_leaves_the_socket_open_and_the_next_start_runs(live_stack):
    with connect(f"{live_stack.ws_url}/ws/runs/new/", open_timeout=10) as ws:
        ws.send("not json")
        bad = json.loads(ws.recv(timeout=10))
        assert (bad["type"], bad["status"]) == ("refused", 400) and "op" in bad["error"]
        ws.send(json.dumps({"op": "start", "code": "print(1)\n", "device": "quantum"}))
        unknown = json.loads(ws.recv(timeout=10))
        assert unknown["type"] == "refused" and unknown["status"] == 400 and "quantum" in unknown["error"], unknown
        ws.send(json.dumps({"op": "start", "code": "x" * (64 * 1024 + 1)}))
        big = json.loads(ws.recv(timeout=10))
        assert big["type"] == "refused" and big["status"] == 400 and "limit" in big["error"], big
        ws.send(json.dumps({"op": "start", "code": b"print('\\ud800')\n".decode("unicode_escape")}))
        surrogate = json.loads(ws.recv(timeout=10))
        assert surrogate["type"] == "refused" and surrogate["status"] == 400, surrogate
        ws.send(json.dumps({"op": "start", "code": "print(6 * 7)\n"}))
        started = json.loads(ws.recv(timeout=10))
        assert started["type"] == "started_run", started
        # A second start on a socket that carries a run is not read: one run per socket.
        ws.send(json.dumps({"op": "start", "code": "print('again')\n"}))
        events = []
        try:
            while True:
                events.append(json.loads(ws.recv(timeout=60)))
        except ConnectionClosed:
            pass
    assert events[-1]["type"] == "finished" and events[-1]["status"] == "succeeded", events
    assert "".join(e.get("text", "") for e in events if e["type"] == "stdout") == "42\n"
    assert not any(e["type"] == "started_run" for e in events)


def test_a_page_of_another_site_cannot_open_it(live_stack):
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus) as refused:
        with connect(f"{live_stack.ws_url}/ws/runs/new/", open_timeout=10,
                     additional_headers={"Origin": "https://evil.example"}):
            pass
    assert refused.value.response.status_code == 403
    # The site's own page may.
    reply, watched = live_stack.start_on_socket({"code": "print('ok')\n"}, origin=live_stack.url)
    assert reply["type"] == "started_run" and watched.text() == "ok\n"


def test_a_class_starts_thirty_runs_on_thirty_sockets_at_once(live_stack):
    """Thirty people, each from an address of their own, pressing Run together."""
    results: list = [None] * 30

    def person(i: int) -> None:
        results[i] = live_stack.start_on_socket({"code": f"print({i})\n"}, client=f"10.9.0.{i + 1}", timeout=120)

    threads = [threading.Thread(target=person, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(150)
    for i, (reply, watched) in enumerate(results):
        assert reply["type"] == "started_run", reply
        assert watched.finished["status"] == "succeeded" and watched.text() == f"{i}\n", watched.events
    assert len({reply["run"]["id"] for reply, _ in results}) == 30


def test_a_signed_in_page_starts_runs_of_its_account(live_stack):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from playground.models import Run

    person = get_user_model().objects.create_user("socket-person", password="a long test password 1")
    client = Client()
    client.force_login(person)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    with connect(f"{live_stack.ws_url}/ws/runs/new/", open_timeout=10,
                 additional_headers={"Cookie": cookie, "Origin": live_stack.url}) as ws:
        ws.send(json.dumps({"op": "start", "code": "print('mine')\n"}))
        started = json.loads(ws.recv(timeout=10))
    assert started["type"] == "started_run", started
    live_stack.wait_finished(started["run"]["id"])
    assert Run.objects.get(id=started["run"]["id"]).owner_id == person.id


def test_what_broke_a_start_gives_every_slot_back(live_stack, redis_client):
    """A start that fails inside (a refusal too large to send, a snippet that is no slug) must not
    keep the socket's slots: before, eight such starts locked an address out of every socket."""
    from web.clients import client_key

    key = client_key("127.0.0.1")  # the suite's stack trusts no proxy: every client is loopback
    for _ in range(3):
        with connect(f"{live_stack.ws_url}/ws/runs/new/", open_timeout=10, max_size=None) as ws:
            # 400 kB of 4-byte characters, each repr'd as 10 (an echo of it was 2.9 MB, over the limit)
            ws.send(json.dumps({"op": "start", "code": "print(1)\n", "device": "\U000f0000" * 100_000},
                               ensure_ascii=False))
            answer = json.loads(ws.recv(timeout=10))
            assert (answer["type"], answer["status"]) == ("refused", 400) and len(answer["error"]) <= 2000
            ws.send(json.dumps({"op": "start", "code": "print(1)\n", "snippet": "\ud800"}))
            answer = json.loads(ws.recv(timeout=10))
            assert (answer["type"], answer["status"]) == ("refused", 400), answer
    status, body = live_stack.post("/api/runs", {"code": "print(1)\n", "snippet": "\x00"})
    assert status == 400, body
    deadline = time.monotonic() + 5
    # The address's own slots (these scripts send no cookie) and its room's.
    while any(redis_client.zcard(f"ws:{pool}:{who}") for pool in ("client", "new") for who in (key, f"room:{key}")):
        assert time.monotonic() < deadline, "a socket's slot was kept"
        time.sleep(0.1)


def test_waiting_sockets_never_take_the_slots_of_sockets_that_carry_runs(live_stack):
    """Sockets held open without a run count apart: over WS_MAX_NEW_PER_CLIENT they are refused
    (and the page posts instead), and the client's run sockets are untouched by them."""
    from contextlib import ExitStack

    from django.conf import settings

    from playground.models import Run

    with ExitStack() as opened:
        held = [opened.enter_context(connect(f"{live_stack.ws_url}/ws/runs/new/", open_timeout=10))
                for _ in range(settings.WS_MAX_NEW_PER_CLIENT)]
        with connect(f"{live_stack.ws_url}/ws/runs/new/", open_timeout=10) as extra:
            with pytest.raises(ConnectionClosed) as closed:
                extra.send(json.dumps({"op": "start", "code": "print('not run')\n"}))
                extra.recv(timeout=10)
            assert closed.value.rcvd.code == 4429
        time.sleep(1)
        assert not Run.objects.filter(code="print('not run')\n").exists()  # sent after the refusal: not read
        status, run = live_stack.post("/api/runs", {"code": "print('posted')\n"})
        assert status == 201, run
        watched = live_stack.watch(run["id"])
        assert watched.text() == "posted\n"
        # and a held socket still starts its run
        held[0].send(json.dumps({"op": "start", "code": "print('held')\n"}))
        assert json.loads(held[0].recv(timeout=10))["type"] == "started_run"
