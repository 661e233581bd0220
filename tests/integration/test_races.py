"""The race suite: every cap, hit by requests that arrive together, through the real stack.

Each test opens its connections to daphne first (plain sockets: a script's requests, from one or
several addresses through X-Forwarded-For, with a browser's cookie or none), waits for all of
them on a barrier, then sends every request at once, and asserts that exactly the cap was
admitted and every other request was told why (429, or 503 where the node is full). Requests
that merely overlap often miss a race; these are released together. docs/SECURITY.md lists each
cap with its mechanism and its test here."""

from __future__ import annotations

import contextlib
import http.client
import json
import secrets
import socket
import threading
import time
import urllib.parse

import pytest

from executor import registry
from tests.conftest import own_stack

pytestmark = pytest.mark.django_db(transaction=True)

PERSON_SESSIONS, ROOM_SESSIONS, NODE_SESSIONS = 3, 4, 5
ACTIVE_PER_ADDRESS, ACTIVE_PER_ROOM = 3, 5
ACCOUNT_FAILURES, CLIENT_FAILURES = 10, 15
JOIN_MISSES = 30  # courses.actions.members.JOINS_PER_HOUR
SIGN_UPS, SNIPPETS, FORMATS, SOCKETS, NOTEBOOKS = 3, 5, 6, 4, 3
ROOM_SOCKETS, WAITING, ROOM_WAITING = 6, 3, 5
NOTEBOOK_SHARES, ANALYSES, LINTS = 4, 5, 7
# What the rate tests' daphne is restarted with (``web_with``): a person's runs a minute and new
# sessions an hour, and a room of one (its rates are then a person's).
RUNS_A_MINUTE, SESSIONS_AN_HOUR = 2, 2
PASSWORD = "a long test password 1"


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory):
    with own_stack("races", 7, tmp_path_factory, TRUSTED_PROXIES="1", EXECUTOR_CONCURRENCY="2", RUN_WALL_S="10",
                   SESSION_MAX_PER_CLIENT=str(PERSON_SESSIONS), SESSION_MAX_PER_ROOM=str(ROOM_SESSIONS),
                   EXECUTOR_MAX_SESSIONS=str(NODE_SESSIONS), SESSION_RATE_LIMIT_PER_HOUR="1000",
                   RUN_MAX_ACTIVE_PER_CLIENT="2", RUN_MAX_ACTIVE_PER_ADDRESS=str(ACTIVE_PER_ADDRESS),
                   RUN_MAX_ACTIVE_PER_ROOM=str(ACTIVE_PER_ROOM), RUN_RATE_LIMIT_PER_MINUTE="1000",
                   RUN_QUEUE_MAX="500", RUN_BUDGET_S_PER_HOUR="100000", RUN_BUDGET_S_PER_DAY="100000",
                   SIGNIN_FAILURES_PER_ACCOUNT=str(ACCOUNT_FAILURES), SIGNIN_FAILURES_PER_CLIENT=str(CLIENT_FAILURES),
                   SIGNUP_RATE_LIMIT_PER_HOUR=str(SIGN_UPS), SNIPPET_RATE_LIMIT_PER_HOUR=str(SNIPPETS),
                   FORMAT_RATE_LIMIT_PER_MINUTE=str(FORMATS), WS_MAX_PER_CLIENT=str(SOCKETS),
                   WS_MAX_PER_ROOM=str(ROOM_SOCKETS), WS_MAX_NEW_PER_CLIENT=str(WAITING),
                   WS_MAX_NEW_PER_ROOM=str(ROOM_WAITING), NOTEBOOK_MAX_PER_PERSON=str(NOTEBOOKS),
                   NOTEBOOK_SHARE_RATE_LIMIT_PER_HOUR=str(NOTEBOOK_SHARES),
                   ANALYSE_RATE_LIMIT_PER_MINUTE=str(ANALYSES), LINT_RATE_LIMIT_PER_MINUTE=str(LINTS),
                   EXECUTOR_HEARTBEAT_S="1") as stack:
        stack.wait_online("cpu")
        yield stack


def address(n: int) -> str:
    return f"198.51.100.{n}"


def together(stack, requests: list[dict], timeout: float = 60) -> list[tuple[int, dict | str, dict]]:
    """Send ``requests`` (each {"method", "path", "body"?, "form"?, "client"?, "cookie"?,
    "headers"?}) at once: every connection is opened first, then all are released on a barrier.
    Each answer as (status, JSON or text, headers), in the order asked."""
    host, port = "127.0.0.1", stack.port
    barrier = threading.Barrier(len(requests))
    answers: list = [None] * len(requests)

    def send(i: int, request: dict) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            headers = dict(request.get("headers") or {})
            if request.get("client"):
                headers["X-Forwarded-For"] = request["client"]
            if request.get("cookie"):
                headers["Cookie"] = request["cookie"]
            body = None
            if "body" in request:
                body = json.dumps(request["body"]).encode()
                headers["Content-Type"] = "application/json"
            elif "form" in request:
                body = urllib.parse.urlencode(request["form"]).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            barrier.wait(timeout=timeout)
            conn.request(request["method"], request["path"], body=body, headers=headers)
            response = conn.getresponse()
            raw = response.read().decode()
            try:
                content = json.loads(raw)
            except ValueError:
                content = raw
            answers[i] = (response.status, content, response.msg)
        except Exception as exc:  # noqa: BLE001 - said in the assertion, not lost in a thread
            answers[i] = (0, repr(exc), {})
        finally:
            conn.close()

    threads = [threading.Thread(target=send, args=(i, r)) for i, r in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 10)
    return answers


