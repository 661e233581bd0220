"""Notebook sessions through the real server, as a script uses them: daphne, real Celery workers,
the real sandbox, plain HTTP and websockets without Origin, several people at their own addresses
(TRUSTED_PROXIES=1). A session keeps its cells' state, its second cell calls the first's jitted
function without compiling it, it is its maker's alone, one cell runs at a time, a cancel and the
wall clock interrupt a cell and keep the state, a cell that kills its runner ends the session and
says so, an idle one is stopped and its socket says so, and a person holds a bounded number."""

from __future__ import annotations

import json
import time

import pytest

from executor import events as ev
from tests.conftest import own_stack

pytestmark = pytest.mark.django_db(transaction=True)

ALICE, BOB, CAROL, DAVE = "198.51.100.21", "198.51.100.22", "198.51.100.23", "198.51.100.24"


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory):
    with own_stack("sessions", 11, tmp_path_factory, TRUSTED_PROXIES="1", SESSION_MAX_PER_CLIENT="2",
                   EXECUTOR_CONCURRENCY="2", RUN_WALL_S="8") as stack:
        stack.wait_online("cpu")
        yield stack


def new_session(stack, client: str) -> dict:
    return stack.new_session(client)


def run_cell(stack, session: dict, code: str, client: str):
    run, watched = stack.run_cell(session, code, client)
    assert run["ws"] == f"/ws/runs/{run['id']}/" and run["session"] == session["id"]
    return run, watched


def test_a_session_keeps_state_and_compiled_functions_between_cells(stack):
    session = new_session(stack, ALICE)
    assert session["state"] == "idle" and not session["started"]
    assert session["ws"] == f"/ws/sessions/{session['id']}/" and session["idle_timeout_s"] == 1200
    _, first = run_cell(stack, session, "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return x @ x.T\n"
                                        "a = jnp.ones((64, 64))\nprint(f(a)[0, 0])\n", ALICE)
    assert first.finished["status"] == ev.SUCCEEDED, first.finished
    assert first.text().strip() == "64.0"
    started = next(e for e in first.events if e["type"] == ev.STARTED)
    assert started["session"] == session["id"] and started["cell"] == 1 and started["session_started"]
    assert [e["name"] for e in first.events if e["type"] == ev.COMPILED] == ["f"]
    _, second = run_cell(stack, session, "b = f(a * 2)\nprint(b[0, 0])\n", ALICE)
    assert second.finished["status"] == ev.SUCCEEDED, second.finished
    assert second.text().strip() == "256.0"
    assert not [e for e in second.events if e["type"] == ev.COMPILED], "calling f again compiled it again"
    started = next(e for e in second.events if e["type"] == ev.STARTED)
    assert started["cell"] == 2 and not started["session_started"]
    status, state = stack.call("GET", session["url"], client=ALICE)
    assert status == 200 and state["state"] == "idle" and state["cells_run"] == 2
    assert {"a", "b"} <= set(state["names"]) and state["memory_bytes"] > 0
    stack.call("DELETE", session["url"], client=ALICE)


def test_a_session_is_its_makers_alone(stack):
    mine = new_session(stack, BOB)
    _, ran = run_cell(stack, mine, "secret = 'bob'\n", BOB)
    assert ran.finished["status"] == ev.SUCCEEDED
    for method, path, body in (("GET", mine["url"], None), ("POST", f"{mine['url']}/cells", {"code": "print(secret)"}),
                               ("DELETE", mine["url"], None)):
        status, answer = stack.call(method, path, body, client=CAROL)
        assert status == 404, (method, answer)
    theirs = new_session(stack, CAROL)
    _, ran = run_cell(stack, theirs, "print(secret)\n", CAROL)
    assert ran.finished["status"] == ev.FAILED
    assert any(e["type"] == ev.ERROR and e["exc_type"] == "NameError" for e in ran.events)
    status, state = stack.call("GET", mine["url"], client=BOB)
    assert state["state"] == "idle"  # the other's DELETE did nothing
    for session, client in ((mine, BOB), (theirs, CAROL)):
        stack.call("DELETE", session["url"], client=client)


