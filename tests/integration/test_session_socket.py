"""Cells sent on a notebook session's own websocket, through the real server, as a script sends
them (no Origin): each answered ``cell_started`` and followed by its events on the same socket,
in order, from seq 1 to ``finished``, amid the session's state messages; refusals answered as the
POST answers them, on a socket that stays usable; a session's second cell reaches its node on the
node's Redis stream rather than through Celery; a client that drops the socket mid-cell follows it
on the run's own socket."""

from __future__ import annotations

import json
import time

import pytest
import redis

from executor import events as ev
from executor import sessionstate
from tests.conftest import own_stack

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory):
    with own_stack("session-socket", 6, tmp_path_factory, TRUSTED_PROXIES="1", SESSION_MAX_PER_CLIENT="3",
                   EXECUTOR_CONCURRENCY="2", RUN_WALL_S="8", RUN_STAGE_TIMES="1") as stack:
        stack.wait_online("cpu")
        yield stack


def stack_redis(stack) -> redis.Redis:
    return redis.Redis.from_url(stack.env["REDIS_URL"])


def streamed(stack, node: str) -> tuple[int, int]:
    """How many cells were ever sent to ``node`` on its stream, and how many wait there unread
    (a node deletes each as it takes it)."""
    key = sessionstate.node_stream(node)
    try:
        info = stack_redis(stack).xinfo_stream(key)
    except redis.exceptions.ResponseError:  # no stream yet
        return 0, 0
    return info["entries-added"], info["length"]


def in_order(watched) -> bool:
    return [e["seq"] for e in watched.events] == list(range(1, len(watched.events) + 1))


def test_two_cells_on_the_session_socket_share_state_and_the_second_goes_by_the_node_stream(stack):
    client = "198.51.100.61"
    session = stack.new_session(client)
    with stack.session_socket(session, client) as socket:
        started, first = socket.cell("import jax.numpy as jnp\nx = jnp.arange(4) * 3\nprint(int(x.sum()))\n")
        assert started["type"] == "cell_started", started
        run = started["run"]
        assert run["ws"] == f"/ws/runs/{run['id']}/" and run["session"] == session["id"]
        assert run["status"] == "queued" and run["device"] == "cpu"
        assert in_order(first) and first.events[0]["type"] == ev.QUEUED
        assert first.finished["status"] == ev.SUCCEEDED, first.finished
        assert first.text().strip() == "18"
        node = stack_redis(stack).hget(sessionstate.key(session["id"]), "node").decode()
        before = streamed(stack, node)

        started2, second = socket.cell("print(int(x[-1]))\n")
        assert started2["type"] == "cell_started" and started2["run"]["id"] != run["id"]
        assert in_order(second) and second.finished["status"] == ev.SUCCEEDED, second.finished
        assert second.text().strip() == "9"
        # The cell's namespace (held by the node to go with the cell's end) comes last before
        # its finished, in seq order.
        assert [e["type"] for e in second.events][-2:] == [ev.SHAPES, ev.FINISHED], second.events
        assert "x" in second.events[-2]["names"]
        cell2 = next(e for e in second.events if e["type"] == ev.STARTED)
        assert cell2["cell"] == 2 and not cell2["session_started"] and cell2["worker"] == node
        # Its node took it from its own stream, and stamped it received as a run from Celery is.
        added, waiting = streamed(stack, node)
        assert (added, waiting) == (before[0] + 1, 0), (before, added, waiting)
        # ("ended" is stamped just after finished is logged: the client may have it first.)
        deadline = time.monotonic() + 10
        while not {b"stored", b"queued", b"received", b"ended"} <= set(
                stamps := stack_redis(stack).hgetall(f"stages:{started2['run']['id']}")):
            assert time.monotonic() < deadline, stamps
            time.sleep(0.05)
        # The state messages came on the same socket, told apart from the cells' messages; the
        # one the cell's end told says what the cell left (without asking).
        assert socket.states and all(s["type"] == "state" and s["id"] == session["id"] for s in socket.states)
        deadline = time.monotonic() + 10
        while not any(s["cells_run"] == 2 and s["state"] == "idle" for s in socket.states):
            assert time.monotonic() < deadline, socket.states
            socket.states.append(json.loads(socket.ws.recv(timeout=10)))
        told = next(s for s in socket.states if s["cells_run"] == 2 and s["state"] == "idle")
        assert told["running"] is None and "x" in told["names"] and told["device"] == "cpu", told
        socket.send({"op": "state"})
        while not socket.states or socket.states[-1]["cells_run"] != 2:
            socket.states.append(json.loads(socket.ws.recv(timeout=10)))
        assert socket.states[-1]["state"] == "idle" and "x" in socket.states[-1]["names"]
    status, state = stack.call("GET", session["url"], client=client)
    assert status == 200 and state["cells_run"] == 2
    stack.call("DELETE", session["url"], client=client)


