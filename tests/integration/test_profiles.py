"""Profiled runs through the real server, as a script uses them: daphne, real Celery workers and
recorder, the real sandbox, plain HTTP and websockets without Origin. A run posted with
``options.profile`` ends with a ``profile`` event whose URL answers a Chrome trace with one lane
per simulated CPU device, named as XLA names it, whose events are the HLO instructions of what the
run compiled; the same run on the page's socket, a notebook cell and a comparison's sides take
the option too; the trace outlives Redis's copy (the database's), and what the snippet's own code
forges on its event pipe never becomes a trace."""

from __future__ import annotations

import gzip
import json

import pytest

from executor import events as ev

pytestmark = pytest.mark.django_db(transaction=True)

PMAP = """\
import jax, jax.numpy as jnp
n = jax.device_count()
x = jnp.arange(n * 64 * 64.0).reshape(n, 64, 64) / 1e4

@jax.jit
def local(v):
    return jnp.tanh(v) @ v

step = jax.pmap(lambda v: jax.lax.psum(local(v), "i"), axis_name="i")
for _ in range(3):
    y = step(x)
print(n, float(y[0, 0, 0]))
"""


def run_profiled(live_stack, code: str, **options) -> tuple[dict, object]:
    status, run = live_stack.post("/api/runs", {"code": code, "options": {"profile": True, **options}})
    assert status == 201, run
    return run, live_stack.watch(run["id"], timeout=120)


def trace_of(live_stack, url: str, timeout: float = 60) -> dict:
    """The trace, once built: its URL answers 202 while the executor builds it after the run."""
    import time

    deadline = time.monotonic() + timeout
    status, headers, body = live_stack.profile(url)
    while status == 202 and time.monotonic() < deadline:
        assert json.loads(body)["building"] is True and headers["Retry-After"] == "1"
        time.sleep(0.2)
        status, headers, body = live_stack.profile(url)
    assert status == 200, body[:200]
    assert headers["Content-Encoding"] == "gzip" and headers["Content-Type"] == "application/json"
    # The run's own data, which its code could have written: never something a browser renders.
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Content-Security-Policy"] == "sandbox; default-src 'none'"
    assert headers["Content-Disposition"].startswith("attachment; ")
    return json.loads(gzip.decompress(body))


def lanes(trace: dict) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}


def test_a_profiled_pmap_gives_a_trace_with_a_lane_per_device(live_stack):
    live_stack.wait_online("cpu")
    run, watched = run_profiled(live_stack, PMAP)
    assert watched.finished["status"] == ev.SUCCEEDED, watched.events[-3:]
    assert watched.text().split()[0] == "8"
    types = [e["type"] for e in watched.events]
    assert types.count(ev.PROFILE) == 1 and types.index(ev.PROFILE) < types.index(ev.FINISHED)
    profile = next(e for e in watched.events if e["type"] == ev.PROFILE)
    assert not profile.get("error"), profile
    assert profile["url"] == f"/api/runs/{run['id']}/profile"
    devices = [f"TFRT_CPU_{i}" for i in range(8)]
    # The run ends with its code: the profiler is stopped and its trace built after the run's
    # end, outside its wall clock; the event says where the trace will be.
    assert profile["building"] is True and "summary" not in profile and "lanes" not in profile
    assert "profile_ms" not in profile

    trace = trace_of(live_stack, profile["url"])
    assert sorted(lanes(trace).values()) == sorted(["Host", *devices])
    assert trace["otherData"]["platform"] == "cpu" and trace["otherData"]["cut"] == ""
    timed = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(timed) > 8 * 3
    device_ops = [e for e in timed if e["pid"] >= 10 and "hlo_op" in e["args"]]
    assert {e["args"]["device"] for e in device_ops} == set(devices)
    # Every device ran the all-reduce, named after its HLO instruction, and waited for its peers.
    collectives = [e for e in device_ops if e["cat"] == "collective"]
    assert {e["args"]["device"] for e in collectives} == set(devices)
    assert any(e["args"].get("wait_us", 0) > 0 for e in collectives)
    # Each instruction is one of the optimised HLO the run's Compiled pane shows.
    # (Modules JAX compiled for itself, as an eager op's, are in the trace but not the pane.)
    compiled = {e["hlo"].split()[1].rstrip(","): e["hlo"] for e in watched.events if e["type"] == ev.COMPILED}
    mine = [e for e in device_ops if e["args"]["hlo_module"] in compiled]
    assert {e["cat"] for e in mine} >= {"collective", "matmul"}
    for e in mine:
        assert f"%{e['name']} = " in compiled[e["args"]["hlo_module"]], e
    # The host's Python lane has the snippet's own lines.
    python = [e for e in timed if e["cat"] == "python"]
    assert any(e["args"]["file"] == "<snippet>" for e in python)

    # Recorded: the database's copy answers once Redis's is gone, plain or as the file.
    live_stack.wait_finished(run["id"])
    status, headers, body = live_stack.profile(profile["url"], gzip=False)
    assert status == 200 and "Content-Encoding" not in headers and "Content-Length" not in headers  # streamed
    assert json.loads(body)["traceEvents"] == trace["traceEvents"]
    status, headers, body = live_stack.profile(profile["url"], encoding="gzip;q=0, identity")
    assert status == 200 and "Content-Encoding" not in headers and json.loads(body) == trace
    status, headers, body = live_stack.profile(profile["url"], method="HEAD")
    assert status == 200 and body == b"" and headers["Content-Encoding"] == "gzip"
    status, headers, body = live_stack.profile(profile["url"] + "?download=1")
    assert status == 200 and headers["Content-Type"] == "application/gzip"
    assert headers["Content-Disposition"] == f'attachment; filename="run-{run["id"]}.trace.json.gz"'
    assert json.loads(gzip.decompress(body)) == trace
    stored = live_stack.get(f"/api/runs/{run['id']}")
    assert any(e["type"] == ev.PROFILE and e["url"] == profile["url"] for e in stored["events"])


