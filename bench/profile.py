"""Profiled runs: what a profile costs a run and what it weighs, on the playground's own stack
(daphne, its own Redis, the recorder, one CPU executor with its 8 simulated devices, SQLite), as a
script uses the API (POST /api/runs, the run's websocket, the profile's URL); and the Timeline
pane's drawing of 100,000 events in Chromium (bench/profile_page.py), in one run.

    .venv/bin/python -m bench.profile [--samples 5] [--no-page] [--json out.json]

1. **Overhead.** The gallery's pmap and shard_map examples (playground/examples/07, 08), each
   sample run plain and profiled, interleaved (plain, profiled, plain, ...), after a warm-up of
   each that left their modules in the node's compile cache: the run's own wall clock and CPU
   seconds (its ``finished``: the sandbox's counters, so the profiler's work while the code runs
   is in them; the run ends with its code, and the profiler is stopped after), and from the POST
   to ``finished`` on the socket. Medians, and profiled / plain; and
   how long after ``finished`` the trace, built by the node after the run, was ready at its URL.
2. **Weight.** Each profiled run's trace: its compressed bytes (what the URL sends), uncompressed
   bytes, events, lanes, and how long after the run's end it was ready (the profiler stops after
   the run has ended); the time to GET it from the URL once recorded (from the database).
3. **The page** (``--no-page`` skips it): bench.profile_page's time to first draw and frame times
   while panning a synthetic 100,000-event trace over 8 devices in the Timeline pane.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.recorded import beside
from bench.stack import ROOT, RedisServer, Stack, own_stack

BENCH = "bench.profile"
EXAMPLES = {"pmap": "07-pmap.py", "shard_map": "08-shard-map.py"}


def example(name: str) -> str:
    return (ROOT / "playground" / "examples" / EXAMPLES[name]).read_text()


def one_run(stack: Stack, code: str, profile: bool) -> dict:
    t0 = time.perf_counter()
    status, run = stack.post("/api/runs", {"code": code, **({"options": {"profile": True}} if profile else {})})
    if status != 201:
        raise RuntimeError(f"POST /api/runs: {status} {run}")
    watched = stack.watch(run["id"], timeout=180)
    finished_at = time.perf_counter()
    end_to_end = (finished_at - t0) * 1000
    finished = watched.finished
    if finished is None or finished["status"] != "succeeded":
        raise RuntimeError(f"run {run['id']} did not succeed: {watched.events[-3:]}")
    out = {"id": run["id"], "wall_ms": finished["wall_ms"], "cpu_ms": finished["cpu_ms"], "end_to_end_ms": end_to_end}
    if profile:
        event = next(e for e in watched.events if e["type"] == "profile")
        if event.get("error"):
            raise RuntimeError(f"run {run['id']}'s profile failed: {event['error']}")
        keys = ("url", "bytes", "raw_bytes", "events", "lanes", "profile_ms", "cut")
        out["profile"] = {k: event.get(k) for k in keys}
        if event.get("building"):
            out["profile"].update(ready(stack, event["url"], finished_at))
    return out


def ready(stack: Stack, url: str, finished_at: float) -> dict:
    """A trace built after its run's end: polled until its URL answers it (202 until then); how
    long after ``finished`` reached the socket, and what it holds."""
    while True:
        status, _, body = stack.profile(url)
        if status != 202:
            break
        time.sleep(0.05)
    ready_ms = (time.perf_counter() - finished_at) * 1000
    if status != 200:
        raise RuntimeError(f"GET {url}: {status} {body[:300]!r}")
    trace = json.loads(gzip.decompress(body))
    return {"ready_ms": ready_ms, "bytes": len(body), "raw_bytes": len(gzip.decompress(body)),
            "events": sum(1 for e in trace["traceEvents"] if e["ph"] == "X"),
            "lanes": [e["args"]["name"] for e in trace["traceEvents"]
                      if e["ph"] == "M" and e["name"] == "process_name"],
            "cut": trace["otherData"].get("cut")}


def fetch_trace(stack: Stack, run: dict) -> dict:
    """GET the trace as a browser does (gzip on the wire), once the recorder stored it."""
    stack.wait_finished(run["id"], timeout=60)
    t0 = time.perf_counter()
    status, _, body = stack.profile(run["profile"]["url"])
    got_ms = (time.perf_counter() - t0) * 1000
    if status != 200:
        raise RuntimeError(f"GET {run['profile']['url']}: {status}")
    trace = json.loads(gzip.decompress(body))
    devices = sum(1 for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_labels")
    return {"get_ms": got_ms, "sent_bytes": len(body), "device_lanes": devices}


def overhead(stack: Stack, samples: int) -> dict:
    out = {}
    for name in EXAMPLES:
        code = example(name)
        for profile in (False, True):  # warm: the pool, the compile cache
            one_run(stack, code, profile)
        plain, profiled = [], []
        for i in range(samples):
            print(f"  {name}: sample {i + 1}/{samples}", flush=True)
            plain.append(one_run(stack, code, False))
            profiled.append(one_run(stack, code, True))
        fetched = [fetch_trace(stack, run) for run in profiled]
        out[name] = {"plain": plain, "profiled": profiled, "fetched": fetched}
    return out


def med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def report(results: dict) -> None:
    print("\nOverhead (medians; the run's own wall clock and CPU, and POST to finished on its socket), "
          "each beside the figure docs/BENCHMARKS.md records")
    print(f"{'example':<10} {'':<9} {'wall ms':>30} {'cpu ms':>30} {'POST→end ms':>30}")
    for name, r in results.items():
        for label in ("plain", "profiled"):
            rows = r[label]
            print(f"{name:<10} {label:<9} " + " ".join(
                f"{beside(BENCH, f'{name} {label} {key}', med(rows, key), 0):>30}"
                for key in ("wall_ms", "cpu_ms", "end_to_end_ms")))
        print(f"{name:<10} {'ratio':<9} " + " ".join(
            f"{beside(BENCH, f'{name} ratio {key}', med(r['profiled'], key) / med(r['plain'], key), 2):>30}"
            for key in ("wall_ms", "cpu_ms", "end_to_end_ms")))
        built = [run["profile"]["ready_ms"] for run in r["profiled"] if "ready_ms" in run["profile"]]
        if built:
            print(f"{name:<10} the trace ready after finished: median "
                  f"{beside(BENCH, f'{name} trace ready ms', statistics.median(built), 0)} ms, "
                  f"the longest {max(built):.0f} ms")
    print("\nThe trace (medians of the profiled runs)")
    print(f"{'example':<10} {'gzip KiB':>9} {'raw KiB':>9} {'events':>8} {'lanes':>6} {'ready ms':>9} {'GET ms':>7}")
    for name, r in results.items():
        p = [run["profile"] for run in r["profiled"]]
        print(f"{name:<10} {statistics.median(x['bytes'] for x in p) / 1024:>9.0f} "
              f"{statistics.median(x['raw_bytes'] for x in p) / 1024:>9.0f} "
              f"{statistics.median(x['events'] for x in p):>8.0f} {len(p[0]['lanes']):>6} "
              f"{statistics.median(x['ready_ms'] for x in p):>9.0f} {med(r['fetched'], 'get_ms'):>7.1f}")
    print("(ready ms: from the run's finished on its socket to its trace at its URL: the profiler stopped after "
          "the run's end, its raw profile handed over, the trace built)")


def recorded_table(results: dict) -> str:
    from bench.recorded import table

    figures = {}
    for name, r in results.items():
        for key in ("wall_ms", "cpu_ms", "end_to_end_ms"):
            for label in ("plain", "profiled"):
                figures[f"{name} {label} {key}"] = med(r[label], key)
            figures[f"{name} ratio {key}"] = med(r["profiled"], key) / med(r["plain"], key)
        built = [run["profile"]["ready_ms"] for run in r["profiled"] if "ready_ms" in run["profile"]]
        if built:
            figures[f"{name} trace ready ms"] = statistics.median(built)
    return table(BENCH, figures, 2)


def page() -> dict | None:
    """bench.profile_page in its own process (Chromium), its JSON."""
    done = subprocess.run([sys.executable, "-m", "bench.profile_page", "--json"], cwd=ROOT, capture_output=True,
                          text=True)
    if done.returncode != 0:
        print(f"  bench.profile_page failed: {done.stderr[-2000:]}", file=sys.stderr)
        return None
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    from bench.profile_page import report as page_report

    print("\nThe Timeline pane, 100,000 events over 8 devices in Chromium")
    page_report(summary)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--no-page", action="store_true", help="skip the Timeline pane's measurement")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", action="store_true", help="print the block that records these figures")
    args = parser.parse_args()
    out: dict = {"samples": args.samples}
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        redis = RedisServer(Path(tmp))
        redis.start()
        try:
            # A wall clock of 120 s: a loaded machine must not time a profiled run out.
            with own_stack("profile", redis_url=redis.url, EXECUTOR_CONCURRENCY="1", RUN_WALL_S="120") as stack:
                info = stack.wait_online()
                out["stack"] = {"sandbox": stack.env["EXECUTOR_SANDBOX"], "jax": info.get("jax_version")}
                out["runs"] = overhead(stack, args.samples)
        finally:
            redis.stop()
    report(out["runs"])
    if args.record:
        print("\n" + recorded_table(out["runs"]))
    if not args.no_page:
        out["page"] = page()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
