"""Where a run's milliseconds go: its path stage by stage, on the playground's own stack (daphne,
its own Redis, the recorder with its beat, one CPU executor with 2 slots, SQLite), with every
process stamping the stages it reaches (RUN_STAGE_TIMES, executor/stages.py).

    .venv/bin/python -m bench.stages [--samples 30] [--burst 200] [--flames docs/flames] [--json out.json]

Three kinds of run, one at a time (each once the pool has refilled), interleaved:

- **print(1)** and a **small jit**, as the page starts a run: on a run socket opened beforehand
  (``/ws/runs/new/``), from sending ``{"op": "start"}`` to ``finished`` on that socket;
- a **notebook cell** ``print(x)`` in a live session (its runner started by an earlier cell), as a
  script posts one: ``POST /api/sessions/<id>/cells``, then the run's websocket;
- the same cell **on the session's socket** (open beforehand, as the notebook page holds it):
  from sending ``{"op": "cell"}`` to ``finished`` on that socket. Either way the session's node
  takes the cell from its own stream (executor/cellstream.py), not from Celery.

Each run's stages, the moment each was reached:

    sent        the client sends the request (its own clock: one machine, one clock)
    parsed      web: the request's JSON is in the action (check_start_run)
    admitted    web: the person's rate, queue, budget and slot taken (quotas)
    stored      web: the run's row and its queued event committed
    queued      web: the task message is in the broker (a cell's: in its node's stream)
    received    executor: the task's body starts (a cell's thread, for one from the stream)
    runner      executor: the run claimed, its runner (or the session's) taken
    handed      executor: "started" logged, the request goes to the runner
    first_byte  executor: the run's first stdout line read from the runner
    relayed     executor: that line appended to the run's log (Redis)
    on_socket   client: that line received on the socket
    ended       executor: "finished" appended to the log
    finished    client: "finished" received on the socket
    recorded    recorder: the run's end committed to the database

For each step, the wall-clock median and p95 over the samples, and the CPU the process that took
both of its stamps spent between them (a step that crosses processes has none: a handoff). Then
the CPU each process spent per run over the samples (web, recorder, executor with its runners,
Redis; idle work such as heartbeats included), and, with ``--burst``, per run of a burst of
``print(1)`` started as pages start them (bench.vs_kernel's burst): what decides how many runs a
machine serves. ``--flames``: py-spy's flame graphs of web, recorder and executor during a second
burst, as SVG files there. Every figure is printed beside the one docs/BENCHMARKS.md records
(bench/recorded.py); ``--record`` prints the block that records this run's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.latency import burst, percentile, socket_run, wait_pool_full
from bench.recorded import beside, table
from bench.stack import ROOT, RedisServer, Stack, own_stack
from bench.vs_kernel import cpu_by_process, measured_burst, settle
from executor import stages

BENCH = "bench.stages"
PRINT = "print(1)\n"
JIT = "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)\nprint(f(jnp.ones((8, 8))).sum())\n"
CELL = "print(x)\n"
KINDS = ("print(1)", "small jit", "cell", "cell (socket)")
PATH = ("sent", "parsed", "admitted", "stored", "queued", "received", "runner", "handed", "first_byte",
        "relayed", "on_socket", "ended", "finished", "recorded")
# A cell's socket opens once its POST has answered: its end is logged before the socket takes
# its output.
CELL_PATH = ("sent", "parsed", "admitted", "stored", "queued", "received", "runner", "handed", "first_byte",
             "relayed", "ended", "on_socket", "finished", "recorded")


def page_run(stack: Stack, code: str) -> tuple[str, dict]:
    """A run started on a run socket opened beforehand: its id and the client's stamps."""
    from websockets.sync.client import connect

    with connect(f"{stack.ws_url}/ws/runs/new/", max_size=None, open_timeout=30) as ws:
        sent = time.time()
        ws.send(json.dumps({"op": "start", "code": code}))
        return _follow(ws, sent, None)


def cell_run(stack: Stack, session: dict, code: str) -> tuple[str, dict]:
    """A session's cell as a script sends one: the POST, then the run's socket."""
    from websockets.sync.client import connect

    sent = time.time()
    status, run = stack.call("POST", f"{session['url']}/cells", {"code": code}, timeout=30)
    if status != 201:
        raise RuntimeError(f"POST {session['url']}/cells: {status} {run}")
    with connect(f"{stack.ws_url}/ws/runs/{run['id']}/", max_size=None, open_timeout=30) as ws:
        return _follow(ws, sent, run["id"])