def test_refusals_are_answered_as_the_post_answers_them_and_the_socket_stays_usable(stack):
    client = "198.51.100.62"
    session = stack.new_session(client)
    with stack.session_socket(session, client) as socket:
        socket.send("{not json")
        refused = socket.next()
        assert refused["type"] == "refused" and refused["status"] == 400 and '"op": "cell"' in refused["error"]
        socket.send({"op": "cell", "code": "print(1)", "colour": "red"})
        refused = socket.next()
        assert refused["type"] == "refused" and refused["status"] == 400 and "unknown field" in refused["error"]
        socket.send({"op": "cell", "code": 5})
        refused = socket.next()
        assert refused["status"] == 400 and "string" in refused["error"]
        started, watched = socket.cell("y = 7\nprint(y)\n")
        assert started["type"] == "cell_started" and watched.text().strip() == "7"

        # Busy: a cell posted is still running (409, as the POST says it, with the cell in flight).
        status, posted = stack.call("POST", f"{session['url']}/cells", {"code": "import time\ntime.sleep(1.5)\n"},
                                    client=client)
        assert status == 201, posted
        refused, _ = socket.cell("print(y)\n")
        assert refused["type"] == "refused" and refused["status"] == 409 and refused["running"] == posted["id"]
        assert stack.watch(posted["id"], client=client).finished["status"] == ev.SUCCEEDED

        # One cell at a time on a socket: another sent before the last one's finished is refused.
        socket.send({"op": "cell", "code": "import time\ntime.sleep(1)\nprint(y + 1)\n"})
        started = socket.next()
        assert started["type"] == "cell_started"
        socket.send({"op": "cell", "code": "print(2)"})
        events, refusal = [], None
        while not events or events[-1]["type"] != ev.FINISHED:
            message = socket.next()
            if message["type"] == "refused":
                refusal = message
            else:
                assert message["type"] == "cell_event" and message["run"] == started["run"]["id"], message
                events.append(message["event"])
        assert refusal is not None and refusal["status"] == 409 and refusal["running"] == started["run"]["id"]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert "".join(e.get("text", "") for e in events if e["type"] == ev.STDOUT).strip() == "8"
        # And the socket runs the next one.
        started, watched = socket.cell("print(y * 2)\n")
        assert started["type"] == "cell_started" and watched.text().strip() == "14"
    stack.call("DELETE", session["url"], client=client)


