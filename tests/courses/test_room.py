"""A room behind one address (a workshop's Wi-Fi, a school's NAT), signed out: each browser that
loaded a page has an identity of its own (a signed cookie) and with it a person's share: its
own runs at once, run rate, priority steps and executor seconds; everyone signed out there
together has the room's (ROOM_SIZE people's), which is all that minting identities can buy. A
cookie this site did not sign is no identity. Signed-in people and requests without an identity:
test_one_address.py."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest
from django.core import signing
from django.test import Client

from playground.redis import get_redis
from web.clients import BROWSER_COOKIE, BROWSER_SALT, browser_id
from web.errors import ActionError

from .conftest import client_of
from .helpers import post

pytestmark = pytest.mark.django_db

ROOM, HOME = "203.0.113.60", "198.51.100.20"


def shares(settings, **room) -> dict:
    """Fair shares as deployed, sized for a room of 40: a person's 4 runs at once, 30 a minute,
    1800 s an hour; 8 at once for the address's requests with no identity; 40 for the room."""
    limits = {"active": 4, "address_active": 8, "room_active": 40, "per_hour_s": 1800, "per_day_s": 14400,
              "queue_max": 0, **room}
    settings.ROOM_SIZE = 40
    settings.RUN_RATE_LIMIT_PER_MINUTE = 30
    settings.RUN_QUOTAS = {kind: dict(limits) for kind in settings.RUN_DEVICE_KINDS}
    return limits


@pytest.fixture(autouse=True)
def _no_shares_left():
    _forget_shares()
    yield
    _forget_shares()


def _forget_shares():
    redis = get_redis()
    for pattern in ("quota:*", "ratelimit:*", "ws:*"):
        for key in redis.scan_iter(pattern):
            redis.delete(key)


def browser(address: str = ROOM) -> Client:
    """A browser behind ``address`` that loaded the playground's page, as a person's does."""
    client = Client(REMOTE_ADDR=address)
    page = client.get("/")
    assert page.status_code == 200 and BROWSER_COOKIE in page.cookies
    return client


def start(client) -> tuple[int, dict]:
    response = post(client, "/api/runs", {"code": "print(1)"})
    return response.status_code, response.json()


def client_of_run(run: dict) -> str:
    from playground import quotas

    return quotas.client_of(run["id"])


def test_thirty_browsers_behind_one_address_each_start_a_run(settings, executor_online):
    shares(settings)
    room = [browser() for _ in range(30)]
    answers = [start(b) for b in room]
    assert [status for status, _ in answers] == [201] * 30, [a for a in answers if a[0] != 201][:1]
    people = {client_of_run(run) for _, run in answers}
    assert len(people) == 30 and all(p.startswith("anon:") for p in people)
    assert get_redis().zcard(f"quota:active:room:ip:{ROOM}") == 30
    # Each has a person's share: four at once, then a refusal of its own that shares nothing.
    first = room[0]
    assert [start(first)[0] for _ in range(3)] == [201, 201, 201]
    status, body = start(first)
    assert status == 429 and body["limit"] == "active_runs"
    assert body["error"].startswith("you already have 4 runs queued or running (at most 4 at once)")
    assert "address" not in body["error"] and "sign in" not in body["error"]
    assert start(room[1])[0] == 201


def test_one_client_minting_identities_gets_no_more_than_the_room(settings, student, executor_online):
    shares(settings)
    answers = [start(browser()) for _ in range(100)]  # a page fetched for every cookie
    statuses = [status for status, _ in answers]
    assert statuses.count(201) == 40 and statuses.count(429) == 60
    assert statuses[:40] == [201] * 40
    refused = answers[40][1]
    assert refused["limit"] == "active_runs"
    assert refused["error"].startswith("everyone signed out at your address has 40 runs queued or running between "
                                       "them (at most 40 at once)")
    assert refused["error"].endswith("Each browser has a share of its own, within this one that everyone signed out "
                                     "at your address shares: sign in to have a share apart from it")
    # Its requests without a cookie are in the room too; an account there counts apart.
    assert start(Client(REMOTE_ADDR=ROOM))[0] == 429
    signed_in = client_of(student)
    signed_in.defaults["REMOTE_ADDR"] = ROOM
    assert start(signed_in)[0] == 201
    assert start(browser(HOME))[0] == 201  # another address is another room


def test_one_client_minting_identities_gets_no_more_than_the_rooms_run_rate(settings, executor_online):
    shares(settings)
    if 60 - time.time() % 60 < 3:  # the counts are a minute's: not across the turn of one
        time.sleep(3)
    settings.RUN_RATE_LIMIT_PER_MINUTE = 1
    settings.ROOM_SIZE = 3  # the room may start 3 a minute
    first = browser()
    assert start(first)[0] == 201
    status, body = start(first)  # the person's own rate
    assert status == 429 and body["limit"] == "rate" and body["error"].startswith("too many runs: at most 1 a minute")
    assert "address" not in body["error"]
    assert [start(browser())[0] for _ in range(2)] == [201, 201]
    status, body = start(browser())
    assert status == 429 and body["limit"] == "rate"
    assert body["error"].startswith("too many runs from everyone signed out at your address: at most 3 a minute")
    assert body["error"].endswith("sign in to have a share apart from it")