def socket_cell_run(socket, code: str) -> tuple[str, dict]:
    """A session's cell sent on its socket (``stack.session_socket``), as the notebook page sends
    one: its events come back on the same socket, wrapped (its state messages skipped)."""
    sent = time.time()
    socket.send({"op": "cell", "code": code})
    stamps, run_id = {"sent": sent}, None
    while True:
        message = socket.next(60)
        now = time.time()
        if message["type"] == "cell_started":
            run_id = message["run"]["id"]
        elif message["type"] == "refused":
            raise RuntimeError(f"refused: {message}")
        elif message["type"] == "cell_event" and _stamp(message["event"], stamps, now, f"cell {run_id}"):
            return run_id, stamps


def _follow(ws, sent: float, run_id: str | None) -> tuple[str, dict]:
    stamps = {"sent": sent}
    while True:
        event = json.loads(ws.recv(timeout=60))
        now = time.time()
        if event.get("type") == "started_run":
            run_id = event["run"]["id"]
        elif event.get("type") == "refused":
            raise RuntimeError(f"refused: {event}")
        elif _stamp(event, stamps, now, f"run {run_id}"):
            return run_id, stamps


def _stamp(event: dict, stamps: dict, now: float, what: str) -> bool:
    """The client's stamps of a run's event (its first output, its end); True at its end."""
    if event.get("type") == "stdout" and "on_socket" not in stamps:
        stamps["on_socket"] = now
    elif event.get("type") == "finished":
        if event["status"] != "succeeded":
            raise RuntimeError(f"{what} ended {event['status']}: {event.get('message')}")
        stamps["finished"] = now
        return True
    return False


def collect(redis, run_id: str, client: dict, timeout: float = 20) -> dict:
    """Every stamp of a run (the recorder's may trail the socket's end)."""
    deadline = time.monotonic() + timeout
    while True:
        server = stages.read(redis, run_id)
        if "recorded" in server or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return {**{k: (v, None, None) for k, v in client.items()}, **server}


def steps(samples: list[dict], order: tuple[str, ...] = PATH) -> list[dict]:
    """Per step between consecutive stages of ``order`` that every sample has: wall ms, and CPU
    ms where one process took both stamps. A stage may come before the one it follows (a
    negative step: the broker hands a task over before its sender has returned)."""
    present = [s for s in order if all(s in sample for sample in samples)]
    out = []
    for a, b in zip(present, present[1:], strict=False):
        walls = [(x[b][0] - x[a][0]) * 1000 for x in samples]
        cpus = [(x[b][1] - x[a][1]) * 1000 for x in samples if x[a][2] is not None and x[a][2] == x[b][2]]
        at = [(x[b][0] - x["sent"][0]) * 1000 for x in samples]
        out.append({"step": f"{a} → {b}", "median_ms": statistics.median(walls), "p95_ms": percentile(walls, 95),
                    "cpu_ms": statistics.median(cpus) if len(cpus) == len(samples) else None,
                    "at_ms": statistics.median(at)})
    return out


def measure(stack: Stack, redis_client, redis_server: RedisServer, samples: int) -> dict:
    status, session = stack.call("POST", "/api/sessions", {})
    if status != 201:
        raise RuntimeError(f"POST /api/sessions: {status} {session}")
    cell_run(stack, session, "x = 1\n")  # the session's runner started
    with stack.session_socket(session) as socket:
        return _measure(stack, redis_client, redis_server, samples, session, socket)


def _measure(stack: Stack, redis_client, redis_server: RedisServer, samples: int, session: dict, socket) -> dict:
    kinds = {"print(1)": lambda: page_run(stack, PRINT), "small jit": lambda: page_run(stack, JIT),
             "cell": lambda: cell_run(stack, session, CELL), "cell (socket)": lambda: socket_cell_run(socket, CELL)}
    for run in kinds.values():  # warm: the pool, the compile cache, the web side
        for _ in range(3):
            run()
    # The compile jobs the warm-up's runs left (the small jit's modules, compiled for the node's
    # cache while it is idle) done: each sample is a person's next run of the same code, which
    # loads them, rather than racing the job for the node.
    settle(stack, redis_server)
    runs: dict[str, list[dict]] = {k: [] for k in kinds}
    cpu: dict[str, dict[str, float]] = {k: {} for k in kinds}
    for i in range(samples):
        print(f"  sample {i + 1}/{samples}", flush=True)
        for kind, run in kinds.items():
            wait_pool_full(stack.url)
            before = cpu_by_process(stack, redis_server)
            run_id, client = run()
            runs[kind].append(collect(redis_client, run_id, client))
            after = cpu_by_process(stack, redis_server)
            for name in before:
                cpu[kind][name] = cpu[kind].get(name, 0.0) + (after[name] - before[name]) * 1000 / samples
    stack.call("DELETE", session["url"])
    out = {}
    for kind in kinds:
        totals = [(x["finished"][0] - x["sent"][0]) * 1000 for x in runs[kind]]
        cpu[kind]["all"] = sum(cpu[kind].values())
        out[kind] = {"steps": steps(runs[kind], CELL_PATH if kind == "cell" else PATH),
                     "total_median_ms": statistics.median(totals), "total_p95_ms": percentile(totals, 95),
                     "cpu_ms_per_run": cpu[kind], "n": len(totals)}
    return out


