"""Where one `print(1)` spends its time, when nothing else runs.

    .venv/bin/python -m bench.timeline [--runs 27] [--database-url postgres://…]    the page's path
    .venv/bin/python -m bench.timeline --runner [--runs 20]                        the runner alone (root)

**The page's path** (default): the benchmarks' own stack (`bench.stack.own_stack`: SQLite unless
``--database-url`` names an empty PostgreSQL database, which is migrated first), one client, a run
socket opened before each run as the page opens it, 0.3 s between runs once the pool is full.
For each event: when its maker (the web side for ``queued``, the executor for the rest) stamped
it (``ts``), and when the client had it (``recv``), in ms after the code was sent; medians.

**The runner alone** (``--runner``): runners forked from the template by the fork launcher and
driven by the supervisor, as a worker drives them, without Celery, Redis or the web side. For each
run: when the supervisor saw the runner's output and events, in ms after it took the run; the CPU
the run's cgroup counted (the runner, from its fork to its exit); and the CPU the whole machine
spent per run (``/proc/stat``: the template's fork, the supervisor, the kernel's threads too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time

CODE = "print(1)\n"


def _medians(rows: list[dict]) -> list[tuple[str, float]]:
    keys = {k for row in rows for k in row}
    medians = [(k, statistics.median(row[k] for row in rows if k in row)) for k in keys]
    return sorted(medians, key=lambda kv: kv[1])


async def _page_run(url: str) -> dict:
    from bench.latency import open_run_socket

    ws = await open_run_socket(url)
    async with ws:
        t0, p0 = time.time(), time.perf_counter()
        await ws.send(json.dumps({"op": "start", "code": CODE}))
        marks: dict[str, float] = {}
        while True:
            message = json.loads(await ws.recv())
            kind = message.get("type")
            marks.setdefault(f"recv {kind}", (time.perf_counter() - p0) * 1000)
            if "ts" in message:
                marks.setdefault(f"ts {kind}", (message["ts"] - t0) * 1000)
            if kind == "finished":
                assert message["status"] == "succeeded", message
                return marks


def page(runs: int, database_url: str | None) -> list[tuple[str, float]]:
    from bench.latency import wait_pool_full
    from bench.stack import own_stack

    extra = {"DATABASE_URL": database_url} if database_url else {}
    with own_stack("timeline", **extra) as stack:
        stack.wait_online()
        rows = []
        for i in range(runs + 3):
            wait_pool_full(stack.url)
            time.sleep(0.3)
            marks = asyncio.run(_page_run(stack.url))
            if i >= 3:  # the first runs warm the web side
                rows.append(marks)
    return _medians(rows)


def _machine_cpu_ms() -> float:
    fields = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) * 1000 / 100  # all but idle and iowait, in ticks of 10 ms


def runner(runs: int, lean: bool = False) -> list[tuple[str, float]]:
    from executor import supervisor
    from executor.sandbox import Limits, get_launcher

    limits = Limits(wall_s=30.0)
    launcher = get_launcher("fork", limits=limits, uid_base=61700, cpu_devices=8)
    marks: dict[str, float] = {}
    t0 = [0.0]

    def mark(name: str) -> None:
        marks.setdefault(name, (time.perf_counter() - t0[0]) * 1000)

    on_output, on_event_bytes = supervisor.Supervision.on_output, supervisor.Supervision.on_event_bytes

    def seen_output(self, kind, data):
        mark(f"{kind} read")
        return on_output(self, kind, data)

    def seen_event(self, data):
        found = re.search(rb'"type": ?"(\w+)"', data)
        mark(f"{found.group(1).decode() if found else 'event'} read")
        return on_event_bytes(self, data)

    supervisor.Supervision.on_output, supervisor.Supervision.on_event_bytes = seen_output, seen_event
    rows = []
    try:
        for i in range(runs + 2):
            runner = supervisor.Runner(proc=launcher.start(0, lean=lean), slot=0)
            supervisor.wait_ready(runner, 120)
            time.sleep(0.05)  # as a runner waits in the pool
            if i == 2:
                machine_at = _machine_cpu_ms()
            marks.clear()
            t0[0] = time.perf_counter()
            supervisor.supervise(runner, launcher, {"code": CODE, "options": {}}, limits,
                                 lambda type_, **fields: mark(f"{type_} sent"))
            mark("supervise returned")
            cgroup_ms = (launcher.cpu_seconds(runner.proc) or 0) * 1000
            launcher.cleanup(runner.proc)
            runner.close()
            mark("cleaned up")
            if i >= 2:  # the first runs warm the template
                rows.append({**marks, "CPU of the run's cgroup": cgroup_ms})
        machine_ms = (_machine_cpu_ms() - machine_at) / runs
    finally:
        supervisor.Supervision.on_output, supervisor.Supervision.on_event_bytes = on_output, on_event_bytes
        launcher.close()
    return [*_medians(rows), ("CPU of the machine per run", machine_ms)]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.timeline", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=27)
    parser.add_argument("--database-url", help="an empty PostgreSQL database (default: SQLite)")
    parser.add_argument("--runner", action="store_true", help="the runner alone, through the fork launcher")
    parser.add_argument("--lean", action="store_true", help="with --runner: a lean runner (numpy, no jax)")
    args = parser.parse_args()
    medians = runner(args.runs, args.lean) if args.runner else page(args.runs, args.database_url)
    for name, value in medians:
        print(f"{name:32s} {value:8.1f} ms")


if __name__ == "__main__":
    main()
