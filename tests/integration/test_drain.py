"""A node scaled down drains: told to stop (SIGTERM to the worker's main process, as systemd's
``KillMode=mixed`` and Kubernetes send it) it takes no new run, finishes the one it has, and exits
0 with nothing of its sandboxes left; a run queued meanwhile waits for another node.

The draining node and the one after it pose as ``gpu:drain`` (EXECUTOR_DEVICE_KIND), whose
queue no other worker of the suite consumes: which node takes a run is then this test's to say,
not a race with the suite's CPU executor."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from executor import events as ev
from executor import registry

pytestmark = pytest.mark.django_db(transaction=True)

DEVICE = "gpu:drain"
SLOW = "import time\nprint('before', flush=True)\ntime.sleep(3)\nprint('after')\n"
# Celery's warm shutdown waits for the run (3 s here), then the worker discards its warm runners
# and its template: a few seconds more on a busy machine.
DRAIN_BOUND_S = 30


def _processes() -> dict[int, tuple[int, str]]:
    """Every process on the host: pid → (parent pid, start time), from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        table[int(entry)] = (int(fields[1]), fields[19])
    return table


def descendants(pid: int) -> set[tuple[int, str]]:
    """A process's descendants (bubblewrap, the template, its runners) as (pid, start time), so that
    a pid reused later is not taken for one of them."""
    table = _processes()
    found, frontier = set(), [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, started) in table.items():
            if ppid == parent and (child, started) not in found:
                found.add((child, started))
                frontier.append(child)
    return found


def still_alive(family: set[tuple[int, str]]) -> set[tuple[int, str]]:
    table = _processes()
    return {(pid, started) for pid, started in family if table.get(pid, (None, None))[1] == started}


def run_cgroups(worker_pid: int) -> list[Path]:
    """The run cgroups a worker made (``jax-playground/run-<worker pid>-…``, per hierarchy)."""
    found = []
    for top, dirs, _files in os.walk("/sys/fs/cgroup"):
        if Path(top).name == "jax-playground":
            found += [Path(top) / d for d in dirs if d.startswith(f"run-{worker_pid}-")]
            dirs.clear()
        elif top.count("/") > 8:
            dirs.clear()
    return found


def drain_device(live_stack) -> dict:
    """What ``GET /api/devices`` says of gpu:drain (nothing while it is offline)."""
    return next((s for d in live_stack.get("/api/devices")["devices"] for s in d.get("specific", ())
                 if s["device"] == DEVICE), {})


def wait_for(what: str, check, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} after {timeout} s"
        time.sleep(0.05)


@pytest.fixture
def drain_workers(live_stack, redis_client):
    """Start workers posing as gpu:drain; whatever is left of them is stopped and forgotten after."""
    names = []

    def start(name: str):
        names.append(name)
        return live_stack.start_executor(name, device=DEVICE, EXECUTOR_HEARTBEAT_S="1", EXECUTOR_POOL_SIZE="1",
                                         EXECUTOR_CONCURRENCY="2")

    yield start
    for name in names:
        if name in live_stack.procs:
            live_stack.kill(name)
    for worker in registry.online_workers(redis_client, DEVICE, window=3600):
        registry.leave(redis_client, worker["name"], "gpu", "drain")