@contextlib.contextmanager
def web_with(stack, **env):
    """The stack's daphne, for the block, restarted with ``env`` over its environment, then as it
    was: caps that the suite's other bursts need high are lowered for the test of their own."""
    saved = dict(stack.env)
    stack.env.update({name: str(value) for name, value in env.items()})
    stack.restart_web()
    try:
        yield stack
    finally:
        stack.env.clear()
        stack.env.update(saved)
        stack.restart_web()


def clear_of_the_windows_turn(window_s: int, margin_s: float = 15) -> None:
    """A rate counts per fixed window (``web.ratelimit.check_rate``): a burst astride a window's
    turn may have the limit in each of the two (docs/SECURITY.md says so). Sent within
    ``margin_s`` of the turn, a burst waits until it has passed."""
    left = window_s - time.time() % window_s
    if left < margin_s:
        time.sleep(left + 0.5)


def admitted_per(answers, requests, status: int = 201) -> dict[str, int]:
    """How many of each address's requests were answered ``status``."""
    counts: dict[str, int] = {}
    for (answer, _content, _headers), request in zip(answers, requests):
        counts[request["client"]] = counts.get(request["client"], 0) + (answer == status)
    return counts


def statuses(answers) -> list[int]:
    return sorted(status for status, _content, _headers in answers)


def assert_refusals_say_why(answers, admitted: set[int], refused: int, limit: str | None = None,
                            retry_after: bool = True) -> None:
    """Every answer not admitted is ``refused`` with an error that says which ``limit`` and, for
    limits that lapse with time, when to come back (a held session frees only when it ends)."""
    for status, content, headers in answers:
        if status in admitted:
            continue
        assert status == refused, (status, content)
        if isinstance(content, dict):
            assert content.get("error"), content
            if limit is not None:
                assert content.get("limit") == limit, content
        if retry_after:
            assert int(headers.get("Retry-After", "0")) > 0, headers


def csrf_form(stack, path: str, client: str) -> tuple[str, str]:
    """A page's CSRF cookie and token (what a browser sends back with the form)."""
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=30)
    conn.request("GET", path, headers={"X-Forwarded-For": client})
    response = conn.getresponse()
    response.read()
    cookie = next(c.split(";")[0] for c in response.headers.get_all("Set-Cookie") if c.startswith("csrftoken="))
    conn.close()
    return cookie, cookie.partition("=")[2]


def sign_in(stack, username: str, client: str) -> tuple[str, str]:
    """Sign in through the page, as a browser: its Cookie header and the CSRF token to send."""
    cookie, token = csrf_form(stack, "/accounts/login/", client)
    (status, _c, headers), = together(stack, [{"method": "POST", "path": "/accounts/login/", "client": client,
                                              "cookie": cookie, "form": {"username": username, "password": PASSWORD,
                                                                         "csrfmiddlewaretoken": token}}])
    assert status == 302
    cookies = dict(c.split(";")[0].split("=", 1) for c in headers.get_all("Set-Cookie"))
    csrf = cookies.get("csrftoken", token)
    return f"csrftoken={csrf}; sessionid={cookies['sessionid']}", csrf


def end_sessions(stack, sessions: list[tuple[str, str | None, str | None]]) -> None:
    """DELETE each (id, address, cookie), as its maker."""
    answers = together(stack, [{"method": "DELETE", "path": f"/api/sessions/{sid}", "client": client,
                                "cookie": cookie} for sid, client, cookie in sessions]) if sessions else []
    assert all(status == 200 for status, *_ in answers), answers


def made_sessions(answers, requests) -> list[tuple[str, str | None, str | None]]:
    return [(content["id"], r.get("client"), r.get("cookie")) for (status, content, _h), r in zip(answers, requests)
            if status == 201]


# Notebook sessions ------------------------------------------------------------------------------

def test_ten_sessions_at_once_from_one_address_make_exactly_the_persons_cap(stack):
    requests = [{"method": "POST", "path": "/api/sessions", "body": {}, "client": address(1)}] * 10
    answers = together(stack, requests)
    assert statuses(answers) == [201] * PERSON_SESSIONS + [429] * (10 - PERSON_SESSIONS), answers
    assert_refusals_say_why(answers, {201}, 429, "sessions", retry_after=False)
    made = made_sessions(answers, requests)
    # None of those made was taken for one the playground forgot while the others were counted.
    for sid, client, _cookie in made:
        status, session = stack.call("GET", f"/api/sessions/{sid}", client=client)
        assert status == 200 and session["state"] == "idle", session
    end_sessions(stack, made)