def test_a_rooms_executor_seconds_are_its_size_times_a_persons(settings, executor_online):
    from executor import shares as executor_shares

    shares(settings, per_hour_s=10)
    settings.ROOM_SIZE = 3  # 30 s an hour for the room
    room = [browser() for _ in range(4)]
    for person in room[:3]:
        status, run = start(person)
        assert status == 201
        # The run ended after 10 s: the executor gives its shares back (the person's and the room's).
        who = client_of_run(run)
        assert executor_shares.release(get_redis(), run["id"], wall_ms=10_000, kind="cpu") == who
        assert executor_shares.release(get_redis(), run["id"], wall_ms=10_000, kind="cpu") is None  # once
    status, body = start(room[0])
    assert status == 429 and body["limit"] == "hourly_budget"
    assert body["error"].startswith("you have used this hour's 10 s of cpu executor time")
    status, body = start(room[3])
    assert status == 429 and body["limit"] == "hourly_budget"
    assert body["error"].startswith("everyone signed out at your address has used this hour's 30 s of cpu "
                                    "executor time")
    assert start(browser(HOME))[0] == 201


def test_a_forged_or_altered_cookie_is_no_identity(settings, executor_online):
    shares(settings)
    issued = browser().cookies[BROWSER_COOKIE].value
    assert browser_id(issued) is not None
    identity, rest = issued.split(":", 1)
    altered = identity[:-1] + ("x" if identity[-1] != "x" else "y")
    forged = ["a" * 22, "",
              signing.TimestampSigner(key="not this site's key", salt=BROWSER_SALT).sign("a" * 22),  # made up
              signing.TimestampSigner(salt="another use of the site's key").sign("c" * 22),
              f"{altered}:{rest}", f"{'b' * 22}:{rest}", issued[:-1] + ("A" if issued[-1] != "A" else "B")]
    for value in forged:
        assert browser_id(value) is None, value
    # Each counts as no identity: the address's own share, 8 at once for them all.
    answers = []
    for i in range(9):
        client = Client(REMOTE_ADDR=ROOM)
        client.cookies[BROWSER_COOKIE] = forged[i % len(forged)]
        answers.append(start(client))
    assert [status for status, _ in answers] == [201] * 8 + [429]
    assert {client_of_run(run) for _, run in answers[:8]} == {f"ip:{ROOM}"}
    assert answers[8][1]["error"].startswith("your address already has 8 runs queued or running (at most 8 at once)")
    # The cookie as issued is one.
    holder = Client(REMOTE_ADDR=ROOM)
    holder.cookies[BROWSER_COOKIE] = issued
    status, run = start(holder)
    assert status == 201 and client_of_run(run) == f"anon:{browser_id(issued)}"


def test_an_identity_from_another_address_counts_against_the_address_it_comes_from_now(settings, executor_online):
    shares(settings, room_active=3)
    traveller = browser(HOME)
    traveller.defaults["REMOTE_ADDR"] = ROOM
    status, run = start(traveller)
    assert status == 201
    redis = get_redis()
    assert redis.zscore(f"quota:active:room:ip:{ROOM}", run["id"]) is not None
    assert redis.zcard(f"quota:active:room:ip:{HOME}") == 0
    assert [start(browser())[0] for _ in range(2)] == [201, 201]
    status, body = start(traveller)  # its own share has room; the room it is in now has none
    assert status == 429 and body["error"].startswith("everyone signed out at your address has 3 runs")
    traveller.defaults["REMOTE_ADDR"] = HOME
    assert start(traveller)[0] == 201


def test_a_snippets_first_run_and_its_cancel_are_its_sharing_browsers_not_the_rooms(settings, executor_online):
    from snippets.models import Snippet

    shares(settings)
    sharer, neighbour = browser(), browser()
    slug = post(sharer, "/api/snippets", {"code": "print('mine')\n"}).json()["slug"]
    assert start_snippet(neighbour, slug)[0] == 201
    assert Snippet.objects.get(slug=slug).run_id is None  # a neighbour's run is not kept
    status, run = start_snippet(sharer, slug)
    assert status == 201 and str(Snippet.objects.get(slug=slug).run_id) == run["id"]
    refused = post(neighbour, f"/api/runs/{run['id']}/cancel")
    assert refused.status_code == 403 and "only whoever started it" in refused.json()["error"]
    assert post(sharer, f"/api/runs/{run['id']}/cancel").status_code == 202