def test_one_cell_at_a_time_and_a_cancel_interrupts_it_keeping_the_state(stack):
    session = new_session(stack, DAVE)
    run_cell(stack, session, "kept = [1, 2, 3]\n", DAVE)
    status, running = stack.call("POST", f"{session['url']}/cells",
                                 {"code": "import time\nprint('go', flush=True)\nwhile True:\n    time.sleep(0.05)\n"},
                                 client=DAVE)
    assert status == 201
    deadline = time.monotonic() + 30
    while stack.call("GET", f"/api/runs/{running['id']}")[1]["status"] != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    status, busy = stack.call("POST", f"{session['url']}/cells", {"code": "print(1)"}, client=DAVE)
    assert status == 409 and busy["running"] == running["id"], busy
    assert stack.call("GET", session["url"], client=DAVE)[1]["state"] == "live"
    status, refused = stack.call("POST", f"/api/runs/{running['id']}/cancel", {}, client=ALICE)
    assert status == 403 and "session" in refused["error"], refused  # not hers to interrupt
    status, _ = stack.call("POST", f"/api/runs/{running['id']}/cancel", {}, client=DAVE)
    assert status == 202
    watched = stack.watch(running["id"], client=DAVE)
    assert watched.finished["status"] == ev.CANCELLED, watched.finished
    assert "KeyboardInterrupt" in watched.finished["message"] and "keeps its state" in watched.finished["message"]
    _, after = run_cell(stack, session, "print(sum(kept))\n", DAVE)
    assert after.text().strip() == "6"
    stack.call("DELETE", session["url"], client=DAVE)


def test_the_wall_clock_interrupts_a_cell_and_the_session_lives(stack):
    client = "198.51.100.31"
    session = new_session(stack, client)
    run_cell(stack, session, "n = 41\n", client)
    _, spun = run_cell(stack, session, "while True:\n    pass\n", client)
    assert spun.finished["status"] in (ev.TIMED_OUT, ev.LIMIT_EXCEEDED), spun.finished
    assert "keeps its state" in spun.finished["message"]
    _, after = run_cell(stack, session, "print(n + 1)\n", client)
    assert after.text().strip() == "42"
    stack.call("DELETE", session["url"], client=client)


def test_a_cell_that_kills_its_runner_ends_the_session_and_the_next_is_410(stack):
    client = "198.51.100.32"
    session = new_session(stack, client)
    run_cell(stack, session, "x = 1\n", client)
    _, died = run_cell(stack, session, "import os\nos._exit(9)\n", client)
    assert died.finished["status"] == ev.FAILED
    assert "exited with code 9" in died.finished["message"] and "the session ended with it" in died.finished["message"]
    status, state = stack.call("GET", session["url"], client=client)
    assert state["state"] == "stopped" and "restore" in state["stopped_reason"]
    status, gone = stack.call("POST", f"{session['url']}/cells", {"code": "print(x)"}, client=client)
    assert status == 410 and gone["state"] == "stopped" and gone["stopped_reason"], gone


def test_deleting_ends_it_and_its_socket_says_so(stack):
    from websockets.sync.client import connect

    client = "198.51.100.33"
    session = new_session(stack, client)
    with connect(f"{stack.ws_url}{session['ws']}", additional_headers={"X-Forwarded-For": client},
                 open_timeout=10) as ws:
        first = json.loads(ws.recv(timeout=10))
        assert first["type"] == "state" and first["state"] == "idle" and first["id"] == session["id"]
        assert stack.call("DELETE", session["url"], client=client)[0] == 200
        seen = []
        while not seen or seen[-1]["state"] != "stopped":
            seen.append(json.loads(ws.recv(timeout=10)))
        assert "ended by its owner" in seen[-1]["stopped_reason"]
    status, gone = stack.call("POST", f"{session['url']}/cells", {"code": "print(1)"}, client=client)
    assert status == 410
    # Someone else's socket on it is closed as for no such session.
    with connect(f"{stack.ws_url}{session['ws']}", additional_headers={"X-Forwarded-For": ALICE},
                 open_timeout=10) as ws:
        from websockets.exceptions import ConnectionClosed

        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd.code == 4404