def test_the_option_on_the_socket_and_in_a_notebook_cell(live_stack):
    live_stack.wait_online("cpu")
    reply, watched = live_stack.start_on_socket({"code": PMAP, "options": {"profile": True}}, timeout=120)
    assert reply["type"] == "started_run", reply
    profile = next(e for e in watched.events if e["type"] == ev.PROFILE)
    assert profile["building"] and profile["url"].endswith("/profile")
    assert len(lanes(trace_of(live_stack, profile["url"]))) == 9

    session = live_stack.new_session()
    status, run = live_stack.call("POST", f"{session['url']}/cells",
                                  {"code": "import jax.numpy as jnp\nz = jnp.ones((64, 64)) @ jnp.ones((64, 64))\n",
                                   "options": {"profile": True}})
    assert status == 201, run
    cell = live_stack.watch(run["id"], timeout=120)
    assert cell.finished["status"] == ev.SUCCEEDED, cell.events[-3:]
    profile = next(e for e in cell.events if e["type"] == ev.PROFILE)
    assert profile["url"] == f"/api/runs/{run['id']}/profile"
    assert "TFRT_CPU_0" in lanes(trace_of(live_stack, profile["url"])).values()
    # The next cell, not profiled, has none: the option is the cell's.
    _, second = live_stack.run_cell(session, "print(float(z[0, 0]))\n")
    assert second.text().strip() == "64.0"
    assert not [e for e in second.events if e["type"] == ev.PROFILE]
    live_stack.call("DELETE", session["url"])


def test_a_run_without_the_option_has_no_profile_and_bad_options_are_refused(live_stack):
    live_stack.wait_online("cpu")
    status, run = live_stack.post("/api/runs", {"code": "print(1)"})
    assert status == 201
    watched = live_stack.watch(run["id"])
    assert not [e for e in watched.events if e["type"] == ev.PROFILE]
    status, _, body = live_stack.profile(f"/api/runs/{run['id']}/profile")
    assert status == 404 and "no profile" in json.loads(body)["error"]
    status, _, body = live_stack.profile("/api/runs/00000000-0000-0000-0000-000000000000/profile")
    assert status == 404
    status, answer = live_stack.post("/api/runs", {"code": "print(1)", "options": {"profile": "yes"}})
    assert status == 400 and "'profile' must be true or false" in answer["error"]
    status, answer = live_stack.post("/api/comparisons", {
        "code": "print(1)", "options": {"profile": 1},
        "sides": [{"device": "cpu"}, {"device": "cpu", "runtime": "jax-0.4.38"}]})
    assert status == 400 and "'profile'" in answer["error"]


