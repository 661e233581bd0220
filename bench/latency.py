"""End-to-end latency of runs through the public API, as a browser sees it.

    python -m bench.latency                      # starts its own stack, warm pool then cold
    python -m bench.latency --url http://127.0.0.1:8000 --runs 50
    python -m bench.latency --burst 200          # also: 200 print(1) submitted at once

Each sample is the time from sending ``POST /api/runs`` to receiving the run's ``finished``
event on its websocket (and, apart, to its first ``stdout``), measured over loopback against
the real stack: daphne, Redis, the recorder and an executor with its sandbox.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

import websockets

from bench.stack import own_stack

SNIPPETS = {
    "print(1)": "print(1)\n",
    "small jit": (
        "import jax, jax.numpy as jnp\n"
        "f = jax.jit(lambda x: x * 2 + 1)\n"
        "print(f(jnp.arange(3)))\n"
    ),
}


def post_run(url: str, code: str) -> dict:
    req = urllib.request.Request(f"{url}/api/runs", data=json.dumps({"code": code}).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


async def one_run(url: str, code: str) -> dict:
    t0 = time.perf_counter()
    run = await asyncio.to_thread(post_run, url, code)
    async with websockets.connect(url.replace("http", "ws", 1) + run["ws"], max_size=None,
                                  origin=url, open_timeout=60) as ws:
        return await _until_finished(ws, t0, f"run {run['id']}")


async def _until_finished(ws, t0: float, what: str) -> dict:
    """Read a run's events off ``ws`` to its ``finished``: the times since ``t0``."""
    first_output = None
    async for message in ws:
        event = json.loads(message)
        if event["type"] == "refused":
            raise RuntimeError(f"refused: {event}")
        if event["type"] == "stdout" and first_output is None:
            first_output = time.perf_counter() - t0
        if event["type"] == "finished":
            return {"total_ms": (time.perf_counter() - t0) * 1000,
                    "first_output_ms": (first_output or 0) * 1000,
                    "status": event["status"], "run_wall_ms": event.get("wall_ms")}
    raise RuntimeError(f"{what}: the socket closed before finished")


async def open_run_socket(url: str, client: str | None = None):
    """The socket a page keeps open for its next run (``/ws/runs/new/``)."""
    headers = {"X-Forwarded-For": client} if client else None
    return await websockets.connect(url.replace("http", "ws", 1) + "/ws/runs/new/", max_size=None,
                                    open_timeout=60, additional_headers=headers)


async def socket_run(url: str, code: str, ws=None) -> dict:
    """A run started on a run socket, as the page starts one: from sending the code on the
    socket, opened ahead (``ws``; opened here, before the clock starts, when not given), to the
    run's ``finished`` on that same socket."""
    ws = ws or await open_run_socket(url)
    async with ws:
        t0 = time.perf_counter()
        await ws.send(json.dumps({"op": "start", "code": code}))
        return await _until_finished(ws, t0, "the run socket")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summarise(samples: list[dict], key: str) -> dict:
    values = [s[key] for s in samples]
    return {"median": statistics.median(values), "p95": percentile(values, 95),
            "min": min(values), "max": max(values), "n": len(values)}


def wait_pool_full(url: str, timeout: float = 30) -> None:
    """Until every executor's warm pool is full again (instant with the pool disabled)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{url}/api/devices", timeout=10) as r:
            cpu = next(d for d in json.load(r)["devices"] if d["kind"] == "cpu")
        if cpu["warm_runners"] >= cpu["pool_size"]:
            return
        time.sleep(0.05)


async def sequential(url: str, code: str, runs: int, warmup: int = 3) -> list[dict]:
    """One run at a time, each once the pool has refilled: the latency a user sees when the
    playground is not overloaded. (--burst measures it overloaded.)"""
    for _ in range(warmup):
        await one_run(url, code)
    samples = []
    for _ in range(runs):
        await asyncio.to_thread(wait_pool_full, url)
        samples.append(await one_run(url, code))
    bad = [s for s in samples if s["status"] != "succeeded"]
    if bad:
        raise RuntimeError(f"{len(bad)} runs did not succeed: {bad[:3]}")
    return samples


async def burst(url: str, count: int, code: str = "print(1)\n", sockets: bool = False) -> dict:
    """``count`` runs of ``code`` sent at once; ``elapsed_s`` is when the last one finished.
    ``sockets``: each started as a page starts it, on a run socket opened beforehand (all
    opened before the clock starts), else POSTed and followed on a socket of its own."""
    opened = await asyncio.gather(*(open_run_socket(url) for _ in range(count))) if sockets else None
    t0 = time.perf_counter()
    results = await asyncio.gather(*(socket_run(url, code, opened[i]) if sockets else one_run(url, code)
                                     for i in range(count)), return_exceptions=True)
    elapsed = time.perf_counter() - t0
    ok = [r for r in results if isinstance(r, dict)]
    statuses: dict[str, int] = {}
    for r in results:
        key = r["status"] if isinstance(r, dict) else f"error: {type(r).__name__}"
        statuses[key] = statuses.get(key, 0) + 1
    return {"count": count, "elapsed_s": elapsed, "runs_per_s": count / elapsed,
            "statuses": statuses, "latency": summarise(ok, "total_ms") if ok else None}


def measure(url: str, runs: int) -> dict:
    out = {}
    for label, code in SNIPPETS.items():
        samples = asyncio.run(sequential(url, code, runs))
        out[label] = {"total": summarise(samples, "total_ms"),
                      "first_output": summarise(samples, "first_output_ms")}
        t = out[label]["total"]
        print(f"  {label:10} POST→finished median {t['median']:7.1f} ms   p95 {t['p95']:7.1f} ms"
              f"   (first output median {out[label]['first_output']['median']:.1f} ms, n={t['n']})",
              flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a running playground; default: start one")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--burst", type=int, default=0, help="also submit this many print(1) at once")
    parser.add_argument("--no-cold", action="store_true", help="skip the pool-disabled pass")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()

    results: dict = {}
    if args.url:
        print(f"against {args.url}", flush=True)
        results["given"] = measure(args.url, args.runs)
        if args.burst:
            results["burst"] = asyncio.run(burst(args.url, args.burst))
    else:
        with own_stack("latency") as stack:
            info = stack.wait_online()
            print(f"stack: sandbox {stack.env['EXECUTOR_SANDBOX']}, {info['slots']} slots, "
                  f"JAX {info['jax_version']}", flush=True)
            print(f"warm pool (EXECUTOR_POOL_SIZE={info['pool_size']}):", flush=True)
            results["warm"] = measure(stack.url, args.runs)
            if args.burst:
                results["burst"] = asyncio.run(burst(stack.url, args.burst))
                b = results["burst"]
                print(f"  burst of {b['count']}: {b['runs_per_s']:.1f} runs/s, statuses {b['statuses']}, "
                      f"p95 {b['latency']['p95']:.0f} ms", flush=True)
            if not args.no_cold:
                stack.kill("executor")
                stack.start_executor(EXECUTOR_POOL_SIZE=0)
                time.sleep(16)  # let the killed worker's heartbeat age out
                stack.wait_online(warm=False)
                print("pool disabled (EXECUTOR_POOL_SIZE=0, every run starts cold):", flush=True)
                results["cold"] = measure(stack.url, args.runs)
                for label in SNIPPETS:
                    ratio = results["cold"][label]["total"]["median"] / results["warm"][label]["total"]["median"]
                    print(f"  {label}: warm is {ratio:.1f}x faster than cold (medians)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
