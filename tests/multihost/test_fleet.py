"""The playground as an operator runs it, across a network: executor nodes on hosts of their own
reach Redis by its address over TLS with a password, two web processes sit behind nginx, and
the network, Redis and the web processes fail under them. Each test says what it measured.

The tests share one fleet (conftest.py) and run in this order: a node is cut off mid-run, comes
back, a third node joins under load, Redis restarts, the web processes restart one after the
other. A test run alone does what it needs of the ones before it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from bench import hosts
from bench.stack import ROOT
from executor import events as ev

pytestmark = [
    pytest.mark.multihost,
    pytest.mark.skipif(os.geteuid() != 0, reason="the multi-host suite makes network namespaces and links, "
                                                 "which needs root (CAP_NET_ADMIN)"),
]

# A line every 0.2 s for 30 s: a run that is surely running when its node is cut off.
LONG_RUN = "import time\nfor i in range(150):\n    print('line', i, flush=True)\n    time.sleep(0.2)\n"
HEARTBEAT_S = 5  # EXECUTOR_HEARTBEAT_S's default, which the fleet keeps
ONLINE_WINDOW_S = 15  # EXECUTOR_ONLINE_WINDOW_S's default

# What one test leaves for the next (the node it cut off).
scene: dict = {}


def say(what: str) -> None:
    print(f"[multihost] {what}", flush=True)


def post_run(fleet, code: str) -> str:
    status, created = fleet.post("/api/runs", {"code": code})
    assert status == 201, created
    return created["id"]


def wait_started(fleet, run_id: str, timeout: float = 60) -> tuple[str, dict]:
    """Until the run has printed (its node runs it): the node and the run."""
    deadline = time.monotonic() + timeout
    while True:
        run = fleet.get(f"/api/runs/{run_id}")
        if fleet.node_of(run) and any(e["type"] == "stdout" for e in run["events"]):
            return fleet.node_of(run), run
        assert time.monotonic() < deadline, f"run {run_id} never started: {run['status']}"
        time.sleep(0.05)


def wait_status(fleet, run_id: str, status: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        run = fleet.get(f"/api/runs/{run_id}")
        if run["status"] == status:
            return run
        assert run["status"] in ("queued", "running"), run
        assert time.monotonic() < deadline, f"run {run_id} still {run['status']} after {timeout} s"
        time.sleep(0.1)


def cpu_workers(fleet) -> int:
    return next(d for d in fleet.get("/api/devices")["devices"] if d["kind"] == "cpu")["workers"]


def beats(fleet) -> dict[str, float]:
    """Each worker's last heartbeat (unix time), by node (n1, n2, ...), read in Redis itself."""
    client = fleet.redis.client()
    return {name.decode().split("@")[0].removeprefix("cpu-"): score
            for name, score in client.zrange("executors:cpu", 0, -1, withscores=True)}


