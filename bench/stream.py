"""The live stream through daphne: how fast one websocket delivers, what open sockets cost, and
how long a Redis restart keeps runs away.

    python -m bench.stream                    # starts its own stack and its own redis-server
    python -m bench.stream --sockets 1000 --json var/bench-stream.json

It starts a stack of its own (SQLite in a temporary folder, a redis-server on a free port that
it can restart, one CPU executor) with the per-run event rate raised, so that the websocket and
not the runner's budget is what is measured, and the per-client socket cap raised to allow
``--sockets`` from this one client. Every figure comes from real sockets to daphne.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from websockets.asyncio.client import connect

from bench.stack import RedisServer, Stack, own_stack

MANY_EVENTS = """\
import os
# The event pipe: the one descriptor beyond stdio that is a pipe.
fd = next(int(f) for f in sorted(os.listdir("/proc/self/fd"), key=int)
          if int(f) > 2 and os.readlink("/proc/self/fd/" + f).startswith("pipe:"))
line = b'{"type": "timing", "kind": "single", "label": "t", "mean_ms": 1.0}\\n'
for i in range(0, %d, 100):
    os.write(fd, line * 100)
"""
FLOOD = "import sys\nchunk = 'y' * 65536\nfor _ in range(%d):\n    sys.stdout.write(chunk)\n"
QUIET = "import time\nprint('waiting', flush=True)\ntime.sleep(%d)\n"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def run_and_watch(stack: Stack, code: str) -> tuple[str, dict, float]:
    status, created = stack.post("/api/runs", {"code": code})
    assert status == 201, created
    t0 = time.monotonic()
    watched = stack.watch(created["id"], timeout=300)
    return created["id"], watched, time.monotonic() - t0


def delivery(stack: Stack, events: int, flood_mib: int) -> dict:
    out = {}
    run_id, live, live_s = run_and_watch(stack, MANY_EVENTS % events)
    assert live.finished["status"] == "succeeded", live.finished
    replay_s = []
    for _ in range(3):
        t0 = time.monotonic()
        again = stack.watch(run_id, timeout=300)
        replay_s.append(time.monotonic() - t0)
        assert len(again.events) == len(live.events)
    n = len(live.events)
    out["events"] = {"count": n, "live_s": live_s, "live_events_per_s": n / live_s,
                     "replay_s": statistics.median(replay_s), "replay_events_per_s": n / statistics.median(replay_s)}
    print(f"  {n} events: live {n / live_s:,.0f} events/s (the runner writing them), "
          f"replay of the finished run {n / statistics.median(replay_s):,.0f} events/s (median of 3)", flush=True)

    run_id, flood, flood_s = run_and_watch(stack, FLOOD % (flood_mib * 16))
    assert flood.finished["status"] == "succeeded", flood.finished
    size = len(flood.text().encode())
    replay = []
    for _ in range(3):
        t0 = time.monotonic()
        again = stack.watch(run_id, timeout=300)
        replay.append(time.monotonic() - t0)
    out["flood"] = {"bytes": size, "messages": flood.messages, "largest_message": flood.largest,
                    "live_s": flood_s, "live_mib_per_s": size / 2**20 / flood_s,
                    "replay_s": statistics.median(replay), "replay_mib_per_s": size / 2**20 / statistics.median(replay)}
    print(f"  flood of {size / 2**20:.0f} MiB in {flood.messages} messages (largest {flood.largest / 1024:.0f} KiB): "
          f"live {out['flood']['live_mib_per_s']:.1f} MiB/s, replay {out['flood']['replay_mib_per_s']:.1f} MiB/s",
          flush=True)
    return out


async def hold_sockets(stack: Stack, run_ids: list[str], n: int, hold: bool) -> dict:
    """Open n sockets over run_ids; with hold, keep them open (running runs) and sample."""
    web = stack.procs["web"].pid
    before = rss_mib(web)
    peak = [before]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mib(web))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    held = asyncio.Event()
    ready = [0]

    opening = asyncio.Semaphore(100)  # handshakes at once: a crowd, not one burst of SYNs

    async def one(i: int):
        async with opening:
            ws = await connect(f"{stack.ws_url}/ws/runs/{run_ids[i % len(run_ids)]}/", open_timeout=120,
                               max_size=2**20)
        async with ws:
            if hold:
                await ws.recv()  # the socket is open and following its run
                ready[0] += 1
                await held.wait()
            else:
                async for _ in ws:
                    pass

    t0 = time.monotonic()
    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    if hold:
        while ready[0] < n:
            if any(t.done() and t.exception() for t in tasks):
                raise next(t.exception() for t in tasks if t.done() and t.exception())
            await asyncio.sleep(0.1)
        await asyncio.sleep(1)
        during = rss_mib(web)
        redis_clients = stack_redis.clients()
        held.set()
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - t0
    stop.set()
    sampler.join()
    out = {"sockets": n, "rss_before_mib": before, "rss_peak_mib": peak[0], "seconds": elapsed}
    if hold:
        out.update(rss_held_mib=during, redis_clients_while_held=redis_clients)
    return out


stack_redis: RedisServer


def sockets_cost(stack: Stack, n: int) -> dict:
    out = {}
    finished = []
    for _ in range(4):
        status, created = stack.post("/api/runs", {"code": "for i in range(20):\n    print(i)\n"})
        finished.append(created["id"])
    for run_id in finished:
        stack.wait_finished(run_id)
    base_clients = stack_redis.clients()
    running = []
    for _ in range(2):
        status, created = stack.post("/api/runs", {"code": QUIET % 90})
        running.append(created["id"])
    time.sleep(3)
    out["running"] = asyncio.run(hold_sockets(stack, running, n, hold=True))
    r = out["running"]
    out["running"]["redis_clients_before"] = base_clients
    print(f"  {n} sockets held open on running runs: daphne RSS {r['rss_before_mib']:.0f} → "
          f"{r['rss_held_mib']:.0f} MiB "
          f"({(r['rss_held_mib'] - r['rss_before_mib']) * 1024 / n:.0f} KiB a socket); Redis clients of the whole "
          f"stack {base_clients} before, {r['redis_clients_while_held']} while held", flush=True)
    for run_id in running:
        stack.post(f"/api/runs/{run_id}/cancel", {})
    out["finished"] = asyncio.run(hold_sockets(stack, finished, n, hold=False))
    f = out["finished"]
    print(f"  {n} sockets on finished runs (each gets its replay, then the server closes it): daphne RSS "
          f"{f['rss_before_mib']:.0f} → peak {f['rss_peak_mib']:.0f} MiB, all done in {f['seconds']:.1f} s", flush=True)

    return out


def redis_restart(stack: Stack, own: RedisServer, tries: int = 3) -> dict:
    times = []
    for _ in range(tries):
        stack.wait_online()
        own.restart()
        t0 = time.monotonic()
        while True:
            try:
                status, created = stack.post("/api/runs", {"code": "print('back')"})
            except OSError:
                status = None
            if status == 201:
                finished = stack.wait_finished(created["id"], timeout=120)
                if finished["status"] == "succeeded":
                    break
            time.sleep(0.1)
        times.append(time.monotonic() - t0)
        print(f"  Redis restarted: first successful run {times[-1]:.1f} s later", flush=True)
    return {"seconds": times, "median_s": statistics.median(times)}


def main() -> int:
    global stack_redis
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--flood-mib", type=int, default=32)
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-stream-redis-") as tmp:
        stack_redis = RedisServer(Path(tmp))
        stack_redis.start()
        try:
            # The per-run event budget raised, so that the websocket is what is measured.
            with own_stack("stream", redis_url=stack_redis.url, WATCHDOG_EVERY_S=1, RUN_WALL_S=120,
                           RUN_OUTPUT_KB=64 * 1024, RUN_MAX_EVENTS=100_000, RUN_EVENTS_PER_S=100_000,
                           WS_MAX_PER_CLIENT=args.sockets + 100) as stack:
                info = stack.wait_online()
                print(f"stack: sandbox {stack.env['EXECUTOR_SANDBOX']}, JAX {info['jax_version']}", flush=True)
                print("one websocket, through daphne:", flush=True)
                results["delivery"] = delivery(stack, args.events, args.flood_mib)
                print("open sockets:", flush=True)
                results["sockets"] = sockets_cost(stack, args.sockets)
                print("Redis restart:", flush=True)
                results["redis_restart"] = redis_restart(stack, stack_redis)
        finally:
            stack_redis.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