def test_ten_browsers_behind_one_address_make_exactly_the_rooms_cap(stack):
    cookies = [stack.page_cookie(address(2)) for _ in range(10)]
    requests = [{"method": "POST", "path": "/api/sessions", "body": {}, "client": address(2), "cookie": c}
                for c in cookies]
    answers = together(stack, requests)
    assert statuses(answers) == [201] * ROOM_SESSIONS + [429] * (10 - ROOM_SESSIONS), answers
    assert_refusals_say_why(answers, {201}, 429, "room_sessions", retry_after=False)
    end_sessions(stack, made_sessions(answers, requests))


def test_ten_addresses_at_once_get_exactly_the_nodes_sessions_which_all_run(stack):
    """The node's EXECUTOR_MAX_SESSIONS is the kind's whole capacity here: exactly that many are
    made, the rest are told the node is full (503), every one made runs its cells, and the
    table, the node's count and its heartbeat agree; after the node restarts, they agree again."""
    requests = [{"method": "POST", "path": "/api/sessions", "body": {}, "client": address(10 + n)}
                for n in range(10)]
    answers = together(stack, requests)
    assert statuses(answers) == [201] * NODE_SESSIONS + [503] * (10 - NODE_SESSIONS), answers
    assert_refusals_say_why(answers, {201}, 503, "node_sessions")
    made = made_sessions(answers, requests)
    cells = together(stack, [{"method": "POST", "path": f"/api/sessions/{sid}/cells", "body": {"code": "x = 41 + 1"},
                              "client": client} for sid, client, _cookie in made])
    assert [status for status, *_ in cells] == [201] * NODE_SESSIONS, cells
    for _status, run, _h in cells:
        detail = stack.wait_finished(run["id"], timeout=60)
        assert detail["status"] == "succeeded", (detail["message"], detail["events"][-3:])
    for sid, client, _cookie in made:
        status, session = stack.call("GET", f"/api/sessions/{sid}", client=client)
        assert session["state"] == "idle" and session["cells_run"] == 1, session
    from playground.models import Session

    live_rows = Session.objects.filter(ended_at__isnull=True).count()
    assert live_rows == _node_sessions(stack) == NODE_SESSIONS  # the table and the node agree

    # The node restarts: the sessions it held are stopped with that said, not "forgotten", and
    # its slots are free again.
    stack.kill("executor", __import__("signal").SIGKILL)
    stack.start_executor()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        states = [stack.call("GET", f"/api/sessions/{sid}", client=client)[1] for sid, client, _c in made]
        if all(s["state"] == "stopped" for s in states):
            break
        time.sleep(0.5)
    assert all(s["state"] == "stopped" and s["stopped_reason"] in ("its node restarted", _NODE_LOST) for s in states), \
        states
    assert not [s for s in states if "forgot" in (s["stopped_reason"] or "")]
    assert Session.objects.filter(ended_at__isnull=True).count() == 0
    deadline = time.monotonic() + 60  # the restarted node's first beat comes once a runner is warm
    while _node_sessions(stack) != 0 and time.monotonic() < deadline:
        pass
    assert _node_sessions(stack) == 0
    stack.wait_online("cpu")
    answers = together(stack, requests[:NODE_SESSIONS])
    assert statuses(answers) == [201] * NODE_SESSIONS, answers
    end_sessions(stack, made_sessions(answers, requests[:NODE_SESSIONS]))


def test_eight_cells_at_once_on_one_session_start_exactly_one(stack):
    """A session runs one cell at a time (``sessionstate.take``, one Lua call): eight cells sent
    at once by its maker, a browser, start one; the rest are told the session is busy (409: the
    session's state, not a rate, refuses them, and it frees when that cell ends)."""
    cookie = stack.page_cookie(address(20))
    (status, session, _h), = together(stack, [{"method": "POST", "path": "/api/sessions", "body": {},
                                               "client": address(20), "cookie": cookie}])
    assert status == 201, session
    cells = together(stack, [{"method": "POST", "path": f"/api/sessions/{session['id']}/cells",
                              "body": {"code": "import time\ntime.sleep(3)"}, "client": address(20),
                              "cookie": cookie}] * 8)
    assert statuses(cells) == [201] + [409] * 7, cells
    assert all("still running" in content["error"] for status, content, _h in cells if status == 409), cells
    run = next(content for status, content, _h in cells if status == 201)
    assert stack.wait_finished(run["id"])["status"] == "succeeded"
    end_sessions(stack, [(session["id"], address(20), cookie)])


_NODE_LOST = "its node stopped answering (its state is lost; restore the notebook to run its cells again)"


def _node_sessions(stack) -> int:
    """What the node's heartbeat says it holds (it beats every second here)."""
    import redis

    time.sleep(2.5)
    workers = registry.online_workers(redis.Redis.from_url(stack.env["REDIS_URL"]), "cpu", 30)
    return sum(int(w.get("sessions", 0)) for w in workers)


