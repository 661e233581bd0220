"""The live stream through the real server, as scripts and browsers connect: a plain websocket
client talks to the stack's daphne (its payload limit, its origin checks, its timeouts), not to
an in-process communicator.

Each case is one the server once got wrong: quiet runs losing their socket, a flood that could
never be watched to its end, NUL in the text, NaN from the runner, scripts refused for having no
Origin, sockets left open on finished runs, and no bound on how many one client opens.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from websockets.asyncio.client import connect as aconnect
from websockets.exceptions import ConnectionClosed, InvalidStatus

pytestmark = pytest.mark.django_db(transaction=True)

WS_LIMIT = 1024**2  # daphne refuses messages of this size and more
FLOOD = "import sys\nprint('first', flush=True)\nwhile True:\n    sys.stdout.write('y' * 65536)\n"


def start(live_stack, code: str) -> str:
    status, created = live_stack.post("/api/runs", {"code": code})
    assert status == 201, created
    return created["id"]


def quiet(seconds: float) -> str:
    return f"import time\nprint('a', flush=True)\ntime.sleep({seconds})\nprint('b')\n"


@pytest.mark.parametrize("seconds", [8, 40], ids=["quiet-8s", "quiet-40s"])
def test_a_quiet_run_keeps_its_socket_to_the_end(live_stack, seconds):
    watched = live_stack.watch(start(live_stack, quiet(seconds)), timeout=seconds + 40)

    assert watched.finished and watched.finished["status"] == "succeeded", watched.events[-3:]
    assert watched.text() == "a\nb\n"
    a, b = (t for t, e in zip(watched.arrived, watched.events) if e["type"] == "stdout")
    assert b - a >= seconds - 1  # live: "a" came before the silence, not at the end
    assert watched.close_code == 1000
    assert [e["seq"] for e in watched.events] == list(range(1, len(watched.events) + 1))


def test_a_flood_past_the_output_cap_is_watched_to_its_end(live_stack):
    run_id = start(live_stack, FLOOD)
    watched = live_stack.watch(run_id, max_size=WS_LIMIT - 1)

    assert watched.finished["status"] == "limit_exceeded"
    assert watched.finished["message"] == "output limit of 1 MiB exceeded"
    assert watched.finished["truncated"] is True
    out = watched.text()
    assert out.startswith("first\n")
    assert len(out.encode()) == 1024**2
    assert watched.largest < 256 * 1024 + 1024  # every message well under daphne's limit
    # A reconnect in the middle gets the rest, the end included.
    middle = watched.events[len(watched.events) // 2]["seq"]
    rest = live_stack.watch(run_id, after=middle)
    assert [e["seq"] for e in rest.events] == [e["seq"] for e in watched.events if e["seq"] > middle]


def test_300000_short_prints_arrive_whole_in_few_events(live_stack):
    watched = live_stack.watch(start(live_stack, "for i in range(300000):\n    print('x')\n"))

    assert watched.finished["status"] == "succeeded", watched.finished
    assert watched.text() == "x\n" * 300000
    stdout_events = sum(e["type"] == "stdout" for e in watched.events)
    assert stdout_events < 1000, stdout_events  # coalesced, not one event a print


def test_nul_and_odd_bytes_arrive_as_text_and_never_break_json(live_stack):
    code = ("import json, os, sys\nprint(json.dumps(chr(0)))\nprint('a' + chr(0) + 'b')\n"
            "sys.stdout.flush()\n_ = os.write(1, b'bad \\xff\\xfe bytes\\n')\n")
    run_id = start(live_stack, code)
    watched = live_stack.watch(run_id)  # each message parsed as JSON, or this raises

    assert watched.finished["status"] == "succeeded"
    assert watched.text() == '"\\u0000"\na\u2400b\nbad \ufffd\ufffd bytes\n'
    stored = live_stack.wait_finished(run_id)
    assert "".join(e["text"] for e in stored["events"] if e["type"] == "stdout") == watched.text()


FORGE = """\
import os
# The event pipe: the one descriptor beyond stdio that is a pipe.
fd = next(int(f) for f in sorted(os.listdir("/proc/self/fd"), key=int)
          if int(f) > 2 and os.readlink("/proc/self/fd/" + f).startswith("pipe:"))
os.write(fd, b'{"type": "timing", "label": "forged", "mean_ms": NaN, "std_ms": Infinity, "bogus": 1}\\n'
             b'{"type": "display", "text": "deep", "stats": ' + b"[" * 100 + b"]" * 100 + b'}\\n'
             b'{"type": "finished", "status": "succeeded"}\\n{"type": "no-such-type"}\\n[1, 2]\\nnot json\\n')