def test_a_cell_admitted_as_another_tab_ends_its_session_is_not_run(stack):
    """The cell was admitted (the session taken for it) just before the DELETE, and reaches the
    session's node just after: the node finds the session's end asked for as it claims the cell,
    and ends it cancelled without running it. (Sent to the node's stream as the web side sends a
    cell, so that the two land in this order every time.)"""
    import uuid

    import redis

    from executor import sessionstate, submit

    client = "198.51.100.35"
    session = new_session(stack, client)
    _, first = run_cell(stack, session, "z = 1\nprint('first')\n", client)
    assert first.finished["status"] == ev.SUCCEEDED, first.finished
    broker = redis.Redis.from_url(stack.env["REDIS_URL"])
    node = sessionstate.read(broker, session["id"])["node"]
    run_id = str(uuid.uuid4())
    assert sessionstate.take(broker, session["id"], run_id) == "ok"
    assert stack.call("DELETE", session["url"], client=client)[0] == 200
    ev.EventLog(broker).append(run_id, ev.make_event(ev.QUEUED, position=1))
    sessionstate.send_cell(broker, node, submit.run_message(run_id, "print('ran after its end', z)", {},
                                                            {"wall_s": 5}, session={"id": session["id"], "idle_s": 60}))
    events = submit.follow(broker, run_id, 30)
    assert (events[-1]["status"], events[-1]["message"]) == (ev.CANCELLED, "the session was ended")
    assert not [e for e in events if e["type"] in (ev.STDOUT, ev.STARTED)], events
    assert sessionstate.read(broker, session["id"])["state"] == sessionstate.STOPPED


def test_an_idle_session_is_stopped_and_its_socket_says_so(stack):
    from websockets.sync.client import connect

    from playground.models import Session

    client = "198.51.100.34"
    session = new_session(stack, client)
    Session.objects.filter(id=session["id"]).update(idle_timeout_s=3)
    run_cell(stack, session, "y = 2\n", client)
    with connect(f"{stack.ws_url}{session['ws']}", additional_headers={"X-Forwarded-For": client},
                 open_timeout=10) as ws:
        state = json.loads(ws.recv(timeout=10))
        while state["state"] != "stopped":
            state = json.loads(ws.recv(timeout=20))
    assert "idle for 3 s" in state["stopped_reason"]


def test_a_person_holds_a_bounded_number_of_sessions(stack):
    client = "198.51.100.35"
    made = [new_session(stack, client) for _ in range(2)]
    status, refused = stack.call("POST", "/api/sessions", {}, client=client)
    assert status == 429 and "2" in refused["error"] and set(refused["sessions"]) == {s["id"] for s in made}
    stack.call("DELETE", made[0]["url"], client=client)
    assert stack.call("POST", "/api/sessions", {}, client=client)[0] == 201


@pytest.mark.parametrize("body, words", [
    ({"device": "quantum"}, "unknown device"),
    ({"runtime": "jax-9"}, "runtime"),
    ({"colour": "blue"}, "unknown field"),
    ([], "JSON object"),
])
def test_a_bad_session_request_is_a_clear_400(stack, body, words):
    status, answer = stack.call("POST", "/api/sessions", body, client="198.51.100.36")
    assert status == 400 and words in answer["error"], answer


def test_a_bad_cell_is_a_clear_400_and_loses_nothing(stack):
    client = "198.51.100.37"
    session = new_session(stack, client)
    run_cell(stack, session, "z = 3\n", client)
    for body, words in (({"code": 5}, "string"), ({}, "required"), ({"code": "x" * 300_000}, "limit")):
        status, answer = stack.call("POST", f"{session['url']}/cells", body, client=client)
        assert status in (400, 413) and words in json.dumps(answer), answer
    _, after = run_cell(stack, session, "print(z)\n", client)
    assert after.text().strip() == "3"
    stack.call("DELETE", session["url"], client=client)


def test_a_cell_still_queued_when_its_session_stops_is_cancelled_not_left_waiting(redis_client):
    """A node that stopped leaves its session's queued cell on a queue no one reads: the web side,
    finding the session stopped, cancels it."""
    import uuid

    from executor import sessionstate
    from playground.actions.sessions import do_create_session, session_state
    from playground.models import Run

    session = do_create_session(device="cpu", runtime="jax-0.12.0.1", client="ip:198.51.100.40")
    # Queued as the web side queues a cell, but on no queue an executor reads.
    run = Run.objects.create(id=uuid.uuid4(), code="print(1)", device="cpu", session=session)
    sessionstate.stop(redis_client, str(session.id), "its node stopped")
    assert session_state(session)["stopped_reason"] == "its node stopped"
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert Run.objects.get(id=run.id).message == "cancelled before it started"
