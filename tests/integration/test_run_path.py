"""The run path through the real stack: HTTP API and the whole ASGI application in-process,
real Redis, real Celery workers (subprocesses) executing snippets."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client

from executor import events as ev
from playground.models import Run, RunEvent
from web.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://127.0.0.1")]
# A second apart: a loaded machine that keeps the executor from running a while reads two lines
# printed closer together at once, and they go as one event.
SLOW_PRINTS = "import time\nfor i in range(5):\n    print('line', i, flush=True)\n    time.sleep(1.0)\n"


def start_run(client: Client, code: str, **extra) -> dict:
    response = client.post("/api/runs", {"code": code, **extra}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()


async def collect(run_id: str, after: int = 0, limit: int | None = None, timeout: float = 60):
    """Events from the websocket, with the monotonic time each arrived."""
    comm = WebsocketCommunicator(application, f"/ws/runs/{run_id}/?after={after}", headers=ORIGIN)
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected
    got = []
    try:
        while limit is None or len(got) < limit:
            message = await comm.receive_output(timeout)
            if message["type"] == "websocket.close":
                break
            event = json.loads(message["text"])
            got.append((time.monotonic(), event))
            if event["type"] == ev.FINISHED:
                closed = await comm.receive_output(5)
                assert closed["type"] == "websocket.close"
                break
    finally:
        await comm.disconnect()
    return got


def assert_contiguous(events: list[dict], first: int = 1) -> None:
    assert [e["seq"] for e in events] == list(range(first, first + len(events)))


class TestStreaming:
    def test_it_streams_output_in_order_as_it_is_produced(self, live_stack):
        run = start_run(Client(), SLOW_PRINTS)
        timed = asyncio.run(collect(run["id"]))
        events = [e for _, e in timed]
        assert_contiguous(events)
        assert [e["type"] for e in events][:2] == ["queued", "started"]
        assert events[-1]["type"] == "finished" and events[-1]["status"] == "succeeded"
        stdout = [(t, e["text"]) for t, e in timed if e["type"] == "stdout"]
        assert "".join(text for _, text in stdout) == "".join(f"line {i}\n" for i in range(5))
        # Streamed, not at the end: the lines arrive spread over the run's 5 s.
        assert len(stdout) >= 4
        assert stdout[-1][0] - stdout[0][0] > 0.8
        started = events[1]
        assert started["platform"] == "cpu" and started["device_count"] == 8
        assert started["jax_version"]

    def test_a_late_client_gets_the_full_replay(self, live_stack):
        run = start_run(Client(), "print('hello')\nimport sys\nprint('oops', file=sys.stderr)\n")
        finished = live_stack.wait_finished(run["id"])
        assert finished["status"] == "succeeded"
        events = [e for _, e in asyncio.run(collect(run["id"]))]
        assert_contiguous(events)
        assert events[-1]["type"] == "finished"
        assert "".join(e["text"] for e in events if e["type"] == "stdout") == "hello\n"
        assert "".join(e["text"] for e in events if e["type"] == "stderr") == "oops\n"
        # The database holds exactly what the websocket replayed.
        stored = list(RunEvent.objects.filter(run_id=run["id"]).order_by("seq").values_list("data", flat=True))
        assert stored == events

    def test_a_reconnect_after_n_gets_exactly_the_rest(self, live_stack):
        run = start_run(Client(), SLOW_PRINTS)
        first = [e for _, e in asyncio.run(collect(run["id"], limit=3))]
        assert_contiguous(first)
        rest = [e for _, e in asyncio.run(collect(run["id"], after=3))]
        assert_contiguous(rest, first=4)
        assert rest[-1]["type"] == "finished"
        texts = "".join(e.get("text", "") for e in first + rest if e["type"] == "stdout")
        assert texts == "".join(f"line {i}\n" for i in range(5))

    def test_get_run_answers_from_the_database(self, live_stack):
        run = start_run(Client(), "x = 1\ny = 2\nraise ValueError('boom')\n")
        live_stack.wait_finished(run["id"])
        Run.objects.filter(id=run["id"]).update(message="from the database")
        body = Client().get(f"/api/runs/{run['id']}").json()
        assert body["status"] == "failed" and body["message"] == "from the database"
        error = next(e for e in body["events"] if e["type"] == "error")
        assert error["exc_type"] == "ValueError" and error["message"] == "boom" and error["line"] == 3
        assert "raise ValueError('boom')" in error["traceback"]
        assert body["events"][-1]["type"] == "finished"
        assert body["wall_ms"] is not None and body["started_at"] and body["finished_at"]


class TestBadInput:
    @pytest.mark.parametrize("body, message", [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({}).encode(), "'code' is required"),
        (json.dumps({"code": 42}).encode(), "'code' must be a string"),
        (json.dumps({"code": "x" * (64 * 1024 + 1)}).encode(), "the limit is 65536 bytes"),
        (json.dumps({"code": "print(1)", "device": "quantum"}).encode(), "unknown device 'quantum'"),
        (json.dumps({"code": "print(1)", "device": ["cpu"]}).encode(), "unknown device"),
        # Far over what any 64 KiB of code could be, however escaped.
        (json.dumps({"code": "x" * 3_000_000}).encode(), "code may be at most 65536 bytes"),
    ])
    def test_it_rejects_bad_input_and_creates_nothing(self, live_stack, body, message):
        before = Run.objects.count()
        response = Client().post("/api/runs", body, content_type="application/json")
        assert response.status_code == 400
        assert message in response.json()["error"]
        assert Run.objects.count() == before

    def test_it_answers_503_when_no_executor_of_that_kind_is_online(self, live_stack):
        response = Client().post("/api/runs", {"code": "print(1)", "device": "gpu"},
                                 content_type="application/json")
        assert response.status_code == 503
        assert "no gpu executor is online" in response.json()["error"]
        assert not Run.objects.filter(device="gpu").exists()

    def test_code_of_exactly_64_kib_is_accepted(self, live_stack):
        code = "#" * (64 * 1024 - 9) + "\nprint(1)"
        assert len(code.encode()) == 64 * 1024
        run = start_run(Client(), code)
        assert live_stack.wait_finished(run["id"])["status"] == "succeeded"

    def test_it_rate_limits_a_client(self, live_stack, settings):
        settings.RUN_RATE_LIMIT_PER_MINUTE = 2
        client = Client(REMOTE_ADDR="203.0.113.7")
        statuses = [client.post("/api/runs", {"code": "pass"}, content_type="application/json")
                    for _ in range(3)]
        assert [r.status_code for r in statuses] == [201, 201, 429]
        assert "at most 2 a minute" in statuses[2].json()["error"]
        assert int(statuses[2]["Retry-After"]) > 0

    def test_wrong_methods_and_unknown_runs_are_json_errors(self, live_stack):
        client = Client()
        assert client.get("/api/runs").status_code == 405
        assert client.get("/api/runs/not-a-uuid").json() == {"error": "no such run"}
        assert client.get("/api/runs/00000000-0000-0000-0000-000000000000").status_code == 404
        assert client.post("/api/runs/00000000-0000-0000-0000-000000000000/cancel").status_code == 404
        for path in ("/api/nope", "/api/", "/api/runs/x/y"):
            response = client.get(path)
            assert response.status_code == 404 and "/api/openapi.json" in response.json()["error"]

    @pytest.mark.parametrize("path", ["00000000-0000-0000-0000-000000000000", "nope"])
    async def test_a_websocket_for_an_unknown_run_is_closed_with_a_reason(self, live_stack, path):
        comm = WebsocketCommunicator(application, f"/ws/runs/{path}/", headers=ORIGIN)
        connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
        assert connected
        closed = await comm.receive_output(5)
        assert closed == {"type": "websocket.close", "code": 4404, "reason": "no such run"}


class TestCancel:
    def test_cancelling_a_running_run_keeps_its_output(self, live_stack):
        client = Client()
        run = start_run(client, "import time\nprint('before', flush=True)\ntime.sleep(20)\nprint('after')\n")
        deadline = time.monotonic() + 30
        while "before" not in json.dumps(client.get(f"/api/runs/{run['id']}").json()["events"]):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        asked_at = time.time()
        response = client.post(f"/api/runs/{run['id']}/cancel")
        assert response.status_code == 202
        finished = live_stack.wait_finished(run["id"])
        assert finished["status"] == "cancelled"
        # Ended within a second of the request on a quiet machine: the executor stamps the event
        # when it emits it. A loaded one may keep the executor or this process from running for a
        # second; 3 s still tells a cancel apart from the snippet's 20 s.
        assert finished["events"][-1]["ts"] - asked_at < 3.0
        texts = "".join(e.get("text", "") for e in finished["events"])
        assert "before" in texts and "after" not in texts
        assert client.post(f"/api/runs/{run['id']}/cancel").status_code == 409


def test_events_of_a_run_this_database_does_not_have_are_dropped():
    from playground.actions.runs import do_record_events

    ghost = "11111111-1111-1111-1111-111111111111"
    do_record_events(ghost, [{"seq": 1, "type": "queued", "ts": time.time(), "position": 1}])
    assert not RunEvent.objects.filter(run_id=ghost).exists()


def test_a_started_batch_recorded_after_the_end_still_says_where_it_ran():
    """Two recorder processes may commit a run's batches in either order: the end first, then
    the start. The run stays ended and still says where and when it ran."""
    from playground.actions.runs import do_record_events

    run = Run.objects.create(code="print(1)", device="cpu")
    now = time.time()
    do_record_events(str(run.id), [{"seq": 3, "type": ev.FINISHED, "ts": now + 0.05, "status": ev.SUCCEEDED,
                                    "wall_ms": 40.0}])
    do_record_events(str(run.id), [{"seq": 1, "type": ev.QUEUED, "ts": now - 0.1, "position": 1},
                                   {"seq": 2, "type": ev.STARTED, "ts": now, "worker": "cpu-a@node",
                                    "device": "cpu", "device_kind": "cpu"}])
    run.refresh_from_db()
    assert (run.status, run.worker, run.ran_on, run.device_kind) == (ev.SUCCEEDED, "cpu-a@node", "cpu", "cpu")
    assert run.started_at is not None and run.started_at.timestamp() == pytest.approx(now)
    assert list(run.events.values_list("seq", flat=True)) == [1, 2, 3]


def test_a_start_recorded_again_keeps_the_first_where_and_when():
    """A batch delivered twice (a recorder's retry after its commit) or a second start of one run
    changes nothing of where and when it ran: the first start recorded stands."""
    from playground.actions.runs import do_record_events

    run = Run.objects.create(code="print(1)", device="cpu")
    now = time.time()
    first = {"seq": 2, "type": ev.STARTED, "ts": now, "worker": "cpu-a@node", "device": "cpu", "device_kind": "cpu"}
    do_record_events(str(run.id), [first])
    do_record_events(str(run.id), [{**first, "seq": 3, "ts": now + 5, "worker": "cpu-b@node", "device_kind": "x"}])
    run.refresh_from_db()
    assert (run.status, run.worker, run.device_kind) == (ev.STATUS_RUNNING, "cpu-a@node", "cpu")
    assert run.started_at.timestamp() == pytest.approx(now)