def test_a_stopped_session_refuses_a_cell_with_410_and_still_answers(stack):
    """A session stopped without a word to its socket (its node gone, say): a cell sent on the
    socket is refused 410 and runs nowhere, or, when the socket looked again first (any change of
    the session wakes it), the socket has said "stopped" and closed; the POST says 410 too."""
    from websockets.exceptions import ConnectionClosed

    client = "198.51.100.63"
    session = stack.new_session(client)
    with stack.session_socket(session, client) as socket:
        assert socket.cell("z = 1\n")[1].finished["status"] == ev.SUCCEEDED
        stack_redis(stack).hset(sessionstate.key(session["id"]),
                                mapping={"state": "stopped", "stopped_reason": "its node restarted"})
        try:
            socket.send({"op": "cell", "code": "print(z)\n"})
            refused = socket.next()
            assert refused["type"] == "refused" and refused["status"] == 410, refused
            assert refused["state"] == "stopped" and "its node restarted" in refused["error"]
            # Asked, it says the session stopped (or it has said so already, and closes).
            socket.send({"op": "state"})
            while not socket.states or socket.states[-1]["state"] != "stopped":
                socket.states.append(json.loads(socket.ws.recv(timeout=10)))
        except (ConnectionClosed, AssertionError) as closed:
            if isinstance(closed, AssertionError) and "socket closed" not in str(closed):
                raise
        assert socket.states and socket.states[-1]["state"] == "stopped", socket.states
        assert socket.states[-1]["stopped_reason"] == "its node restarted"
    status, gone = stack.call("POST", f"{session['url']}/cells", {"code": "print(z)"}, client=client)
    assert status == 410 and gone["state"] == "stopped"


def test_a_session_ended_from_another_tab_while_its_cell_runs_stays_ended_for_every_socket(stack):
    """Ended (DELETE) while a cell runs: the cell's end does not make the session idle again, and
    neither the socket that held it all along nor a new one runs a next cell in it (410, or the
    socket said "stopped" and closed), as the POST says."""
    client = "198.51.100.64"
    session = stack.new_session(client)

    def refuses_a_cell(socket) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            socket.send({"op": "cell", "code": "print(z)\n"})
        except ConnectionClosed as closed:  # it had said "stopped" and closed (a normal close)
            assert closed.rcvd is not None and closed.rcvd.code == 1000, closed
            return
        try:
            answer = socket.next(timeout=15)
            assert answer["type"] == "refused" and answer["status"] == 410, answer
        except AssertionError as closed:
            assert "socket closed" in str(closed), closed
            assert socket.states and socket.states[-1]["state"] == "stopped", socket.states

    with stack.session_socket(session, client) as socket:
        assert socket.cell("z = 1\n")[1].finished["status"] == ev.SUCCEEDED
        socket.send({"op": "cell", "code": "import time\ntime.sleep(1.5)\nprint(z)\n"})
        assert socket.next()["type"] == "cell_started"
        status, _ = stack.call("DELETE", session["url"], client=client)
        assert status in (200, 204)
        while True:  # the cell in flight ends, whatever its status
            message = socket.next()
            if message["type"] == "cell_event" and message["event"]["type"] == "finished":
                break
        time.sleep(0.3)  # the node's own word on the cell's end, written by now
        state = sessionstate.read(stack_redis(stack), session["id"])
        assert state is not None and state["state"] == "stopped", state
        refuses_a_cell(socket)
    with stack.session_socket(session, client) as fresh:
        refuses_a_cell(fresh)
    status, gone = stack.call("POST", f"{session['url']}/cells", {"code": "print(z)"}, client=client)
    assert status == 410 and gone["state"] == "stopped"


def test_a_cell_whose_socket_drops_is_followed_on_its_run_socket(stack):
    client = "198.51.100.64"
    session = stack.new_session(client)
    with stack.session_socket(session, client) as socket:
        socket.cell("n = 5\n")
        socket.send({"op": "cell", "code": "import time\nprint('a', flush=True)\ntime.sleep(1)\nprint(n)\n"})
        started = socket.next()
        seen = []
        while not any(e["type"] == ev.STDOUT for e in seen):
            seen.append(socket.next()["event"])
    rest = stack.watch(started["run"]["id"], after=seen[-1]["seq"], client=client)
    assert [e["seq"] for e in seen + rest.events] == list(range(1, len(seen) + len(rest.events) + 1))
    assert rest.finished["status"] == ev.SUCCEEDED and rest.text().strip() == "5"
    # The session took no other cell meanwhile and runs the next as ever.
    with stack.session_socket(session, client) as socket:
        started, watched = socket.cell("print(n * 2)\n")
    assert started["type"] == "cell_started" and watched.text().strip() == "10"
    stack.call("DELETE", session["url"], client=client)