print("still running")
raise SystemExit(3)
"""


def test_nan_and_malformed_events_from_the_runner_are_repaired_never_stored_as_is(live_stack):
    run_id = start(live_stack, FORGE)
    watched = live_stack.watch(run_id)

    assert watched.finished["status"] == "failed"  # its own exit, not the forged "finished"
    timing = next(e for e in watched.events if e["type"] == "timing")
    assert timing["label"] == "forged" and timing["mean_ms"] is None and timing["std_ms"] is None
    assert "bogus" not in timing
    display = next(e for e in watched.events if e["type"] == "display")
    assert display["text"] == "deep"
    notes = watched.text("stderr")
    for said in ("mean_ms: NaN", "std_ms: Infinity", "unknown field 'bogus'", "nested deeper",
                 "'finished' event, which only the executor", "unknown type 'no-such-type'", "not a JSON object"):
        assert said in notes, notes
    assert notes.count("[playground]") == 5  # one line a message, five at most: "not json" is not noted
    assert sum(e["type"] == "finished" for e in watched.events) == 1
    # The recorder stored it all: the batch was not poisoned.
    stored = live_stack.wait_finished(run_id)
    assert stored["status"] == "failed"
    assert [e["seq"] for e in stored["events"]] == [e["seq"] for e in watched.events]


def test_scripts_may_connect_and_foreign_pages_may_not(live_stack):
    run_id = start(live_stack, "print('hi')")
    assert live_stack.watch(run_id).finished["status"] == "succeeded"  # no Origin at all
    assert live_stack.watch(run_id, origin=live_stack.url).finished["status"] == "succeeded"
    with pytest.raises(InvalidStatus) as refused:
        live_stack.watch(run_id, origin="https://evil.example")
    assert refused.value.response.status_code == 403


def test_a_finished_runs_socket_closes_after_its_last_event(live_stack):
    run_id = start(live_stack, "print('done')")
    whole = live_stack.watch(run_id)
    last = whole.events[-1]["seq"]
    assert whole.close_code == 1000

    t0 = time.monotonic()
    at_end = live_stack.watch(run_id, after=last, timeout=10)
    assert at_end.events == [] and at_end.close_code == 1000
    assert time.monotonic() - t0 < 3
    past_end = live_stack.watch(run_id, after=last + 50, timeout=10)
    assert past_end.events == [] and past_end.close_code == 1000


def test_one_client_cannot_hold_more_than_its_share_of_sockets(live_stack):
    import redis

    from tests.conftest import TEST_REDIS_URL
    from web.clients import client_key

    cap = 32  # WS_MAX_PER_CLIENT's default, which the stack runs with
    run_id = start(live_stack, quiet(20))
    url = f"{live_stack.ws_url}/ws/runs/{run_id}/"
    # The slots this client's run sockets hold (the suite's stack trusts no proxy: every client
    # is loopback), and its room's.
    key = client_key("127.0.0.1")
    slots = redis.Redis.from_url(TEST_REDIS_URL)

    def held() -> int:
        return sum(slots.zcard(f"ws:client:{who}") for who in (key, f"room:{key}"))

    before = held()

    async def open_many(n: int):
        async def one():
            ws = await aconnect(url, open_timeout=20)
            try:
                await asyncio.wait_for(ws.recv(), 10)
                return ws, None
            except ConnectionClosed as closed:
                return None, closed.rcvd.code if closed.rcvd else None

        results = await asyncio.gather(*(one() for _ in range(n)))
        kept = [ws for ws, _ in results if ws is not None]
        codes = [code for ws, code in results if ws is None]
        # Refused sockets were closed by the server; those kept still stream.
        for ws in kept:
            await ws.close()
        # The server gives each slot back as it handles the close: 32 of them, which a loaded
        # machine may take more than a moment over. Waited for, not assumed after a pause.
        deadline = time.monotonic() + 30
        while held() > before:
            assert time.monotonic() < deadline, f"{held() - before} slots still held after the sockets closed"
            await asyncio.sleep(0.1)
        again = await aconnect(url, open_timeout=20)
        first = json.loads(await asyncio.wait_for(again.recv(), 10))
        await again.close()
        return len(kept), codes, first

    kept, codes, first = asyncio.run(open_many(200))
    assert kept == cap
    assert len(codes) == 200 - cap and set(codes) == {4429}
    assert first["seq"] == 1  # slots come back when sockets close


def test_events_come_a_page_at_a_time(live_stack):
    run_id = start(live_stack, "for i in range(5):\n    print(i, flush=True)\n    __import__('time').sleep(0.05)\n")
    whole = live_stack.wait_finished(run_id)
    seqs, after = [], 0
    while True:
        page = live_stack.get(f"/api/runs/{run_id}?after={after}&limit=2")
        assert len(page["events"]) <= 2
        seqs += [e["seq"] for e in page["events"]]
        if page["events_next"] is None:
            break
        after = page["events_next"]
    assert seqs == [e["seq"] for e in whole["events"]] == list(range(1, len(seqs) + 1))
    status, body = live_stack.fetch(f"/api/runs/{run_id}?limit=0")
    assert status == 400 and "'limit'" in body["error"]