def start_snippet(client, slug: str) -> tuple[int, dict]:
    response = post(client, "/api/runs", {"code": "print('mine')\n", "snippet": slug})
    return response.status_code, response.json()


def test_each_browsers_first_run_is_taken_before_anyones_second(settings):
    from playground import quotas

    shares(settings)
    room = f"room:ip:{ROOM}"
    steps = [quotas.check_admit_run(who, "cpu", str(uuid.uuid4()), room=room)
             for who in ("anon:a", "anon:a", "anon:b", "anon:a", "anon:b")]
    assert steps == [quotas.priority(0), quotas.priority(1), quotas.priority(0), quotas.priority(2),
                     quotas.priority(1)]
    assert steps[0] < steps[1] < steps[3]


def test_a_rooms_runs_past_an_addresss_share_wait_behind_everyone_elses_first_runs(settings):
    # Forty identities minted by one script, one run each: the ninth and later are queued at later
    # steps, so a person at another address (a first run: step 0) is taken before them.
    from playground import quotas

    shares(settings)
    room = f"room:ip:{ROOM}"
    steps = [quotas.check_admit_run(f"anon:{i}", "cpu", str(uuid.uuid4()), room=room) for i in range(40)]
    assert steps[:8] == [quotas.priority(0)] * 8
    assert steps[8:16] == [quotas.priority(1)] * 8 and steps[16:24] == [quotas.priority(2)] * 8
    assert set(steps[24:]) == {quotas.priority(3)}
    assert quotas.check_admit_run("anon:elsewhere", "cpu", str(uuid.uuid4()), room="room:ip:198.51.100.77") == 0