def test_someone_elses_cell_is_not_taken_on_the_session_socket(stack):
    """A session's socket is its maker's: another's is closed before any cell is read."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    session = stack.new_session("198.51.100.65")
    with connect(f"{stack.ws_url}{session['ws']}", additional_headers={"X-Forwarded-For": "198.51.100.66"},
                 open_timeout=10) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            # The close may come before the cell is sent (the server says 4404 as soon as it
            # has looked the session up): sending then raises it as reading would.
            ws.send(json.dumps({"op": "cell", "code": "print(1)"}))
            while True:
                ws.recv(timeout=10)
        assert closed.value.rcvd.code == 4404
    time.sleep(0.2)
    status, state = stack.call("GET", session["url"], client="198.51.100.65")
    assert state["cells_run"] == 0 and state["running"] is None


def test_cells_sent_in_a_loop_at_a_busy_session_are_answered_at_a_pace_not_at_once(stack):
    """A busy session's 409s do not close the socket (a page waits one out so): a client sending
    cells in a loop meanwhile is answered one REFUSED_PAUSE_S apart, and the socket still runs a
    cell after."""
    from playground.session_socket import REFUSED_PAUSE_S

    client = "198.51.100.67"
    session = stack.new_session(client)
    with stack.session_socket(session, client) as socket:
        socket.cell("w = 3\n")
        # Busy for 6 s (the stack's RUN_WALL_S is 8): the 20 answers take 1.9 s at their pace and a
        # loaded machine may take a few seconds more over them; every one must come while the
        # session is still busy.
        status, posted = stack.call("POST", f"{session['url']}/cells", {"code": "import time\ntime.sleep(6)\n"},
                                    client=client)
        assert status == 201, posted
        t0 = time.monotonic()
        for _ in range(20):
            socket.send({"op": "cell", "code": "print(w)"})
        refusals = [socket.next() for _ in range(20)]
        assert all(r["type"] == "refused" and r["status"] == 409 for r in refusals), refusals
        assert time.monotonic() - t0 >= 19 * REFUSED_PAUSE_S
        assert stack.watch(posted["id"], client=client).finished["status"] == ev.SUCCEEDED
        started, watched = socket.cell("print(w)\n")
        assert started["type"] == "cell_started" and watched.text().strip() == "3"
    stack.call("DELETE", session["url"], client=client)


def test_a_session_held_for_a_cell_never_stored_is_let_go_after_a_while(stack):
    """Taking a session for a cell and storing the cell's run are two steps: a web process that
    dies between them leaves the session held for a run that does not exist. The next cell waits
    (409) while that run may still be being stored, then lets it go, rather than answering 409
    until the session is ended."""
    from playground.actions.sessions import UNSTORED_CELL_S

    client = "198.51.100.68"
    session = stack.new_session(client)
    key = sessionstate.key(session["id"])
    ghost = "22222222-2222-2222-2222-222222222222"
    with stack.session_socket(session, client) as socket:
        socket.cell("v = 2\n")
        # Held a moment ago for a run not stored: perhaps being stored now, so the next waits.
        stack_redis(stack).hset(key, mapping={"busy": ghost, "busy_at": f"{time.time():.3f}", "state": "live"})
        refused, _ = socket.cell("print(v)\n")
        assert refused["type"] == "refused" and refused["status"] == 409 and refused["running"] == ghost
        # Held longer ago than any admission takes: let go, and the cell runs.
        stack_redis(stack).hset(key, "busy_at", f"{time.time() - UNSTORED_CELL_S - 1:.3f}")
        started, watched = socket.cell("print(v)\n")
        assert started["type"] == "cell_started", started
        assert watched.finished["status"] == ev.SUCCEEDED and watched.text().strip() == "2"
    stack.call("DELETE", session["url"], client=client)


def test_a_script_with_a_token_runs_cells_on_its_session_socket_until_the_token_is_revoked(stack,
                                                                                          django_user_model):
    """A script that made its session with its API token opens the session's socket with the
    same header and runs cells there as its owner; once the token is revoked, its next cell is
    refused with 4401 and the socket closes, as the API answers 401."""
    import urllib.request

    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from accounts.actions import do_create_token, do_revoke_token
    from bench.stack import SessionSocket

    user = django_user_model.objects.create_user("tokenised", "t@example.com", "x")
    token, secret = do_create_token(user, "script")
    auth = {"Authorization": f"Bearer {secret}"}
    request = urllib.request.Request(f"{stack.url}/api/sessions", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json", **auth})
    with urllib.request.urlopen(request, timeout=30) as answer:
        session = json.loads(answer.read())
    with connect(f"{stack.ws_url}{session['ws']}", additional_headers=auth, open_timeout=10) as ws:
        socket = SessionSocket(ws)
        started, cell = socket.cell("x = 6 * 7\nprint(x)\n")
        assert started["type"] == "cell_started" and cell.finished["status"] == ev.SUCCEEDED, cell.finished
        assert cell.text().strip() == "42"
        # A socket that only listens is closed too: asked for the state, it tells nothing more.
        with connect(f"{stack.ws_url}{session['ws']}", additional_headers=auth, open_timeout=10) as listener:
            assert json.loads(listener.recv(timeout=30))["type"] == "state"
            do_revoke_token(token)
            listener.send(json.dumps({"op": "state"}))
            with pytest.raises(ConnectionClosed) as quiet:
                message = listener.recv(timeout=30)
                raise AssertionError(f"a revoked token's socket was told {message[:200]}")
        assert quiet.value.rcvd.code == 4401
        socket.send({"op": "cell", "code": "print(x)\n"})
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                message = json.loads(ws.recv(timeout=30))
                assert message.get("type") == "state", message  # no cell is started for it
    assert closed.value.rcvd.code == 4401 and "no longer valid" in closed.value.rcvd.reason
    # Without the token's owner, the session is no one else's: a socket signed out is a stranger.
    with connect(f"{stack.ws_url}{session['ws']}", open_timeout=10) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd.code == 4404


def test_a_socket_for_the_next_run_opened_with_a_token_starts_nothing_once_it_is_revoked(stack, django_user_model):
    """``/ws/runs/new/`` waits up to WS_NEW_IDLE_S for its start: a token revoked meanwhile starts
    no run there (4401), where the socket would otherwise have run it as the token's owner."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from accounts.actions import do_create_token, do_revoke_token
    from playground.models import Run

    user = django_user_model.objects.create_user("waiting", "w@example.com", "x")
    token, secret = do_create_token(user, "script")
    auth = {"Authorization": f"Bearer {secret}"}
    with connect(f"{stack.ws_url}/ws/runs/new/", additional_headers=auth, open_timeout=10) as ws:
        ws.send(json.dumps({"op": "start", "code": "print('as its owner')\n"}))
        first = json.loads(ws.recv(timeout=30))
        assert first.get("type") == "started_run", first  # its first run starts, as its owner
    assert Run.objects.filter(owner=user).count() == 1
    with connect(f"{stack.ws_url}/ws/runs/new/", additional_headers=auth, open_timeout=10) as ws:
        do_revoke_token(token)
        ws.send(json.dumps({"op": "start", "code": "print('after the revocation')\n"}))
        with pytest.raises(ConnectionClosed) as closed:
            message = ws.recv(timeout=30)
            raise AssertionError(f"a revoked token's socket answered {message[:200]}")
    assert closed.value.rcvd.code == 4401
    assert Run.objects.filter(owner=user).count() == 1