FORGED = """\
import base64, gzip, json, os
def send(message):
    os.write(3, (json.dumps(message) + "\\n").encode())
bomb = gzip.compress(b"{" + b" " * (80 * 1024 * 1024) + b"}")
send({"type": "profile_trace", "data": base64.b64encode(bomb).decode(), "events": 1})
send({"type": "profile_trace", "data": base64.b64encode(gzip.compress(b'{"x": 1}')).decode(), "events": 1})
send({"type": "profile", "url": "https://example.com/evil", "events": 1})
print("sent")
"""


@pytest.mark.parametrize("profiled", [True, False], ids=["profiled", "not-profiled"])
def test_what_the_code_forges_on_its_event_pipe_is_never_a_trace(live_stack, profiled):
    """A bomb is refused before it is inflated past the bound, a second trace is dropped, a run
    that did not ask for one keeps none, and a "profile" event is only ever the executor's."""
    live_stack.wait_online("cpu")
    options = {"options": {"profile": True}} if profiled else {}
    status, run = live_stack.post("/api/runs", {"code": FORGED, **options})
    assert status == 201
    watched = live_stack.watch(run["id"], timeout=120)
    assert watched.finished["status"] == ev.SUCCEEDED, watched.events[-3:]
    assert watched.text().strip() == "sent"
    profiles = [e for e in watched.events if e["type"] == ev.PROFILE]
    if profiled:
        # The forged bomb came first and was refused; the run's own profile was then a second one.
        assert len(profiles) == 1 and "40 times its size" in profiles[0]["error"], profiles
        assert not profiles[0].get("url")
    else:
        assert profiles == []
    assert not any("example.com" in json.dumps(e) for e in watched.events)
    status, _, _ = live_stack.profile(f"/api/runs/{run['id']}/profile")
    assert status == 404
    # The server and the workers are still there for the next run.
    status, after = live_stack.post("/api/runs", {"code": "print(2)"})
    assert status == 201 and live_stack.watch(after["id"]).text().strip() == "2"


FORGED_RAW = """\
import base64, json, os, zlib
raw = zlib.compress(b'{"device_names": {}}\\n' + os.urandom(4096))
os.write(3, (json.dumps({"type": "profile_trace", "raw": base64.b64encode(raw).decode()}) + "\\n").encode())
print("sent")
"""


def test_a_forged_raw_profile_is_read_only_by_the_builder_and_says_why_it_has_no_trace(live_stack):
    """What the code hands over as its raw profile is read after the run, in a process of its
    own: bytes that are no XSpace give no trace, the URL says why, and the node goes on."""
    live_stack.wait_online("cpu")
    status, run = live_stack.post("/api/runs", {"code": FORGED_RAW, "options": {"profile": True}})
    assert status == 201
    watched = live_stack.watch(run["id"], timeout=120)
    assert watched.finished["status"] == ev.SUCCEEDED and watched.text().strip() == "sent"
    [profile] = [e for e in watched.events if e["type"] == ev.PROFILE]
    assert profile["building"] is True, profile
    import time

    deadline = time.monotonic() + 60
    status, _, body = live_stack.profile(profile["url"])
    while status == 202 and time.monotonic() < deadline:
        time.sleep(0.2)
        status, _, body = live_stack.profile(profile["url"])
    assert status == 404 and "could not be built" in json.loads(body)["error"], body[:300]
    status, after = live_stack.post("/api/runs", {"code": "print(2)"})
    assert status == 201 and live_stack.watch(after["id"]).text().strip() == "2"


def test_a_shared_link_keeps_its_runs_profile(live_stack):
    """Shared with its run, a snippet's page and API give the saved run's profile event, whose
    URL answers the trace from the database to anyone who has the link."""
    live_stack.wait_online("cpu")
    run, watched = run_profiled(live_stack, PMAP)
    assert watched.finished["status"] == ev.SUCCEEDED
    live_stack.wait_finished(run["id"])
    status, shared = live_stack.post("/api/snippets", {"code": PMAP, "title": "profiled", "run": run["id"]})
    assert status == 201 and shared["run"] == run["id"], shared
    snippet = live_stack.get(f"/api/snippets/{shared['slug']}")
    profile = next(e for e in snippet["run"]["events"] if e["type"] == ev.PROFILE)
    assert profile["url"] == f"/api/runs/{run['id']}/profile"
    trace = trace_of(live_stack, profile["url"])
    assert len(lanes(trace)) == 9


