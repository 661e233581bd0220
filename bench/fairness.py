"""Fair shares under a flood, through the public API: does one client's burst make another wait?

    python -m bench.fairness                 # its own stack, two executor workers

Two clients (two addresses, through X-Forwarded-For and one trusted proxy). The flooder submits
100 runs at once and, for every one refused with 429, waits the Retry-After it was given and
submits it again, until all 100 have run. Meanwhile the other submits 10 runs one by one, each
once the previous one finished. A run is half a second of work (``time.sleep(0.5)``). The
second client's wait is the time from its run's ``queued`` event to its ``started`` event (the
server's clock), against the same 10 runs with the flooder absent, and against the flood with
the fair shares turned off (a second stack). Every run must end ``succeeded``: runs lost, zero.
Fair shares as the defaults: both clients are signed out, so each is an address with
RUN_MAX_ACTIVE_PER_ADDRESS runs at once (twice a person's 4: 8); ``--per-address`` sets another.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

from bench.stack import Stack, own_stack

WORK = "import time\ntime.sleep(0.5)\nprint('done')\n"


def post(stack: Stack, client: str, code: str) -> tuple[int, dict, dict]:
    return stack.post_as(client, "/api/runs", {"code": code}, timeout=60)


def waited_ms(stack: Stack, run_id: str) -> tuple[float, str]:
    events = stack.watch(run_id, timeout=300).events
    ts = {e["type"]: e["ts"] for e in events if e["type"] in ("queued", "started")}
    return (ts["started"] - ts["queued"]) * 1000, events[-1]["status"]


def polite(stack: Stack, n: int, client: str = "198.51.100.2") -> list[float]:
    """n runs one by one; each one's wait in the queue (ms)."""
    waits = []
    for _ in range(n):
        status, run, headers = post(stack, client, WORK)
        while status == 429:
            time.sleep(int(headers.get("Retry-After", "1")))
            status, run, headers = post(stack, client, WORK)
        assert status == 201, run
        wait, end = waited_ms(stack, run["id"])
        assert end == "succeeded", end
        waits.append(wait)
    return waits


def flood(stack: Stack, n: int, out: dict, client: str = "198.51.100.1") -> None:
    """n runs at once; each refused one again after its Retry-After, until all ran."""
    done, refusals, lock = [], [0], threading.Lock()

    def one() -> None:
        while True:
            status, run, headers = post(stack, client, WORK)
            if status == 201:
                break
            assert status in (429, 503), run
            with lock:
                refusals[0] += 1
            time.sleep(int(headers.get("Retry-After", "1")))
        _, end = waited_ms(stack, run["id"])
        with lock:
            done.append(end)

    threads = [threading.Thread(target=one) for _ in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.update(runs=len(done), succeeded=done.count("succeeded"), refusals=refusals[0],
               wall_s=round(time.monotonic() - t0, 1))


def summary(waits: list[float]) -> dict:
    ordered = sorted(waits)
    return {"median_ms": round(statistics.median(ordered), 1),
            "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 1), "max_ms": round(ordered[-1], 1)}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fairness", description=__doc__.split("\n")[0])
    parser.add_argument("--flood", type=int, default=100)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--per-address", type=int, default=None,
                        help="runs at once per address signed out (default: the settings', twice a person's)")
    args = parser.parse_args()
    shares = {"RUN_MAX_ACTIVE_PER_CLIENT": "4", "RUN_QUEUE_MAX": "500",
              **({"RUN_MAX_ACTIVE_PER_ADDRESS": str(args.per_address)} if args.per_address is not None else {})}
    no_shares = {"RUN_MAX_ACTIVE_PER_CLIENT": "0", "RUN_QUEUE_MAX": "0"}
    measured = {}
    for label, quotas in (("fair shares on", shares), ("fair shares off", no_shares)):
        with own_stack("fairness", TRUSTED_PROXIES="1", RUN_BUDGET_S_PER_HOUR="0", RUN_BUDGET_S_PER_DAY="0",
                       **quotas) as stack:
            stack.start_executor("executor2")
            deadline = time.monotonic() + 120
            while stack.get("/api/devices")["devices"][0].get("workers", 1) < 2 and time.monotonic() < deadline:
                time.sleep(0.5)
            if label == "fair shares on":
                measured["alone"] = polite(stack, args.runs, client="198.51.100.3")
            flooded: dict = {}
            flooder = threading.Thread(target=flood, args=(stack, args.flood, flooded))
            flooder.start()
            time.sleep(1.0)  # the flood is in
            measured[f"during the flood, {label}"] = polite(stack, args.runs)
            flooder.join()
            measured[f"flood, {label}"] = flooded
    results = {k: (summary(v) if isinstance(v, list) else v) for k, v in measured.items()}
    print(json.dumps(results, indent=2))
    print(f"\n| the second client's {args.runs} runs | median wait | p90 | max |\n|---|---:|---:|---:|")
    for label in ("alone", "during the flood, fair shares on", "during the flood, fair shares off"):
        r = results[label]
        print(f"| {label} | {r['median_ms']} ms | {r['p90_ms']} ms | {r['max_ms']} ms |")
    for label in ("fair shares on", "fair shares off"):
        f = results[f"flood, {label}"]
        print(f"\nflooder, {label}: {f['runs']} runs, {f['succeeded']} succeeded, {f['refusals']} refused "
              f"(429, retried after Retry-After), {f['wall_s']} s; runs lost: {f['runs'] - f['succeeded']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
