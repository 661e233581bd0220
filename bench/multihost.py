"""The playground spread over hosts (bench/hosts.py: network namespaces on a bridge, Redis over TLS
with a password, two daphne processes behind nginx), measured as a fleet: runs a second with 1,
2 and 3 executor nodes, each pinned to one core with ``taskset`` and given one slot; the time
from a node cut off mid-run to its run ``lost``; the time from a new node's start to its first
heartbeat and its first run, under load.

    .venv/bin/python -m bench.multihost [--json var/bench-multihost.json]   # as root
    .venv/bin/python -m bench.multihost --repeat 0 --set EXECUTOR_WARM_WHEN_IDLE=0

Runs are posted through nginx, several at once, as a class posts them; when each ended is read
from its log in Redis (the ``finished`` event's own time), so that polling the API does not take
the web processes' CPU from the nodes. Node n1 is pinned to core 0, n2 to core 1 and n3 to core 0
again: on a 2-core machine the third node shares a core, and the web processes, the recorder,
Redis and nginx share both with the nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from executor import events as ev
from executor import registry

from . import hosts

CORES = {"n1": 0, "n2": 1, "n3": 0}
WORKLOADS = {
    "print(1)": ("print(1)", 60),
    # Pure Python, one thread: about 130 ms of one core here (the run's own CPU time).
    "a CPU-bound loop": ("n = sum(i * i for i in range(1_500_000))\nprint(n)", 30),
}


def post_all(fleet, code: str, count: int) -> tuple[float, list[str]]:
    """``count`` runs posted at once (8 at a time) through nginx: when the first was sent, the ids."""
    def one(_):
        status, created = fleet.post("/api/runs", {"code": code})
        assert status == 201, created
        return created["id"]

    t0 = time.time()
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(one, range(count)))
    return t0, ids


def ended_at(fleet, run_ids: list[str], timeout: float = 300) -> dict[str, dict]:
    """Each run's ``finished`` event, read from its log once every run has one."""
    client = fleet.redis.client()
    deadline = time.monotonic() + timeout
    while True:
        pipe = client.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.exists(ev.done_key(run_id))
        if all(pipe.execute()):
            break
        if time.monotonic() > deadline:
            raise TimeoutError("runs still going")
        time.sleep(0.1)
    pipe = client.pipeline(transaction=False)
    for run_id in run_ids:
        pipe.xrevrange(ev.log_key(run_id), count=1)
    return {run_id: ev.decode_entries(entries)[0] for run_id, entries in zip(run_ids, pipe.execute())}


def throughput(fleet, code: str, count: int) -> dict:
    t0, ids = post_all(fleet, code, count)
    finished = ended_at(fleet, ids)
    ends = sorted(e["ts"] for e in finished.values())
    statuses = {e["status"] for e in finished.values()}
    latencies = [e["ts"] - t0 for e in finished.values()]
    return {"runs": count, "runs_per_s": round(count / (ends[-1] - t0), 2),
            "cpu_ms_p50": round(statistics.median(e.get("cpu_ms") or 0 for e in finished.values())),
            "p50_s": round(statistics.median(latencies), 2),
            "p95_s": round(statistics.quantiles(latencies, n=20)[-1], 2), "statuses": sorted(statuses)}


def quiet(seconds: float = 3) -> None:
    time.sleep(seconds)


def cut_to_lost(fleet) -> float:
    """A long run started, its node cut off: seconds until the API says ``lost``. The node is
    restored and back online before this returns."""
    status, created = fleet.post("/api/runs", {"code": "import time\nprint('start', flush=True)\ntime.sleep(50)\n"})
    assert status == 201, created
    run_id = created["id"]
    while True:
        run = fleet.get(f"/api/runs/{run_id}")
        if fleet.node_of(run) and any(e["type"] == "stdout" for e in run["events"]):
            break
        time.sleep(0.05)
    host = fleet.network.hosts[fleet.node_of(run)]
    host.cut()
    t0 = time.monotonic()
    while fleet.get(f"/api/runs/{run_id}")["status"] != "lost":
        time.sleep(0.1)
    lost_s = time.monotonic() - t0
    host.restore()
    hosts.wait_nodes(fleet, 3)
    return lost_s