SUMMARY_FLOOD = """\
import base64, gzip, json, os
trace = base64.b64encode(gzip.compress(json.dumps({"traceEvents": []}).encode())).decode()
row = {"device": "d" * 5000, "span_us": 1, "busy_us": 1, "wait_us": 0, "kinds": {f"k{i}": 1 for i in range(50)},
       "ops": [["op" * 400, "matmul", 1, 2.0]] * 30}
message = {"type": "profile_trace", "data": trace, "events": 0, "lanes": ["lane"] * 5000, "summary": [row] * 300}
os.write(3, (json.dumps(message) + "\\n").encode())
big = {"type": "display", "kind": "text", "text": "x" * (1024 * 1024)}
for _ in range(20):
    os.write(3, (json.dumps(big) + "\\n").encode())
print("sent")
"""


def test_a_profiled_runs_event_is_bounded_and_its_other_events_are_held_to_a_runs(live_stack):
    """What the code says of its devices is cut to what a node has; the trace's allowance is
    the trace's alone, so the run's other events stop at a run's 16 MiB as an unprofiled one's."""
    live_stack.wait_online("cpu")
    status, run = live_stack.post("/api/runs", {"code": SUMMARY_FLOOD, "options": {"profile": True}})
    assert status == 201
    watched = live_stack.watch(run["id"], timeout=120, max_size=64 * 1024**2)
    profile = next(e for e in watched.events if e["type"] == ev.PROFILE)
    assert len(profile["lanes"]) <= 257 and len(profile["summary"]) <= 256
    row = profile["summary"][0]
    assert len(row["device"]) <= 200 and len(row["kinds"]) <= 24 and len(row["ops"]) <= 20
    assert all(len(op[0]) <= 200 for op in row["ops"])
    assert watched.finished["status"] == ev.LIMIT_EXCEEDED, watched.finished
    assert "event limit of 16" in watched.finished["message"]
    assert sum(e["type"] == "display" for e in watched.events) < 17


def test_an_interrupted_profiled_cell_keeps_its_session(live_stack):
    """Interrupting a profiled cell stops its profiler without building the trace, so the cell
    stops within the session's grace and the session keeps its state."""
    live_stack.wait_online("cpu")
    session = live_stack.new_session()
    _, first = live_stack.run_cell(session, "import jax\nkept = 41\n")
    assert first.finished["status"] == ev.SUCCEEDED
    status, run = live_stack.call("POST", f"{session['url']}/cells", {
        "code": "import time\ndef g(i):\n    return i\nt = time.time()\nwhile time.time() - t < 30:\n    g(1)\n",
        "options": {"profile": True}})
    assert status == 201, run
    import time

    time.sleep(3)
    assert live_stack.call("POST", f"/api/runs/{run['id']}/cancel")[0] == 202
    cell = live_stack.watch(run["id"], timeout=60)
    assert cell.finished["status"] == ev.CANCELLED, cell.finished
    assert "keeps its state" in cell.finished["message"], cell.finished
    profile = next(e for e in cell.events if e["type"] == ev.PROFILE)
    assert "interrupted" in profile["error"]
    _, after = live_stack.run_cell(session, "print(kept + 1)\n")
    assert after.text().strip() == "42"
    # The interrupted cell's recording was let go of (in the background on this JAX): the next
    # profiled cell has a profile of its own.
    status, run = live_stack.call("POST", f"{session['url']}/cells", {
        "code": "import jax.numpy as jnp\nprint(float(jnp.ones(4).sum()))\n", "options": {"profile": True}})
    assert status == 201, run
    profiled = live_stack.watch(run["id"], timeout=60)
    assert profiled.finished["status"] == ev.SUCCEEDED and profiled.text().strip() == "4.0", profiled.finished
    profile = next(e for e in profiled.events if e["type"] == ev.PROFILE)
    assert not profile.get("error") and profile["url"], profile
    live_stack.call("DELETE", session["url"])