# Runs at once ------------------------------------------------------------------------------------

SLEEP = "import time\ntime.sleep(4)\n"


def test_twelve_runs_at_once_from_a_script_get_exactly_the_addresss_share(stack):
    requests = [{"method": "POST", "path": "/api/runs", "body": {"code": SLEEP}, "client": address(30)}] * 12
    answers = together(stack, requests)
    assert statuses(answers) == [201] * ACTIVE_PER_ADDRESS + [429] * (12 - ACTIVE_PER_ADDRESS), answers
    assert_refusals_say_why(answers, {201}, 429, "active_runs")
    _cancel(stack, answers, address(30))


def test_twelve_browsers_behind_one_address_get_exactly_the_rooms_runs(stack):
    cookies = [stack.page_cookie(address(31)) for _ in range(12)]
    requests = [{"method": "POST", "path": "/api/runs", "body": {"code": SLEEP}, "client": address(31), "cookie": c}
                for c in cookies]
    answers = together(stack, requests)
    assert statuses(answers) == [201] * ACTIVE_PER_ROOM + [429] * (12 - ACTIVE_PER_ROOM), answers
    assert_refusals_say_why(answers, {201}, 429, "active_runs")
    _cancel(stack, answers, address(31), cookies)


QUEUE = 3


def test_twelve_addresses_at_once_get_exactly_the_queues_places(stack):
    """RUN_QUEUE_MAX: with both of the node's slots busy, twelve scripts from twelve addresses
    start a run at once. Each has run slots to spare, so only the queue can refuse: exactly its
    places are admitted (taken at admission, before any run is pushed), the rest answered 503,
    and every admitted run runs once the slots free."""
    import redis

    from playground.quotas import place_key

    with web_with(stack, RUN_QUEUE_MAX=QUEUE):
        busy = [(address(n), running_run(stack, address(n))) for n in (120, 121)]
        deadline = time.monotonic() + 30
        while any(stack.get(f"/api/runs/{run['id']}")["status"] != "running" for _, run in busy):
            assert time.monotonic() < deadline, "the slots did not fill"
            time.sleep(0.05)
        requests = [{"method": "POST", "path": "/api/runs", "body": {"code": f"print({n})"}, "client": address(n)}
                    for n in range(122, 134)]
        answers = together(stack, requests)
        assert statuses(answers) == [201] * QUEUE + [503] * (len(requests) - QUEUE), answers
        assert_refusals_say_why(answers, {201}, 503, "queue_length")
        # Pushed, each gave its place back: the queue's list counts them now, once.
        assert redis.Redis.from_url(stack.env["REDIS_URL"]).zcard(place_key("cpu")) == 0
        assert registry.queue_depth(redis.Redis.from_url(stack.env["REDIS_URL"]), "cpu") == QUEUE
        for client, run in busy:
            together(stack, [{"method": "POST", "path": f"/api/runs/{run['id']}/cancel", "client": client}])
        for status, run, _h in answers:
            if status == 201:
                assert stack.wait_finished(run["id"], timeout=60)["status"] == "succeeded"


def _cancel(stack, answers, client, cookies=None) -> None:
    for i, (status, run, _h) in enumerate(answers):
        if status == 201:
            together(stack, [{"method": "POST", "path": f"/api/runs/{run['id']}/cancel", "client": client,
                              "cookie": cookies[i] if cookies else None}])


# Sockets -----------------------------------------------------------------------------------------