def new_node_to_first_run(fleet) -> tuple[float, float]:
    """n3 stopped and forgotten, runs queued, n3 started: seconds from its start to its first
    heartbeat, and from that heartbeat to the first run it starts."""
    client = fleet.redis.client()
    fleet.kill("n3")
    for name in client.zrange("executors:cpu", 0, -1):
        if name.decode().startswith("cpu-n3@"):
            registry.leave(client, name.decode(), "cpu")
    hosts.wait_nodes(fleet, 2)
    ids: list[str] = []

    def keep_queued():
        depth = next(d for d in fleet.get("/api/devices")["devices"] if d["kind"] == "cpu")["queue_depth"]
        for _ in range(max(0, 4 - depth)):
            ids.append(fleet.post("/api/runs", {"code": "import time\ntime.sleep(2)\nprint('done')"})[1]["id"])

    keep_queued()
    started = time.time()
    fleet.start_node("n3", cpu=CORES["n3"])
    first_beat = None
    while first_beat is None:
        keep_queued()
        for name, score in client.zrange("executors:cpu", 0, -1, withscores=True):
            if name.decode().startswith("cpu-n3@"):
                first_beat = score
        time.sleep(0.1)
    first_run = None
    while first_run is None:
        keep_queued()
        for run_id in list(ids):
            log = ev.decode_entries(client.xrange(ev.log_key(run_id)))
            for event in log:
                if event["type"] == "started" and event.get("worker", "").startswith("cpu-n3@"):
                    first_run = event["ts"] if first_run is None else min(first_run, event["ts"])
        time.sleep(0.2)
    ended_at(fleet, ids)
    return first_beat - started, first_run - first_beat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--rounds", type=int, default=3, help="bursts of each workload on each fleet (the median)")
    parser.add_argument("--repeat", type=int, default=2, help="cuts and node starts to time (0: none)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for every process of the fleet, e.g. EXECUTOR_WARM_WHEN_IDLE=0")
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.set)
    problem = hosts.can_make_hosts()
    if problem:
        raise SystemExit(f"bench.multihost cannot make its hosts: {problem}")
    results: dict = {"cores": os.cpu_count(), "settings": settings, "throughput": {}, "cut_to_lost_s": [],
                     "new_node": []}
    with tempfile.TemporaryDirectory(prefix="bench-multihost-") as tmp:
        logdir = hosts.ROOT / "var" / "bench-logs" / "multihost"
        logdir.mkdir(parents=True, exist_ok=True)
        fleet = hosts.launch_fleet(Path(tmp), logdir, nodes=1, node_cores={"n1": CORES["n1"]},
                                   **{"RUN_WALL_S": "60", **settings})
        try:
            for nodes in (1, 2, 3):
                if nodes > 1:
                    fleet.start_node(f"n{nodes}", cpu=CORES[f"n{nodes}"])
                    hosts.wait_nodes(fleet, nodes)
                for label, (code, count) in WORKLOADS.items():
                    rounds = []
                    for _ in range(args.rounds):
                        quiet()
                        rounds.append({**throughput(fleet, code, count), "load": round(os.getloadavg()[0], 1)})
                    figures = sorted(rounds, key=lambda r: r["runs_per_s"])[len(rounds) // 2]
                    results["throughput"].setdefault(label, {})[nodes] = {**figures, "rounds": rounds}
                    print(f"{nodes} node(s), {label}: {figures['runs_per_s']} runs/s over {count} runs at once, "
                          f"median of {len(rounds)} (all: {', '.join(str(r['runs_per_s']) for r in rounds)}; "
                          f"POST→finished p50 {figures['p50_s']} s, p95 {figures['p95_s']} s; a run's CPU "
                          f"{figures['cpu_ms_p50']} ms; {', '.join(figures['statuses'])}; load average "
                          f"{', '.join(str(r['load']) for r in rounds)})", flush=True)
            for _ in range(args.repeat):
                quiet()
                lost_s = cut_to_lost(fleet)
                results["cut_to_lost_s"].append(round(lost_s, 1))
                print(f"a node cut off mid-run: its run lost after {lost_s:.1f} s", flush=True)
            for _ in range(args.repeat):
                quiet()
                beat_s, run_s = new_node_to_first_run(fleet)
                results["new_node"].append({"start_to_heartbeat_s": round(beat_s, 1),
                                            "heartbeat_to_first_run_s": round(run_s, 2)})
                print(f"a node started under load: first heartbeat {beat_s:.1f} s after its start, "
                      f"first run {run_s:.2f} s after that", flush=True)
        finally:
            fleet.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