def test_a_node_told_to_stop_finishes_its_run_takes_no_new_one_and_exits(live_stack, drain_workers, redis_client):
    first = drain_workers("drain-a")
    live_stack.wait_online(DEVICE)
    status, slow = live_stack.post("/api/runs", {"code": SLOW, "device": DEVICE})
    assert status == 201, slow
    wait_for("the slow run never printed", lambda: "before" in str(live_stack.get(f"/api/runs/{slow['id']}")["events"]))
    family = descendants(first.pid)
    assert family, "the worker has no sandbox processes to leave behind"

    os.kill(first.pid, signal.SIGTERM)  # the main process only, as KillMode=mixed does
    told = time.monotonic()
    # While it drains the node is still online (its kind takes runs into the queue for the next
    # node) but says it has no free slot, though one of its two is idle.
    draining = wait_for("the draining node still offers a free slot",
                        lambda: (d := drain_device(live_stack)).get("workers") and d.get("free_runners") == 0 and d)
    assert draining["workers"] == 1
    status, later = live_stack.post("/api/runs", {"code": "print('taken by the next node')", "device": DEVICE})
    assert status == 201, later

    assert first.wait(timeout=DRAIN_BOUND_S) == 0
    drained_in = time.monotonic() - told
    live_stack.procs.pop("drain-a")
    assert drained_in < DRAIN_BOUND_S

    # The run it had finished, as any run does.
    done = live_stack.wait_finished(slow["id"])
    assert done["status"] == "succeeded", done
    stdout = "".join(e.get("text", "") for e in done["events"] if e["type"] == "stdout")
    assert stdout == "before\nafter\n"
    assert [e["worker"] for e in done["events"] if e["type"] == "started"] == [done["worker"]]
    assert done["worker"].startswith("gpu-drain-a@")

    # Nothing of its sandboxes is left: no bubblewrap, template or runner, no run cgroup.
    assert not still_alive(family), f"left behind: {still_alive(family)}"
    assert not run_cgroups(first.pid)
    # It said goodbye: its kind is offline at once, not an online window later.
    assert not registry.online_workers(redis_client, DEVICE)

    # The run posted after SIGTERM was not taken: it waits in the queue, unclaimed.
    waiting = live_stack.get(f"/api/runs/{later['id']}")
    assert waiting["status"] == "queued" and [e["type"] for e in waiting["events"]] == ["queued"]
    assert not redis_client.exists(ev.claim_key(later["id"]))
    assert registry.queue_depth(redis_client, DEVICE) == 1

    # The next node takes it.
    drain_workers("drain-b")
    taken = live_stack.wait_finished(later["id"], timeout=120)
    assert taken["status"] == "succeeded", taken
    assert taken["worker"].startswith("gpu-drain-b@")
    assert "".join(e.get("text", "") for e in taken["events"] if e["type"] == "stdout") == "taken by the next node\n"


def test_a_draining_node_finishes_the_cell_it_has_from_its_stream_then_ends_its_sessions(live_stack, drain_workers,
                                                                                         redis_client):
    """A session's later cells reach its node on the node's own stream, not through Celery: told
    to stop, the node still finishes the cell it has (as Celery's warm shutdown waits for its
    tasks), then ends the session, said on it."""
    from executor import sessionstate

    node = drain_workers("drain-s")
    live_stack.wait_online(DEVICE)
    session = live_stack.new_session(device=DEVICE)
    first, watched = live_stack.run_cell(session, "x = 'kept'\n")
    assert watched.finished["status"] == "succeeded", watched.finished
    held_by = redis_client.hget(sessionstate.key(session["id"]), "node").decode()
    sent_before = redis_client.xinfo_stream(sessionstate.node_stream(held_by))["entries-added"]
    status, slow = live_stack.post(f"{session['url']}/cells", {"code": "print(x)\n" + SLOW})
    assert status == 201, slow
    wait_for("the slow cell never printed",
             lambda: "before" in str(live_stack.get(f"/api/runs/{slow['id']}")["events"]))
    # It went by the node's stream (one more sent there, and taken: none waits unread).
    stream = redis_client.xinfo_stream(sessionstate.node_stream(held_by))
    assert (stream["entries-added"], stream["length"]) == (sent_before + 1, 0), stream

    os.kill(node.pid, signal.SIGTERM)
    assert node.wait(timeout=DRAIN_BOUND_S) == 0
    live_stack.procs.pop("drain-s")
    done = live_stack.wait_finished(slow["id"])
    assert done["status"] == "succeeded", done
    assert "".join(e.get("text", "") for e in done["events"] if e["type"] == "stdout") == "kept\nbefore\nafter\n"
    status, state = live_stack.call("GET", session["url"])
    assert state["state"] == "stopped" and state["stopped_reason"] == "its node stopped", state
    assert live_stack.call("POST", f"{session['url']}/cells", {"code": "print(x)"})[0] == 410