def open_sockets(stack, sockets: list[dict], timeout: float = 60) -> list:
    """Open ``sockets`` (each {"path", "client"?, "cookie"?, "send"?}) at once, as ``together``
    sends requests: every connection is made first, then all handshakes are released on a barrier.
    A socket is "held" once the server says something on it (a run's events, a session's state,
    the answer to what ``send`` sent), ("closed", code) when it is closed before that. Those held
    stay open until every socket is decided, so that none gives its slot to a later one. Counts
    only: a socket is decided by what the server says, not by how long it took to say it."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    opened = threading.Barrier(len(sockets))
    decided = threading.Barrier(len(sockets))
    outcomes: list = [None] * len(sockets)

    def open_one(i: int, spec: dict) -> None:
        headers = {**({"X-Forwarded-For": spec["client"]} if spec.get("client") else {}),
                   **({"Cookie": spec["cookie"]} if spec.get("cookie") else {})}
        try:
            sock = socket.create_connection(("127.0.0.1", stack.port), timeout=timeout)
            opened.wait(timeout=timeout)
            with connect(f"{stack.ws_url}{spec['path']}", sock=sock, additional_headers=headers,
                         open_timeout=timeout, max_size=1024**2) as ws:
                try:
                    if spec.get("send"):
                        ws.send(json.dumps(spec["send"]))
                    ws.recv(timeout=timeout)
                    outcomes[i] = "held"
                except ConnectionClosed as exc:
                    outcomes[i] = ("closed", exc.rcvd.code if exc.rcvd else None)
                decided.wait(timeout=timeout)
        except ConnectionClosed as exc:  # closed while the handshake was answered
            outcomes[i] = outcomes[i] or ("closed", exc.rcvd.code if exc.rcvd else None)
        except threading.BrokenBarrierError:
            outcomes[i] = outcomes[i] or ("error", "another socket failed")
        except Exception as exc:  # noqa: BLE001 - said in the assertion, not lost in a thread
            outcomes[i] = outcomes[i] or ("error", repr(exc))
            decided.abort()

    threads = [threading.Thread(target=open_one, args=(i, spec)) for i, spec in enumerate(sockets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * timeout + 10)
    return outcomes


def assert_sockets(outcomes, held: int) -> None:
    """Exactly ``held`` held, every other closed at once with 4429, "too many" (daphne sends a
    close's code without its reason)."""
    from executor.runner.protocol import CLOSE_CODES

    assert outcomes.count("held") == held, outcomes
    refused = [o for o in outcomes if o != "held"]
    assert all(o == ("closed", CLOSE_CODES["too_many"]) for o in refused), outcomes


def running_run(stack, client: str) -> dict:
    """A run that sleeps past the sockets opened on it (RUN_WALL_S is 10 here)."""
    status, run = stack.call("POST", "/api/runs", {"code": "import time\ntime.sleep(9)\n"}, client=client)
    assert status == 201, run
    return run


def test_ten_run_sockets_at_once_get_exactly_the_persons_sockets(stack):
    """Ten sockets opened on a running run at once by one script: exactly its WS_MAX_PER_CLIENT
    are held, the rest closed at once with the reason."""
    run = running_run(stack, address(41))
    outcomes = open_sockets(stack, [{"path": f"/ws/runs/{run['id']}/", "client": address(40)}] * 10)
    assert_sockets(outcomes, SOCKETS)


def test_sixteen_run_sockets_from_two_rooms_get_exactly_each_rooms_sockets(stack):
    """Two addresses, two browsers at each opening their WS_MAX_PER_CLIENT sockets on one run, at
    once: each address's browsers together hold its room's WS_MAX_PER_ROOM, no more."""
    run = running_run(stack, address(42))
    sockets = [{"path": f"/ws/runs/{run['id']}/", "client": address(n), "cookie": cookie}
               for n in (43, 44) for cookie in [stack.page_cookie(address(n)) for _ in range(2)]
               for _ in range(SOCKETS)]
    outcomes = open_sockets(stack, sockets)
    assert_sockets(outcomes, 2 * ROOM_SOCKETS)
    for n in (43, 44):
        mine = [o for o, s in zip(outcomes, sockets) if s["client"] == address(n)]
        assert mine.count("held") == ROOM_SOCKETS, outcomes


def test_fourteen_sockets_for_the_next_run_get_exactly_the_waiting_sockets(stack):
    """Sockets a page opens ahead of its next run (``/ws/runs/new/``) count apart: a script's
    address holds WS_MAX_NEW_PER_CLIENT of them, three browsers behind another address their
    room's WS_MAX_NEW_PER_ROOM between them. A held one answers a bad start and stays."""
    bad = {"op": "nothing"}
    sockets = [{"path": "/ws/runs/new/", "client": address(45), "send": bad} for _ in range(5)]
    sockets += [{"path": "/ws/runs/new/", "client": address(46), "cookie": cookie, "send": bad}
                for cookie in [stack.page_cookie(address(46)) for _ in range(3)] for _ in range(WAITING)]
    outcomes = open_sockets(stack, sockets)
    assert_sockets(outcomes, WAITING + ROOM_WAITING)
    assert outcomes[:5].count("held") == WAITING, outcomes


def test_fourteen_session_sockets_at_once_get_exactly_each_persons_sockets(stack):
    """A session's sockets are its maker's run sockets: a script's session and a browser's,
    seven sockets each at once, hold WS_MAX_PER_CLIENT each."""
    cookie = stack.page_cookie(address(48))
    made = []
    for client, cookies in ((address(47), None), (address(48), cookie)):
        (status, session, _h), = together(stack, [{"method": "POST", "path": "/api/sessions", "body": {},
                                                   "client": client, "cookie": cookies}])
        assert status == 201, session
        made.append((session, client, cookies))
    sockets = [{"path": session["ws"], "client": client, "cookie": cookies}
               for session, client, cookies in made for _ in range(7)]
    outcomes = open_sockets(stack, sockets)
    assert_sockets(outcomes, 2 * SOCKETS)
    assert outcomes[:7].count("held") == SOCKETS, outcomes
    end_sessions(stack, [(session["id"], client, cookies) for session, client, cookies in made])


# Sign-ins and join codes -------------------------------------------------------------------------

def test_twenty_wrong_passwords_at_once_get_exactly_the_accounts_ten_checks(stack, django_user_model):
    django_user_model.objects.create_user("mallory-target", "t@example.com", PASSWORD)
    requests = []
    for n in range(20):
        cookie, token = csrf_form(stack, "/accounts/login/", address(50 + n))
        requests.append({"method": "POST", "path": "/accounts/login/", "client": address(50 + n), "cookie": cookie,
                         "form": {"username": "mallory-target", "password": f"guess {n}",
                                  "csrfmiddlewaretoken": token}})
    answers = together(stack, requests)
    # Checked and wrong: the form again (200). Past the account's limit: 429, before any hashing.
    assert statuses(answers) == [200] * ACCOUNT_FAILURES + [429] * (20 - ACCOUNT_FAILURES), \
        [(s, c[:200] if isinstance(c, str) else c) for s, c, _ in answers]
    assert all("too many failed sign-ins to this account" in c.lower() for s, c, _ in answers if s == 429)
    # The right password, now, is refused as well: the account's limit holds whoever asks.
    cookie, token = csrf_form(stack, "/accounts/login/", address(99))
    (status, _c, _h), = together(stack, [{"method": "POST", "path": "/accounts/login/", "client": address(99),
                                         "cookie": cookie, "form": {"username": "mallory-target", "password": PASSWORD,
                                                                    "csrfmiddlewaretoken": token}}])
    assert status == 429


def test_twenty_guesses_at_once_from_one_address_get_exactly_the_clients_checks(stack):
    cookie, token = csrf_form(stack, "/accounts/login/", address(100))
    requests = [{"method": "POST", "path": "/accounts/login/", "client": address(100), "cookie": cookie,
                 "form": {"username": f"nobody-{n}", "password": "guess", "csrfmiddlewaretoken": token}}
                for n in range(20)]
    answers = together(stack, requests)
    assert statuses(answers) == [200] * CLIENT_FAILURES + [429] * (20 - CLIENT_FAILURES)
    assert all("from your address" in c for s, c, _ in answers if s == 429)


def test_forty_join_codes_at_once_get_exactly_the_addresss_misses(stack):
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    requests = [{"method": "GET", "path": "/courses/join/" + "".join(secrets.choice(alphabet) for _ in range(8)),
                 "client": address(101)} for _ in range(40)]
    answers = together(stack, requests)
    assert statuses(answers) == [404] * JOIN_MISSES + [429] * (40 - JOIN_MISSES)


# Sign-ups, shares, the editor's requests, API tokens ----------------------------------------------

def test_ten_sign_ups_at_once_get_exactly_the_addresss_sign_ups(stack):
    cookie, token = csrf_form(stack, "/accounts/signup/", address(102))
    requests = [{"method": "POST", "path": "/accounts/signup/", "client": address(102), "cookie": cookie,
                 "form": {"username": f"racer{n}", "password1": PASSWORD, "password2": PASSWORD,
                          "csrfmiddlewaretoken": token}} for n in range(10)]
    answers = together(stack, requests)
    assert statuses(answers) == [302] * SIGN_UPS + [429] * (10 - SIGN_UPS)


def test_twelve_shares_at_once_get_exactly_the_addresss_snippets(stack):
    cookies = [stack.page_cookie(address(103)) for _ in range(12)]
    requests = [{"method": "POST", "path": "/api/snippets", "body": {"code": f"print({n})"}, "client": address(103),
                 "cookie": c} for n, c in enumerate(cookies)]
    answers = together(stack, requests)
    assert statuses(answers) == [201] * SNIPPETS + [429] * (12 - SNIPPETS), answers
    assert_refusals_say_why(answers, {201}, 429, "rate")


def test_twelve_formats_at_once_get_exactly_the_persons_editor_requests(stack):
    requests = [{"method": "POST", "path": "/api/format", "body": {"code": "x=1"}, "client": address(104)}] * 12
    answers = together(stack, requests)
    assert statuses(answers) == [200] * FORMATS + [429] * (12 - FORMATS), answers
    assert_refusals_say_why(answers, {200}, 429, "rate")


def test_ten_tokens_at_once_stop_at_the_accounts_hundred(stack, django_user_model):
    from accounts.actions import TOKENS_MAX, do_create_token

    user = django_user_model.objects.create_user("token-racer", "r@example.com", PASSWORD)
    for n in range(TOKENS_MAX - 3):
        do_create_token(user, f"t{n}")
    signed_in, csrf = sign_in(stack, "token-racer", address(105))
    requests = [{"method": "POST", "path": "/api/me/tokens", "body": {"name": f"race {n}"}, "client": address(105),
                 "cookie": signed_in, "headers": {"X-CSRFToken": csrf}} for n in range(10)]
    answers = together(stack, requests)
    assert statuses(answers) == [201] * 3 + [409] * 7, answers
    assert user.api_tokens.count() == TOKENS_MAX


def test_twelve_mcp_shares_at_once_get_exactly_the_addresss_snippets(stack):
    """An assistant's tool calls are the API's actions: a burst of them meets the same caps."""
    requests = [{"method": "POST", "path": "/mcp", "client": address(106),
                 "headers": {"Accept": "application/json, text/event-stream"},
                 "body": {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                          "params": {"name": "share", "arguments": {"code": f"print({n})"}}}} for n in range(12)]
    answers = together(stack, requests)
    assert [status for status, *_ in answers] == [200] * 12, answers
    results = [content["result"] for _status, content, _h in answers]
    refused = [r for r in results if r.get("isError")]
    assert len(results) - len(refused) == SNIPPETS, results
    assert len(refused) == 12 - SNIPPETS and all("too many" in r["content"][0]["text"] for r in refused), refused


def test_forged_browser_cookies_at_once_buy_no_more_than_the_address(stack):
    """Cookies of anyone's own making are no identity: twelve forged ones in a burst share the
    address's runs as twelve requests without a cookie do."""
    requests = [{"method": "POST", "path": "/api/runs", "body": {"code": SLEEP}, "client": address(107),
                 "cookie": f"browser={secrets.token_urlsafe(16)}:forged"} for _ in range(12)]
    answers = together(stack, requests)
    assert statuses(answers) == [201] * ACTIVE_PER_ADDRESS + [429] * (12 - ACTIVE_PER_ADDRESS), answers
    assert_refusals_say_why(answers, {201}, 429, "active_runs")
    _cancel(stack, answers, address(107))


def test_ten_notebooks_saved_at_once_stop_at_the_persons_cap(stack, django_user_model):
    from notebooks.models import Notebook

    user = django_user_model.objects.create_user("notebook-racer", "n@example.com", PASSWORD)
    signed_in, csrf = sign_in(stack, "notebook-racer", address(108))
    requests = [{"method": "POST", "path": "/api/notebooks", "body": {"title": f"race {n}", "cells": []},
                 "client": address(108), "cookie": signed_in, "headers": {"X-CSRFToken": csrf}} for n in range(10)]
    answers = together(stack, requests)
    assert statuses(answers) == [201] * NOTEBOOKS + [409] * (10 - NOTEBOOKS), answers
    assert Notebook.objects.filter(owner=user).count() == NOTEBOOKS


# Rates lowered for their own tests ---------------------------------------------------------------

@pytest.fixture
def rates(stack):
    """The stack with a person's runs a minute and new sessions an hour lowered (the suite's are
    high, so that its other bursts meet the caps they test) and rooms of one person, whose rates
    are then a person's: what three browsers behind one address share."""
    with web_with(stack, RUN_RATE_LIMIT_PER_MINUTE=RUNS_A_MINUTE, SESSION_RATE_LIMIT_PER_HOUR=SESSIONS_AN_HOUR,
                  ROOM_SIZE=1):
        yield stack


def test_runs_at_once_from_two_scripts_and_a_room_get_exactly_the_run_rate(rates):
    """RUN_RATE_LIMIT_PER_MINUTE: two scripts' addresses and three browsers behind a third, all at
    once; each address has its runs a minute, the browsers their room's between them. Every
    request counts, admitted or not: a refused one takes no run slot, and is told when to come
    back."""
    stack = rates
    requests = [{"method": "POST", "path": "/api/runs", "body": {"code": f"print({n})"}, "client": address(n)}
                for n in (110, 111) for _ in range(6)]
    requests += [{"method": "POST", "path": "/api/runs", "body": {"code": "print(112)"}, "client": address(112),
                  "cookie": cookie} for cookie in [stack.page_cookie(address(112)) for _ in range(3)] for _ in range(3)]
    clear_of_the_windows_turn(60)
    answers = together(stack, requests)
    assert statuses(answers) == [201] * 3 * RUNS_A_MINUTE + [429] * (len(requests) - 3 * RUNS_A_MINUTE), answers
    assert admitted_per(answers, requests) == {address(n): RUNS_A_MINUTE for n in (110, 111, 112)}
    assert_refusals_say_why(answers, {201}, 429, "rate")
    for status, run, _h in answers:
        if status == 201:
            assert stack.wait_finished(run["id"])["status"] == "succeeded"


def test_sessions_at_once_from_a_script_and_a_room_get_exactly_the_session_rate(rates):
    """SESSION_RATE_LIMIT_PER_HOUR, below the live sessions a person may hold: a script's six
    at once make its new sessions an hour, two browsers behind another address their room's."""
    stack = rates
    requests = [{"method": "POST", "path": "/api/sessions", "body": {}, "client": address(113)} for _ in range(6)]
    requests += [{"method": "POST", "path": "/api/sessions", "body": {}, "client": address(114), "cookie": cookie}
                 for cookie in [stack.page_cookie(address(114)) for _ in range(2)] for _ in range(3)]
    clear_of_the_windows_turn(3600)
    answers = together(stack, requests)
    assert statuses(answers) == [201] * 2 * SESSIONS_AN_HOUR + [429] * (12 - 2 * SESSIONS_AN_HOUR), answers
    assert admitted_per(answers, requests) == {address(113): SESSIONS_AN_HOUR, address(114): SESSIONS_AN_HOUR}
    assert_refusals_say_why(answers, {201}, 429, "rate")
    end_sessions(stack, made_sessions(answers, requests))


# Notebook shares, the editor's analysis and problems, MCP's runs ---------------------------------

def notebook(n: int) -> dict:
    return {"title": f"race {n}", "cells": [{"type": "code", "source": f"print({n})"}]}


def test_sixteen_notebook_shares_at_once_get_exactly_each_addresss_shares(stack):
    """NOTEBOOK_SHARE_RATE_LIMIT_PER_HOUR counts the address (a shared notebook is a row and a
    page for good: identities must not multiply them): five browsers and five scripts behind one
    address share its four, a script at another has its own four."""
    cookies = [stack.page_cookie(address(115)) for _ in range(5)]
    requests = [{"method": "POST", "path": "/api/notebooks/share", "body": notebook(n), "client": address(115),
                 "cookie": cookies[n] if n < 5 else None} for n in range(10)]
    requests += [{"method": "POST", "path": "/api/notebooks/share", "body": notebook(n), "client": address(116)}
                 for n in range(10, 16)]
    clear_of_the_windows_turn(3600)
    answers = together(stack, requests)
    assert statuses(answers) == [201] * 2 * NOTEBOOK_SHARES + [429] * (16 - 2 * NOTEBOOK_SHARES), answers
    assert admitted_per(answers, requests) == {address(115): NOTEBOOK_SHARES, address(116): NOTEBOOK_SHARES}
    assert_refusals_say_why(answers, {201}, 429, "rate")


def test_editor_analyses_at_once_get_exactly_each_persons_rate(stack):
    """ANALYSE_RATE_LIMIT_PER_MINUTE, a person's within their room's: a script and two browsers
    behind one address have theirs each. This stack starts no analyser, so a request the rate
    let through is told that none is running (503 without a limit); the rest are 429 "rate"."""
    body = {"op": "complete", "code": "import jax\njax.", "line": 2, "column": 5, "editor": "race"}
    requests = [{"method": "POST", "path": "/api/analyse", "body": body, "client": address(117)} for _ in range(8)]
    requests += [{"method": "POST", "path": "/api/analyse", "body": body, "client": address(118), "cookie": cookie}
                 for cookie in [stack.page_cookie(address(118)) for _ in range(2)] for _ in range(7)]
    clear_of_the_windows_turn(60)
    answers = together(stack, requests)
    assert statuses(answers) == [429] * (22 - 3 * ANALYSES) + [503] * 3 * ANALYSES, answers
    assert admitted_per(answers, requests, 503) == {address(117): ANALYSES, address(118): 2 * ANALYSES}
    for status, content, _h in answers:
        if status == 503:
            assert "analyser" in content["error"] and "limit" not in content, content
    assert_refusals_say_why(answers, {503}, 429, "rate")


def test_lints_at_once_get_exactly_each_persons_rate(stack):
    """LINT_RATE_LIMIT_PER_MINUTE, a person's within their room's: a script and two browsers
    behind one address have theirs each, every admitted request its problems."""
    body = {"code": "import os\nx = y\n"}
    requests = [{"method": "POST", "path": "/api/lint", "body": body, "client": address(119)} for _ in range(9)]
    requests += [{"method": "POST", "path": "/api/lint", "body": body, "client": address(120), "cookie": cookie}
                 for cookie in [stack.page_cookie(address(120)) for _ in range(2)] for _ in range(8)]
    clear_of_the_windows_turn(60)
    answers = together(stack, requests)
    assert statuses(answers) == [200] * 3 * LINTS + [429] * (25 - 3 * LINTS), answers
    assert admitted_per(answers, requests, 200) == {address(119): LINTS, address(120): 2 * LINTS}
    assert all(content["problems"] for status, content, _h in answers if status == 200), answers
    assert_refusals_say_why(answers, {200}, 429, "rate")


def test_mcp_runs_at_once_take_exactly_each_addresss_run_slots(stack):
    """MCP's ``run_jax`` starts a run as POST /api/runs does, so a burst of calls meets the same
    slots: two scripts' addresses, six calls each at once, run RUN_MAX_ACTIVE_PER_ADDRESS each;
    the rest are tool errors that say which limit and when to come back."""
    requests = [{"method": "POST", "path": "/mcp", "client": address(n),
                 "headers": {"Accept": "application/json, text/event-stream"},
                 "body": {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": "run_jax", "arguments": {"code": SLEEP}}}}
                for n in (121, 122) for i in range(6)]
    answers = together(stack, requests, timeout=120)
    assert [status for status, *_ in answers] == [200] * 12, answers
    results = [content["result"] for _status, content, _h in answers]
    for n in (121, 122):
        mine = [r for r, q in zip(results, requests) if q["client"] == address(n)]
        ran = [r for r in mine if not r.get("isError")]
        assert len(ran) == ACTIVE_PER_ADDRESS, mine
        assert all(r["structuredContent"]["status"] == "succeeded" for r in ran), ran
        refused = [r["structuredContent"] for r in mine if r.get("isError")]
        assert len(refused) == 6 - ACTIVE_PER_ADDRESS, mine
        assert all(r["status"] == 429 and r["limit"] == "active_runs" and r["retry_after"] > 0 for r in refused), \
            refused
        assert all("runs queued or running" in r["error"] for r in refused), refused
