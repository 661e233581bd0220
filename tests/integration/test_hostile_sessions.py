"""Notebook sessions against hostile cells and hostile callers, through the real server (daphne,
Celery workers, the real sandbox), as a script uses them: plain HTTP and websockets without
Origin, several people at their own addresses (TRUSTED_PROXIES=1).

A cell shares its session's process, so it can write on the event pipe, leave threads behind or
flood its output; none of it may run outside every cell's accounting, hide a later cell's CPU or
memory, swell the session's state without bound, or cost its owner the session for a limit the
cell stopped at. One address may not hold more sessions than a room of people would."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from executor import events as ev
from tests.conftest import own_stack

pytestmark = pytest.mark.django_db(transaction=True)

WALL_S = 6
PER_PERSON = 2
ROOM_SIZE = 2

# Write one line on the session's event pipe, as the runner itself would.
FORGE = ("import sys, os, json\n"
         "_common = next(m for m in list(sys.modules.values())\n"
         "               if (getattr(m, '__file__', None) or '').endswith('/runner/common.py'))\n"
         "_fd = _common.outbox.channel.fd\n"
         "def forge(message):\n"
         "    os.write(_fd, (json.dumps(message) + '\\n').encode())\n")


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory):
    with own_stack("hostile-sessions", 14, tmp_path_factory, TRUSTED_PROXIES="1",
                   SESSION_MAX_PER_CLIENT=str(PER_PERSON), ROOM_SIZE=str(ROOM_SIZE), EXECUTOR_CONCURRENCY="2",
                   RUN_WALL_S=str(WALL_S), EXECUTOR_SESSION_IDLE_CPU_S="2") as stack:
        stack.wait_online("cpu")
        yield stack


def new_session(stack, client: str) -> dict:
    return stack.new_session(client)


def run_cell(stack, session: dict, code: str, client: str):
    watched = stack.run_cell(session, code, client)[1]
    assert watched.finished is not None, watched.events[-3:]
    return watched


def state_of(stack, session: dict, client: str) -> dict:
    status, state = stack.call("GET", session["url"], client=client)
    assert status == 200, state
    return state


def end(stack, session: dict, client: str) -> None:
    stack.call("DELETE", session["url"], client=client)


def call_with_cookie(stack, method: str, path: str, body, client: str, cookie: str) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"X-Forwarded-For": client, "Cookie": cookie,
               **({"Content-Type": "application/json"} if data is not None else {})}
    req = urllib.request.Request(stack.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else {}


# -- what a cell leaves running ------------------------------------------------------------------


def test_a_thread_left_spinning_after_a_later_cell_stops_the_session_and_says_so(stack):
    """The idle-CPU watch holds for every cell, not only the first (the sandbox's CPU was read
    once, at the first cell's end, and never again)."""
    client = "198.51.100.61"
    session = new_session(stack, client)
    run_cell(stack, session, "x = 1\n", client)
    spun = run_cell(stack, session, "import threading\n"
                                    "def spin():\n    while True:\n        pass\n"
                                    "threading.Thread(target=spin, daemon=True).start()\n", client)
    assert spun.finished["status"] == ev.SUCCEEDED, spun.finished
    deadline = time.monotonic() + 45
    state = state_of(stack, session, client)
    while state["state"] != "stopped" and time.monotonic() < deadline:
        time.sleep(1)
        state = state_of(stack, session, client)
    end(stack, session, client)
    assert state["state"] == "stopped", "a thread spun for 45 s while no cell ran and the session lived on"
    assert "CPU while no cell ran" in state["stopped_reason"], state["stopped_reason"]


def test_a_later_cell_reports_its_own_cpu_and_memory(stack):
    client = "198.51.100.62"
    session = new_session(stack, client)
    run_cell(stack, session, "x = 1\n", client)
    # Half a second of CPU: on a loaded machine it takes several of wall clock, within this
    # stack's 6.
    busy = run_cell(stack, session, "import time\nt = time.process_time()\n"
                                    "while time.process_time() - t < 0.5:\n    pass\n"
                                    "big = b'\\x01' * (300 * 2**20)\n", client)
    end(stack, session, client)
    assert busy.finished["status"] == ev.SUCCEEDED, busy.finished
    assert busy.finished["cpu_ms"] >= 400, busy.finished
    assert busy.finished["peak_memory_kb"] >= 300 * 1024, busy.finished


def test_a_forged_cell_done_neither_ends_the_cell_nor_shifts_the_next(stack):
    """A ``cell_done`` the cell's code writes itself is not its end: the cell keeps its wall
    clock and its output, and the next cell is not ended by the real one that follows."""
    client = "198.51.100.63"
    session = new_session(stack, client)
    run_cell(stack, session, "x = 1\n", client)
    forged = run_cell(stack, session, FORGE + "forge({'type': 'cell_done', 'status': 'succeeded'})\n"
                                              "import time\ntime.sleep(2)\nprint('two')\n", client)
    time.sleep(1)
    after = [run_cell(stack, session, f"import time\ntime.sleep(0.5)\nprint('cell {n}')\n", client) for n in (3, 4)]
    end(stack, session, client)
    assert forged.text() == "two\n" and forged.finished["wall_ms"] >= 2000, (forged.text(), forged.finished)
    for n, watched in zip((3, 4), after):
        assert watched.finished["status"] == ev.SUCCEEDED, watched.finished
        assert watched.text() == f"cell {n}\n", watched.text()
        assert watched.finished["wall_ms"] >= 500, watched.finished


def test_the_names_a_session_holds_stay_bounded(stack):
    """What GET /api/sessions/<id> (and every state on its socket, and Redis) holds of the
    namespace is bounded, whatever the cells send as ``shapes``."""
    client = "198.51.100.64"
    session = new_session(stack, client)
    code = FORGE + ("for k in range(20):\n"
                    "    forge({'type': 'shapes',\n"
                    "           'names': {('n%03d_%03d_' % (k, j)).ljust(80, 'x'): {'type': 'T' * 120}\n"
                    "                     for j in range(200)}})\n")
    for _ in range(2):
        run_cell(stack, session, code, client)
    state = state_of(stack, session, client)
    end(stack, session, client)
    assert len(state["names"]) <= 1000, len(state["names"])
    assert len(json.dumps(state)) < 512 * 1024, len(json.dumps(state))


# -- limits a cell stops at ----------------------------------------------------------------------


def test_an_output_flood_stops_the_cell_and_the_session_keeps_its_state(stack):
    """The output limit interrupts the cell like the wall clock does (its code stops at once);
    the flood still in the pipes is not 'a cell that did not stop'."""
    client = "198.51.100.65"
    session = new_session(stack, client)
    run_cell(stack, session, "keep = 7\n", client)
    flood = run_cell(stack, session, "while True:\n    print('x' * 1000)\n", client)
    assert flood.finished["status"] == ev.LIMIT_EXCEEDED, flood.finished
    assert "output limit" in flood.finished["message"]
    state = state_of(stack, session, client)
    after = run_cell(stack, session, "print(keep)\n", client) if state["state"] != "stopped" else None
    end(stack, session, client)
    assert state["state"] != "stopped", state["stopped_reason"]
    assert after.text() == "7\n"


def test_a_fork_bomb_ends_the_session_and_says_what_ended_it(stack):
    client = "198.51.100.66"
    session = new_session(stack, client)
    run_cell(stack, session, "x = 1\n", client)
    bomb = run_cell(stack, session, "import os\nwhile True:\n    try:\n        os.fork()\n"
                                    "    except OSError:\n        pass\n", client)
    state = state_of(stack, session, client)
    assert bomb.finished["status"] == ev.LIMIT_EXCEEDED and "process limit" in bomb.finished["message"], bomb.finished
    assert state["state"] == "stopped" and "process limit" in state["stopped_reason"]
    # It was never interrupted: the process limit ends the session outright.
    assert "did not stop when interrupted" not in bomb.finished["message"], bomb.finished["message"]
    assert "did not stop when interrupted" not in state["stopped_reason"], state["stopped_reason"]


def test_a_cell_that_ignores_sigint_ends_its_session_at_the_wall_clock_and_says_so(stack):
    client = "198.51.100.67"
    session = new_session(stack, client)
    run_cell(stack, session, "x = 1\n", client)
    started = time.monotonic()
    stuck = run_cell(stack, session, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                     "while True:\n    pass\n", client)
    assert time.monotonic() - started < WALL_S + 5 + 10
    assert stuck.finished["status"] == ev.TIMED_OUT, stuck.finished
    assert "did not stop when interrupted" in stuck.finished["message"], stuck.finished["message"]
    status, gone = stack.call("POST", f"{session['url']}/cells", {"code": "print(x)"}, client=client)
    assert status == 410 and gone["state"] == "stopped"


# -- who holds what ------------------------------------------------------------------------------


def test_one_address_minting_browser_identities_holds_no_more_than_a_rooms_sessions(stack):
    """Each browser identity is a person, but a fresh one is a page load away: the sessions of
    everyone signed out at one address are bounded together, as a room's runs are."""
    client = "198.51.100.68"
    made = []
    for _ in range(4):
        cookie = stack.page_cookie(client)
        assert "browser=" in cookie
        for _ in range(PER_PERSON):
            status, session = call_with_cookie(stack, "POST", "/api/sessions", {}, client, cookie)
            if status == 201:
                made.append((session, cookie))
    for session, cookie in made:
        call_with_cookie(stack, "DELETE", session["url"], None, client, cookie)
    assert len(made) <= ROOM_SIZE * PER_PERSON, f"one address made {len(made)} sessions"


def test_a_browser_persons_session_is_not_its_addresses_nor_another_browsers(stack):
    client = "198.51.100.69"
    cookie, other = stack.page_cookie(client), stack.page_cookie(client)
    status, session = call_with_cookie(stack, "POST", "/api/sessions", {}, client, cookie)
    assert status == 201, session
    for who in (other, ""):
        for method, path, body in (("GET", session["url"], None),
                                   ("POST", f"{session['url']}/cells", {"code": "print(1)"}),
                                   ("DELETE", session["url"], None)):
            status, answer = call_with_cookie(stack, method, path, body, client, who)
            assert status == 404, (method, who, answer)
        shouted = session["url"].upper().replace("/API/SESSIONS/", "/api/sessions/")
        status, answer = call_with_cookie(stack, "GET", shouted, None, client, who)
        assert status == 404, answer
    status, state = call_with_cookie(stack, "GET", session["url"], None, client, cookie)
    assert status == 200 and state["state"] == "idle"
    call_with_cookie(stack, "DELETE", session["url"], None, client, cookie)


def test_sessions_share_no_files_processes_or_environment(stack):
    alice, bob = "198.51.100.70", "198.51.100.71"
    mine, theirs = new_session(stack, alice), new_session(stack, bob)
    wrote = run_cell(stack, mine, "import os\nopen('/tmp/alice', 'w').write('secret')\nos.environ['ALICE'] = '1'\n"
                                  "import time\nif os.fork() == 0:\n    time.sleep(600)\n", alice)
    assert wrote.finished["status"] == ev.SUCCEEDED, wrote.finished
    looked = run_cell(stack, theirs, "import os\nprint(os.path.exists('/tmp/alice'), 'ALICE' in os.environ,\n"
                                     "      sorted(p for p in os.listdir('/proc') if p.isdigit()))\n", bob)
    for session, client in ((mine, alice), (theirs, bob)):
        end(stack, session, client)
    assert looked.text() == "False False ['1']\n", looked.text()


@pytest.mark.parametrize("body, status, words", [
    (b"{bad", 400, "not valid JSON"),
    ([], 400, "JSON object"),
    ({"code": "1", "options": {"wall_s": 1e9}}, 400, "unknown option"),
    ({"code": "1", "options": "x"}, 400, "must be an object"),
    ({"code": "1", "device": "gpu"}, 400, "unknown field"),
    ({"code": "\ud800"}, 400, "Unicode"),
])
def test_a_bad_cell_is_a_clear_4xx_and_the_next_cell_runs(stack, body, status, words):
    client = "198.51.100.72"
    session = new_session(stack, client)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer_status, answer, _ = stack.post_as(client, f"{session['url']}/cells", data)
    after = run_cell(stack, session, "print('fine')\n", client)
    end(stack, session, client)
    assert answer_status == status and words in answer["error"], answer
    assert after.text() == "fine\n"