def assert_told_once(run: dict) -> None:
    """A run's stored events: 1, 2, ... once each, one ``started``, one ``finished``, last."""
    events = run["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), [e["seq"] for e in events]
    assert sum(e["type"] == "started" for e in events) == 1, "started twice"
    assert [e["type"] for e in events].count("finished") == 1 and events[-1]["type"] == "finished"


def cut_mid_run(fleet) -> dict:
    """A long run started, then its node cut off from the network."""
    run_id = post_run(fleet, LONG_RUN)
    node, _ = wait_started(fleet, run_id)
    time.sleep(1)  # well into the run: output logged, batches on their way to the recorder
    fleet.network.hosts[node].cut()
    return {"node": node, "run": run_id, "at": time.monotonic()}


def test_every_process_reaches_redis_over_tls_by_its_address(fleet):
    """The fleet's Redis speaks only TLS, wants the password and is known by its certificate;
    the nodes and the web host are connected from their own addresses; the channel layer (course
    dashboards, token sockets) works over the same URL."""
    import redis

    addr, port = fleet.redis.host.addr, fleet.redis.port
    with pytest.raises(redis.ConnectionError):
        redis.Redis(host=addr, port=port, socket_timeout=3).ping()  # no plain-text Redis there
    with pytest.raises(redis.ConnectionError, match="certificate verify failed"):
        redis.Redis.from_url(f"rediss://:{fleet.redis.password}@{addr}:{port}/0?ssl_cert_reqs=required").ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(fleet.redis.url.replace(fleet.redis.password, "wrong")).ping()

    clients = fleet.redis.client().client_list()
    seen = {c["addr"].rsplit(":", 1)[0] for c in clients}
    hosts_ = fleet.network.hosts
    assert {hosts_["n1"].addr, hosts_["n2"].addr, hosts_["web"].addr} <= seen, seen
    assert "127.0.0.1" not in seen

    layer_check = (
        "import asyncio\nfrom channels.layers import get_channel_layer\n"
        "async def main():\n"
        "    layer = get_channel_layer()\n"
        "    name = await layer.new_channel()\n"
        "    await layer.group_add('multihost', name)\n"
        "    await layer.group_send('multihost', {'type': 'hello', 'text': 'over tls'})\n"
        "    print((await asyncio.wait_for(layer.receive(name), 10))['text'])\n"
        "asyncio.run(main())\n")
    answer = subprocess.run(hosts_["web"].command([sys.executable, "manage.py", "shell", "-c", layer_check]),
                            cwd=ROOT, env=fleet.env, capture_output=True, text=True, timeout=60)
    assert answer.stdout.strip().endswith("over tls"), answer.stderr[-2000:]


def test_a_node_cut_off_mid_run_ends_lost_never_twice_and_the_others_take_new_runs_at_once(fleet):
    cut = scene["cut"] = cut_mid_run(fleet)
    say(f"{cut['node']} cut off mid-run")

    # A run posted right after the cut: another node takes it at once.
    other = post_run(fleet, "print('elsewhere')")
    done = fleet.wait_finished(other, timeout=30)
    other_s = time.monotonic() - cut["at"]
    assert done["status"] == "succeeded", done
    assert fleet.node_of(done) != cut["node"]
    say(f"a run posted after the cut succeeded on {fleet.node_of(done)} {other_s:.1f} s after the cut")
    assert other_s < 10

    # The cut node's run ends lost (the watchdog: its alive key expires, then a grace as long),
    # within a minute, with what it logged before the cut stored once and one `started`.
    lost = wait_status(fleet, cut["run"], "lost", timeout=60)
    lost_s = time.monotonic() - cut["at"]
    say(f"its run lost {lost_s:.1f} s after the cut")
    assert "stopped responding" in lost["message"]
    lost = fleet.wait_finished(cut["run"], timeout=30)
    assert_told_once(lost)
    assert "line 0" in "".join(e.get("text", "") for e in lost["events"] if e["type"] == "stdout")
    scene["lost_events"] = lost["events"]

    # And the node leaves /api/devices once its last beat is older than the online window.
    deadline = time.monotonic() + ONLINE_WINDOW_S + 2 * HEARTBEAT_S
    while cpu_workers(fleet) != 1:
        assert time.monotonic() < deadline, "the cut node is still listed online"
        time.sleep(0.5)


def test_the_cut_node_comes_back_and_rejoins_by_itself(fleet):
    cut = scene.get("cut")
    if cut is None:  # run alone: cut a node off mid-run first, and let its run be lost
        cut = scene["cut"] = cut_mid_run(fleet)
        scene["lost_events"] = fleet.wait_finished(cut["run"], timeout=90)["events"]
    node = cut["node"]
    seen_before = beats(fleet).get(node, 0)

    fleet.network.hosts[node].restore()
    back_at = time.monotonic()
    # Its heartbeat reappears (the worker was never restarted) and /api/devices lists it again.
    deadline = back_at + 60
    while beats(fleet).get(node, 0) <= seen_before or cpu_workers(fleet) != 2:
        assert time.monotonic() < deadline, f"{node} did not come back: {beats(fleet)}"
        time.sleep(0.2)
    rejoined_s = time.monotonic() - back_at
    say(f"{node} beating and listed again {rejoined_s:.1f} s after its link came back")

    # It takes runs again: two at once, one for each node's slot, until one lands there.
    took = None
    while took is None:
        assert time.monotonic() < back_at + 90, f"{node} took no run after it came back"
        ids = [post_run(fleet, "import time\ntime.sleep(1)\nprint('back')") for _ in range(2)]
        for run_id in ids:
            run = fleet.wait_finished(run_id, timeout=60)
            assert run["status"] == "succeeded", run
            if fleet.node_of(run) == node:
                took = time.monotonic() - back_at
    say(f"{node} ran a run {took:.1f} s after its link came back")

    # The run it had when it was cut off is still lost, told once: nothing of it came late.
    again = fleet.get(f"/api/runs/{cut['run']}")
    assert again["status"] == "lost"
    assert again["events"] == scene["lost_events"]
    scene.pop("cut")


def test_a_node_back_after_its_quiet_run_was_given_up_stops_it_and_takes_the_next(fleet):
    """A run that prints nothing for a while does not notice the cut (nothing to send); the
    watchdog gives it up, and when the node's link comes back the node learns it with its next
    pulse and stops the run, instead of holding its slot to the end for no one."""
    run_id = post_run(fleet, "import time\nprint('start', flush=True)\ntime.sleep(50)\nprint('too late')\n")
    node, _ = wait_started(fleet, run_id)
    host = fleet.network.hosts[node]
    host.cut()
    lost = wait_status(fleet, run_id, "lost", timeout=60)
    host.restore()
    back_at = time.monotonic()
    log = fleet.logdir / f"{node}.log"
    while not re.search(rf"run {run_id} was ended without this node", log.read_text()):
        assert time.monotonic() - back_at < 20, f"{node} did not stop the run the watchdog gave up"
        time.sleep(0.2)
    stopped_s = time.monotonic() - back_at
    took = None
    while took is None:  # long before the run's sleep would have ended
        assert time.monotonic() - back_at < 30, f"{node} took no run after it came back"
        ids = [post_run(fleet, "print('next')") for _ in range(2)]
        if node in [fleet.node_of(fleet.wait_finished(i, timeout=30)) for i in ids]:
            took = time.monotonic() - back_at
    say(f"{node} stopped the run given up while it was away {stopped_s:.1f} s after its link came back, "
        f"and ran the next {took:.1f} s after")
    final = fleet.wait_finished(run_id, timeout=30)
    assert final["status"] == "lost" and lost["status"] == "lost"
    assert_told_once(final)
    assert [e["type"] for e in final["events"]] == ["queued", "started", "stdout", "finished"]


def queue_depth(fleet) -> int:
    return next(d for d in fleet.get("/api/devices")["devices"] if d["kind"] == "cpu")["queue_depth"]


def test_a_node_added_under_load_takes_runs_from_its_first_heartbeat(fleet):
    runs: list[str] = []

    def keep_queued(waiting: int = 4) -> None:
        """Load: runs of 3 s, always a few waiting for a free slot."""
        for _ in range(max(0, waiting - queue_depth(fleet))):
            runs.append(post_run(fleet, "import time\ntime.sleep(3)\nprint('done')"))

    keep_queued()
    started_at = time.time()
    fleet.start_node("n3")
    # Its first heartbeat, as Redis has it (the score is the beat's own clock).
    deadline = time.monotonic() + 120
    while "n3" not in beats(fleet):
        assert time.monotonic() < deadline, "n3 never beat"
        keep_queued()
        time.sleep(0.2)
    first_beat = beats(fleet)["n3"]
    while time.time() < first_beat + 2 * HEARTBEAT_S:
        keep_queued()
        time.sleep(0.2)
    finished = [fleet.wait_finished(run_id, timeout=180) for run_id in runs]
    assert all(run["status"] == "succeeded" for run in finished)
    on_n3 = sorted(e["ts"] for run in finished if fleet.node_of(run) == "n3"
                   for e in run["events"] if e["type"] == "started")
    say(f"n3: first heartbeat {first_beat - started_at:.1f} s after its start, first run started "
        f"{(on_n3[0] - first_beat) if on_n3 else float('nan'):.2f} s after that; it ran {len(on_n3)} of "
        f"{len(runs)} runs")
    assert len(on_n3) >= 2, [fleet.node_of(r) for r in finished]
    assert on_n3[0] - first_beat < HEARTBEAT_S


def test_a_redis_restart_under_the_fleet_is_survived(fleet):
    nodes = cpu_workers(fleet)
    running = post_run(fleet, "import time\nfor i in range(40):\n    print(i, flush=True)\n    time.sleep(0.2)\n")
    wait_started(fleet, running)

    fleet.redis.restart()  # SIGTERM, then the same server on the same port (appendonly: it keeps its data)
    restarted_at = time.monotonic()
    # A run posted after the restart succeeds; until then the API says "try again", never a 500.
    while True:
        assert time.monotonic() - restarted_at < 60, "no run succeeded after the restart"
        try:
            status, created = fleet.post("/api/runs", {"code": "print('after the restart')"})
        except OSError:
            status = None
        if status == 201:
            assert fleet.wait_finished(created["id"], timeout=60)["status"] == "succeeded"
            break
        assert status in (None, 503), (status, created)
        time.sleep(0.2)
    recovered_s = time.monotonic() - restarted_at

    # The run in progress ends, in a terminal state, told once.
    ended = fleet.wait_finished(running, timeout=90)
    assert ended["status"] in ev.TERMINAL_STATUSES
    assert_told_once(ended)
    # Every node beats again.
    deadline = time.monotonic() + 30
    while cpu_workers(fleet) != nodes:
        assert time.monotonic() < deadline, f"{cpu_workers(fleet)} of {nodes} nodes back"
        time.sleep(0.2)
    say(f"Redis restarted: a new run succeeded {recovered_s:.1f} s after, the run in progress ended "
        f"{ended['status']}, every node beating again {time.monotonic() - restarted_at:.1f} s after")


class Follower(threading.Thread):
    """A page following a run through nginx: it reconnects with ``?after=<last seq>`` whenever the
    socket ends before ``finished``, as frontend/src/events.ts does, and keeps every event the
    server sent, duplicates included (the page would drop them; here they would be a fault)."""

    def __init__(self, fleet, run_id: str):
        super().__init__(daemon=True)
        self.fleet, self.run_id = fleet, run_id
        self.events: list[dict] = []
        self.connections = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        from websockets.exceptions import ConnectionClosed, InvalidStatus
        from websockets.sync.client import connect

        deadline = time.monotonic() + 120
        try:
            while not (self.events and self.events[-1]["type"] == "finished"):
                if time.monotonic() > deadline:
                    raise TimeoutError("the run never finished on the page")
                after = self.events[-1]["seq"] if self.events else 0
                try:
                    with connect(f"{self.fleet.ws_url}/ws/runs/{self.run_id}/?after={after}",
                                 origin=self.fleet.url, open_timeout=10) as ws:
                        self.connections += 1
                        for message in ws:
                            data = json.loads(message)
                            assert data["type"] != "part", "no event here is sent in parts"
                            self.events.append(data)
                except (ConnectionClosed, InvalidStatus, OSError, TimeoutError):
                    pass
                time.sleep(0.25)  # the page's first backoff
        except BaseException as exc:  # noqa: BLE001 (the test thread reports it)
            self.error = exc


def test_a_rolling_restart_of_the_web_processes_behind_nginx_loses_no_event(fleet):
    # A line every 0.2 s for 40 s: both restarts fall within it (a daphne takes about 4 s to start
    # here, nginx's fail_timeout and a second are waited after each, and a stop held by a stuck
    # call ends within web.server's STOP_GRACE_S).
    lines = 200
    run_id = post_run(fleet, f"import time\nfor i in range({lines}):\n    print('tick', i, flush=True)\n"
                             "    time.sleep(0.2)\n")
    page = Follower(fleet, run_id)
    page.start()
    deadline = time.monotonic() + 60
    while not any(e["type"] == "stdout" for e in page.events):
        assert time.monotonic() < deadline and page.error is None, page.error
        time.sleep(0.05)

    # Meanwhile every API request through nginx is answered (it passes over a process that is down).
    answers: list[int] = []
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            try:
                with urllib.request.urlopen(f"{fleet.url}/api/runs/{run_id}", timeout=10) as r:
                    answers.append(r.status)
            except urllib.error.HTTPError as e:
                answers.append(e.code)
            except OSError:
                answers.append(0)
            time.sleep(0.1)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    t0 = time.time()
    restarts = []
    for name in sorted(fleet.web_ports):
        fleet.restart_web_process(name)
        restarts.append(time.time())
        # One at a time, as an operator does: the next only once nginx sends to this one again.
        # It stays out of rotation for fail_timeout after the last request it refused, which may
        # be a moment before it answers: restarting the next at once made nginx answer 502.
        time.sleep(hosts.NGINX_FAIL_TIMEOUT_S + 1)
    page.join(120)
    stop.set()
    poller.join(15)

    assert page.error is None, page.error
    events = page.events
    assert events[-1]["type"] == "finished" and events[-1]["status"] == "succeeded", events[-1]
    # Both restarts were over before the run ended, and the page lost its socket at least once.
    assert restarts[-1] < events[-1]["ts"], (restarts, events[-1])
    assert page.connections >= 2, page.connections
    # Every event exactly once, seqs contiguous, every line in order.
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), [e["seq"] for e in events]
    text = "".join(e["text"] for e in events if e["type"] == "stdout")
    assert text == "".join(f"tick {i}\n" for i in range(lines))
    assert answers and set(answers) == {200}, sorted(set(answers))
    say(f"web processes restarted one after the other (done {', '.join(f'{s - t0:.1f}' for s in restarts)} s "
        f"after the first began, the run ended at {events[-1]['ts'] - t0:.1f} s); the page "
        f"reconnected {page.connections - 1} times and saw {len(events)} events once each; "
        f"{len(answers)} API requests through nginx meanwhile, all 200")