def test_the_page_gives_a_browser_its_identity_once(settings):
    page = Client().get("/")
    cookie = page.cookies[BROWSER_COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and not cookie["secure"]
    assert int(cookie["max-age"]) >= 365 * 24 * 3600
    assert browser_id(cookie.value) is not None
    client = Client()
    client.get("/")
    assert BROWSER_COOKIE not in client.get("/").cookies  # it has one: kept, not replaced
    assert BROWSER_COOKIE not in Client().get("/api/devices").cookies  # an API answer gives none
    settings.HTTPS = True
    assert Client().get("/").cookies[BROWSER_COOKIE]["secure"]


def test_a_rooms_caps_follow_its_size_unless_set(monkeypatch):
    from web.settings import _quotas

    monkeypatch.setenv("RUN_MAX_ACTIVE_PER_CLIENT", "4")
    monkeypatch.delenv("RUN_MAX_ACTIVE_PER_ADDRESS", raising=False)
    monkeypatch.delenv("RUN_MAX_ACTIVE_PER_ROOM", raising=False)
    from web import settings as web_settings

    assert _quotas("cpu")["room_active"] == web_settings.ROOM_SIZE == 40
    monkeypatch.setenv("RUN_MAX_ACTIVE_PER_ROOM_GPU", "12")
    assert _quotas("gpu")["room_active"] == 12 and _quotas("cpu")["room_active"] == 40
    monkeypatch.setenv("RUN_MAX_ACTIVE_PER_ADDRESS", "60")  # never below the address's own share
    assert _quotas("cpu")["room_active"] == 60
    monkeypatch.setenv("RUN_MAX_ACTIVE_PER_CLIENT", "0")  # shares off: off for rooms too
    monkeypatch.delenv("RUN_MAX_ACTIVE_PER_ADDRESS")
    assert _quotas("cpu")["room_active"] == 0


# Sockets: through the ASGI application in this process, each browser with its cookie.

def _socket_headers(client: Client | None, address: str = ROOM) -> list[tuple[bytes, bytes]]:
    headers = [(b"x-forwarded-for", address.encode())]
    if client is not None:
        headers.append((b"cookie", f"{BROWSER_COOKIE}={client.cookies[BROWSER_COOKIE].value}".encode()))
    return headers


async def _open(path: str, headers) -> tuple[object, dict | None]:
    """A socket opened on ``path``: (communicator, None) while it stays open, else its close."""
    from channels.testing import WebsocketCommunicator

    from web.asgi import application

    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected
    # A refused socket is closed after a look at Redis; a loaded machine may keep this process
    # or Redis from running a good part of a second, so a socket is taken as held after 1 s.
    if await comm.receive_nothing(1.0):
        return comm, None
    return comm, await comm.receive_output(1)


@pytest.mark.django_db(transaction=True)
def test_a_room_holds_a_socket_a_browser_up_to_its_cap(settings):
    settings.TRUSTED_PROXIES = 1
    settings.WS_MAX_NEW_PER_CLIENT, settings.WS_MAX_NEW_PER_ROOM = 2, 4
    room = [browser() for _ in range(4)]

    async def scenario():
        opened, answers = [], []
        for client in (room[0], room[0], room[0], room[1], room[2], room[3], None):
            comm, closed = await _open("/ws/runs/new/", _socket_headers(client))
            opened.append(comm)
            answers.append(closed)
        elsewhere, elsewhere_closed = await _open("/ws/runs/new/", _socket_headers(room[3], HOME))
        opened.append(elsewhere)
        for comm in opened:
            await comm.disconnect()
        return answers, elsewhere_closed

    answers, elsewhere = asyncio.run(scenario())
    assert answers[:2] == [None, None] and answers[3:5] == [None, None]
    assert answers[2]["code"] == 4429  # the first browser's own two
    assert answers[2]["reason"] == "too many sockets waiting for a run from you (at most 2); POST /api/runs"
    for closed in answers[5:]:  # the room's four, for a browser and a script alike
        assert closed["code"] == 4429
        assert closed["reason"] == ("too many sockets waiting for a run from everyone signed out at your address "
                                    "(at most 4); POST /api/runs")
    assert elsewhere is None  # the same browser elsewhere is in another room


@pytest.mark.django_db(transaction=True)
def test_a_rooms_sockets_that_carry_runs_are_capped_apart(settings):
    from playground.models import Run

    settings.TRUSTED_PROXIES = 1
    settings.WS_MAX_PER_ROOM = 1
    run = Run.objects.create(code="print(1)", device="cpu")  # queued: its socket stays open
    first, second = browser(), browser()

    async def scenario():
        held, closed = await _open(f"/ws/runs/{run.id}/", _socket_headers(first))
        assert closed is None
        comm, closed = await _open("/ws/runs/new/", _socket_headers(second))
        assert closed is None  # waiting sockets count apart
        await comm.send_to(text_data=json.dumps({"op": "start", "code": "print(2)"}))
        answer = json.loads(await comm.receive_from(10))
        # Each given time to give its slots back: 1 s by default, and a socket's end cut short
        # there (a loaded machine) would keep them.
        await comm.disconnect(timeout=10)
        await held.disconnect(timeout=10)
        return answer

    answer = asyncio.run(scenario())
    assert answer["type"] == "refused" and answer["status"] == 429
    assert answer["error"] == "too many open websockets from everyone signed out at your address (at most 1)"
    assert not Run.objects.filter(code="print(2)").exists()
    deadline = time.monotonic() + 30
    while get_redis().zcard(f"ws:client:room:ip:{ROOM}"):  # given back when it closed
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_the_editors_requests_count_per_browser_within_the_room(settings):
    settings.FORMAT_RATE_LIMIT_PER_MINUTE = settings.LINT_RATE_LIMIT_PER_MINUTE = 1
    settings.ROOM_SIZE = 2  # the room may make 2 of each a minute
    if 60 - time.time() % 60 < 3:  # the counts are a minute's: not across the turn of one
        time.sleep(3)
    room = [browser() for _ in range(3)]
    for path in ("/api/format", "/api/lint"):
        answers = [post(b, path, {"code": "a=1\n"}) for b in (room[0], room[0], room[1], room[2])]
        assert [a.status_code for a in answers] == [200, 429, 200, 429], path
        assert "address" not in answers[1].json()["error"]  # the first browser's own
        assert "from everyone signed out at your address: at most 2 a minute" in answers[3].json()["error"]


def test_admission_takes_two_round_trips_to_redis(settings, monkeypatch):
    # The rates (the person's, then the room's), the queue's length and the four budgets are read
    # and counted in one round trip, the run's owner and its slots taken in the next: where it
    # took nine for someone signed out.
    import threading

    from redis.connection import AbstractConnection

    from playground import quotas

    shares(settings)
    sent, me, original = [], threading.get_ident(), AbstractConnection.send_packed_command

    def counted(self, command, check_health=True):
        if threading.get_ident() == me:
            sent.append(command)
        return original(self, command, check_health)

    quotas.check_admit_run("anon:warm", "cpu", str(uuid.uuid4()), room=f"room:ip:{ROOM}")  # connected
    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    assert quotas.check_admit_run("anon:trips", "cpu", str(uuid.uuid4()), room=f"room:ip:{ROOM}") == 0
    assert len(sent) == 2, sent
    # A refusal is as it was: past the person's run rate, a 429 that counts nothing in the room.
    settings.RUN_RATE_LIMIT_PER_MINUTE = 1
    before = get_redis().keys("ratelimit:runs:room:*")
    counts = {key: get_redis().get(key) for key in before}
    with pytest.raises(ActionError) as refused:
        quotas.check_admit_run("anon:trips", "cpu", str(uuid.uuid4()), room=f"room:ip:{ROOM}")
    assert refused.value.status == 429 and refused.value.data["limit"] == "rate"
    assert {key: get_redis().get(key) for key in before} == counts
