"""Runner throughput through the public API, the one-shot launcher against the fork launcher, in
one run: what a person pressing Run again and again, a burst, and a class see.

    .venv/bin/python -m bench.runners                       # both launchers, own stacks
    .venv/bin/python -m bench.runners --sandbox fork --burst 200 --json var/bench-runners.json

For each launcher it starts its own stack (SQLite, Redis database 14, one CPU executor with
EXECUTOR_CONCURRENCY slots and EXECUTOR_POOL_SIZE warm runners) and measures, with the client of
bench/latency.py (POST /api/runs, then the run's websocket until ``finished``):

- back to back: 40 ``print(1)``, each sent as soon as the previous one finished (no waiting for
  the pool to refill, as a person pressing Run again does);
- a class: 30 small ``jit`` snippets sent at once; the time until the last one finished;
- a burst: 200 ``print(1)`` sent at once; runs per second and how each ended.

Not a test: figures depend on the machine and its load; it prints the load with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from bench.latency import SNIPPETS, burst, one_run, summarise
from bench.stack import own_stack

LAUNCHERS = ("bwrap", "fork")


async def back_to_back(url: str, code: str, runs: int, warmup: int = 3) -> dict:
    for _ in range(warmup):
        await one_run(url, code)
    samples = [await one_run(url, code) for _ in range(runs)]
    statuses = sorted({s["status"] for s in samples})
    return {"total": summarise(samples, "total_ms"), "statuses": statuses}


def settle(max_s: float = 60.0) -> None:
    """Until the machine is quiet again (the 1-minute load under 1, or max_s): the stack's own
    start-up and the previous launcher's burst would otherwise be measured too."""
    deadline = time.monotonic() + max_s
    time.sleep(5)
    while os.getloadavg()[0] > 1.0 and time.monotonic() < deadline:
        time.sleep(1)


def measure(sandbox: str, args) -> dict:
    env = {"EXECUTOR_SANDBOX": sandbox, "EXECUTOR_POOL_SIZE": args.pool, "EXECUTOR_CONCURRENCY": args.concurrency}
    with own_stack(f"runners-{sandbox}", **env) as stack:
        info = stack.wait_online()
        settle()
        print(f"{sandbox}: {info['slots']} slots, pool {args.pool}, JAX {info['jax_version']}, "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        out: dict = {"slots": info["slots"], "pool": args.pool}
        b2b = asyncio.run(back_to_back(stack.url, SNIPPETS["print(1)"], args.runs))
        t = b2b["total"]
        print(f"  {args.runs} print(1) back to back: median {t['median']:.1f} ms, p95 {t['p95']:.1f} ms "
              f"({t['p95'] / t['median']:.1f}x the median), {b2b['statuses']}", flush=True)
        out["back_to_back"] = b2b
        time.sleep(2)
        cls = asyncio.run(burst(stack.url, args.jit, SNIPPETS["small jit"]))
        print(f"  {args.jit} small jit at once: last finished after {cls['elapsed_s']:.2f} s, "
              f"{cls['statuses']}", flush=True)
        out["class"] = cls
        time.sleep(2)
        b = asyncio.run(burst(stack.url, args.burst))
        print(f"  {args.burst} print(1) at once: {b['runs_per_s']:.1f} runs/s, {b['statuses']}, "
              f"p95 {b['latency']['p95']:.0f} ms", flush=True)
        out["burst"] = b
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandbox", choices=LAUNCHERS, action="append")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--jit", type=int, default=30)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--pool", default=os.environ.get("EXECUTOR_POOL_SIZE", "4"))
    parser.add_argument("--concurrency", default=os.environ.get("EXECUTOR_CONCURRENCY", "2"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {sandbox: measure(sandbox, args) for sandbox in args.sandbox or LAUNCHERS}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