def flames(stack: Stack, redis_server: RedisServer, count: int, folder: Path) -> dict[str, str]:
    """py-spy on web, recorder and executor during a burst of ``count`` print(1) from pages."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise RuntimeError("py-spy is needed for --flames (requirements/dev.txt)")
    folder.mkdir(parents=True, exist_ok=True)
    settle(stack, redis_server)
    spies = {}
    for name in ("web", "recorder", "executor"):
        svg = folder / f"{name}.svg"
        spies[name] = (svg, subprocess.Popen(
            [spy, "record", "--pid", str(stack.procs[name].pid), "--rate", "200", "--output", str(svg),
             "--format", "flamegraph", "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    time.sleep(1.0)  # py-spy attached
    result = asyncio.run(burst(stack.url, count, PRINT, sockets=True))
    time.sleep(2.0)  # the recorder's last batches
    written = {}
    for name, (svg, proc) in spies.items():
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        if svg.exists():
            written[name] = str(svg.relative_to(ROOT) if svg.is_relative_to(ROOT) else svg)
        else:
            print(f"  py-spy on {name} wrote nothing: {err.decode()[-500:]}", file=sys.stderr)
    print(f"  flame graphs of a burst of {count} print(1) ({result['runs_per_s']:.1f} runs/s): "
          + ", ".join(written.values()))
    return written


def figures(results: dict) -> dict[str, float]:
    """The figures recorded in docs/BENCHMARKS.md and compared against."""
    out = {}
    for kind, r in results.items():
        if kind not in KINDS:
            continue
        out[f"{kind} total median ms"] = r["total_median_ms"]
        out[f"{kind} total p95 ms"] = r["total_p95_ms"]
        for s in r["steps"]:
            out[f"{kind} {s['step']} median ms"] = s["median_ms"]
        for name, ms in r["cpu_ms_per_run"].items():
            out[f"{kind} CPU {name} ms"] = ms
    if "burst" in results:
        out["burst runs/s"] = results["burst"]["runs_per_s"]
        for name, ms in results["burst"]["cpu_ms_per_run"].items():
            out[f"burst CPU {name} ms"] = ms
    return out


def report(results: dict) -> None:
    for kind in KINDS:
        r = results[kind]
        print(f"\n{kind}: sent → finished median {beside(BENCH, f'{kind} total median ms', r['total_median_ms'])}, "
              f"p95 {beside(BENCH, f'{kind} total p95 ms', r['total_p95_ms'])} ({r['n']} runs)")
        print(f"  {'step':<26} {'at ms':>7} {'median ms':>10} {'p95 ms':>8} {'CPU ms':>7}   recorded median")
        for s in r["steps"]:
            cpu = f"{s['cpu_ms']:7.2f}" if s["cpu_ms"] is not None else f"{'-':>7}"
            print(f"  {s['step']:<26} {s['at_ms']:7.1f} {s['median_ms']:10.2f} {s['p95_ms']:8.2f} {cpu}   "
                  f"{beside(BENCH, f'{kind} {s['step']} median ms', s['median_ms'], 2)}")
        print("  CPU ms per run: " + ", ".join(f"{name} {beside(BENCH, f'{kind} CPU {name} ms', ms)}"
                                               for name, ms in r["cpu_ms_per_run"].items()))
    if "burst" in results:
        b = results["burst"]
        print(f"\nburst of {b['count']} print(1) from pages: {beside(BENCH, 'burst runs/s', b['runs_per_s'])} runs/s, "
              f"{b['statuses']}")
        print("  CPU ms per run: " + ", ".join(f"{name} {beside(BENCH, f'burst CPU {name} ms', ms)}"
                                               for name, ms in b["cpu_ms_per_run"].items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--burst", type=int, default=200, help="print(1) at once for the CPU per run (0: none)")
    parser.add_argument("--flames", type=Path, help="a folder for py-spy's flame graphs of a burst")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", action="store_true", help="print the block that records these figures")
    args = parser.parse_args()
    import redis

    results: dict = {"samples": args.samples}
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            with own_stack("stages", redis_url=server.url, RUN_STAGE_TIMES="1") as stack:
                stack.wait_online()
                client = redis.Redis.from_url(server.url)
                asyncio.run(socket_run(stack.url, PRINT))
                results.update(measure(stack, client, server, args.samples))
                if args.burst:
                    results["burst"] = measured_burst(stack, server, args.burst, PRINT, True)
                if args.flames:
                    results["flames"] = flames(stack, server, args.burst or 200, args.flames)
        finally:
            server.stop()
    report(results)
    if args.record:
        print("\n" + table(BENCH, figures(results), 2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
