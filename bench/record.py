"""A class's worth of runs at once, through daphne: does the recorder keep up, does every socket
end with ``finished``, and is each person's share back when their run ends?

    python -m bench.record                                  # SQLite, its own stack
    python -m bench.record --database postgres://postgres@127.0.0.1:5432/benchrecord
    python -m bench.record --bursts 3 --n 200 --sockets 64 --json var/bench-record.json

Its own stack (the embedded default: SQLite in a temporary folder, the recorder, one CPU executor
with two runners), with one trusted proxy so that each of ``n`` clients is its own address
(``X-Forwarded-For``) and the fair shares on as a site has them. Each burst: ``n`` clients each
``POST /api/runs`` the same ``print(1)`` and follow the run on a websocket of its own (at most
``--sockets`` at a time), as the README's client does (no Origin). Then each run is asked for with
``GET /api/runs/<id>`` until it says it ended. Measured: runs/s, sockets closed before
``finished`` (must be 0), 429s, the record queue's depth (sampled every 0.25 s), the lag from each
run's ``finished`` event to its end being in the database (which the API answers from; looked at
every 50 ms), and to a poller's ``GET`` seeing it (the poller's own request on a busy machine
included), and from a burst's last ``finished`` to every run of it stored.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import redis

from bench.stack import Stack, own_stack

CODE = "print(1)"


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))], 1)


def summary(values: list[float]) -> dict:
    return {"median": pct(values, 50), "p95": pct(values, 95), "max": pct(values, 100), "n": len(values)}


def record_queue_depth(redis_client) -> int:
    """The record queue's length, every priority list of it (kombu keeps one a priority step)."""
    return sum(redis_client.llen(key) for key in redis_client.scan_iter(match="record*", count=1000)
               if redis_client.type(key) == b"list")


class StoredWatcher(threading.Thread):
    """When each run's end reaches the database, which is what ``GET /api/runs/<id>`` answers
    from: one query every 50 ms for every ended run, straight to the stack's database (so the
    lag is the recorder's, not that of 200 pollers' requests on a busy machine)."""

    QUERY = "SELECT id FROM playground_run WHERE status NOT IN ('queued', 'running')"

    def __init__(self, database_url: str):
        super().__init__(daemon=True)
        self.database_url = database_url
        self.stored_at: dict[str, float] = {}
        self.stop = threading.Event()

    def connect(self):
        if self.database_url.startswith("sqlite:///"):
            import sqlite3

            self.busy_errors = (sqlite3.OperationalError,)
            return sqlite3.connect(self.database_url.removeprefix("sqlite:///"), timeout=5)
        import psycopg

        self.busy_errors = (psycopg.OperationalError,)
        return psycopg.connect(self.database_url, autocommit=True)

    def run(self) -> None:
        conn = self.connect()
        try:
            while not self.stop.is_set():
                try:
                    rows = conn.execute(self.QUERY).fetchall()
                except self.busy_errors:  # a locked or busy database: the next look is 50 ms later
                    rows = []
                now = time.time()
                for (run_id,) in rows:
                    self.stored_at.setdefault(str(run_id).replace("-", ""), now)
                self.stop.wait(0.05)
        finally:
            conn.close()


class Sampler(threading.Thread):
    def __init__(self, redis_url: str):
        super().__init__(daemon=True)
        self.redis = redis.Redis.from_url(redis_url)
        self.samples: list[tuple[float, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        t0 = time.monotonic()
        while not self.stop.is_set():
            try:
                self.samples.append((round(time.monotonic() - t0, 2), record_queue_depth(self.redis)))
            except redis.RedisError:  # a sample missed; the next one comes 0.25 s later
                pass
            self.stop.wait(0.25)


def one_client(stack: Stack, client: str) -> dict:
    """A person: POST the run, follow it to its close, then ask the API until it says it ended."""
    status, answer, headers = stack.post_as(client, "/api/runs", {"code": CODE}, timeout=30)
    if status != 201:
        return {"refused": status, "limit": answer.get("limit")}
    run_id = answer["id"]
    try:
        watched = stack.watch(run_id, timeout=120, client=client)
    except Exception as e:  # noqa: BLE001 - a socket that failed to open or broke is counted, not fatal
        out = {"run": run_id, "early_close": True, "close_code": None, "socket_error": repr(e)[:200],
               "events": [], "seen_at": None, "finished_ts": None}
    else:
        finished = watched.finished
        out = {"run": run_id, "early_close": finished is None, "close_code": watched.close_code,
               "events": [(e.get("seq"), e.get("type")) for e in watched.events],
               "seen_at": watched.arrived[-1] if watched.arrived else None,
               "finished_ts": finished["ts"] if finished else None}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{stack.url}/api/runs/{run_id}", timeout=10) as r:
                run = json.load(r)
        except urllib.error.HTTPError:
            run = {}
        if run.get("status") not in (None, "queued", "running"):
            out["api_ended_wall"] = time.time()
            break
        time.sleep(0.05)
    return out


def burst(stack: Stack, n: int, sockets: int, index: int, stored: StoredWatcher) -> dict:
    t0 = time.monotonic()
    with ThreadPoolExecutor(sockets) as pool:
        results = list(pool.map(lambda i: one_client(stack, f"10.{index}.{i // 250}.{i % 250 + 1}"), range(n)))
    wall = time.monotonic() - t0
    ran = [r for r in results if "run" in r]
    lags = [(r["api_ended_wall"] - r["finished_ts"]) * 1000 for r in ran
            if r.get("api_ended_wall") and r.get("finished_ts")]
    time.sleep(0.2)  # the watcher's next look
    stored_lags = [(stored.stored_at[r["run"].replace("-", "")] - r["finished_ts"]) * 1000 for r in ran
                   if r.get("finished_ts") and r["run"].replace("-", "") in stored.stored_at]
    last_finished = max((r["finished_ts"] for r in ran if r.get("finished_ts")), default=None)
    last_stored = max((r["api_ended_wall"] for r in ran if r.get("api_ended_wall")), default=None)
    return {
        "runs": len(ran), "refused": [r for r in results if "refused" in r][:5],
        "refused_count": sum(1 for r in results if "refused" in r),
        "wall_s": round(wall, 2), "runs_per_s": round(len(ran) / wall, 1),
        "early_closes": sum(1 for r in ran if r["early_close"]),
        "socket_errors": sum(1 for r in ran if "socket_error" in r),
        "early_closed": [r for r in ran if r["early_close"]][:5],
        "close_codes": sorted({r["close_code"] for r in ran}, key=str),
        "api_lag_ms": summary(lags),
        "stored_lag_ms": summary(stored_lags),
        "all_stored_after_last_finished_s": round(last_stored - last_finished, 2) if last_stored and last_finished
        else None,
        "never_stored": sum(1 for r in ran if not r.get("api_ended_wall")),
    }


def measure(database: str | None, bursts: int, n: int, sockets: int, pause_s: float) -> dict:
    env = {"TRUSTED_PROXIES": "1", "RUN_MAX_ACTIVE_PER_CLIENT": "4", "RUN_BUDGET_S_PER_HOUR": "1800",
           "RUN_BUDGET_S_PER_DAY": "14400", "RUN_QUEUE_MAX": "500", "WS_MAX_PER_CLIENT": "32",
           "EXECUTOR_CONCURRENCY": "2"}
    if database:
        env["DATABASE_URL"] = database
    with own_stack("record", **env) as stack:
        sampler = Sampler(stack.env["REDIS_URL"])
        sampler.start()
        stored = StoredWatcher(stack.env["DATABASE_URL"])
        stored.start()
        results = []
        for i in range(bursts):
            results.append(burst(stack, n, sockets, i + 1, stored))
            time.sleep(pause_s)
        sampler.stop.set()
        stored.stop.set()
        sampler.join()
        stored.join()
    depths = [d for _, d in sampler.samples]
    return {"database": "postgresql" if database and database.startswith("postgres") else "sqlite",
            "bursts": results, "record_queue_depth": {"max": max(depths, default=0),
                                                      "median": statistics.median(depths) if depths else 0,
                                                      "samples": sampler.samples[::4]}}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.record", description=__doc__.split("\n")[0])
    parser.add_argument("--database", help="a DATABASE_URL for the stack (default: SQLite in a temporary folder)")
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--n", type=int, default=200, help="clients (runs) per burst")
    parser.add_argument("--sockets", type=int, default=64, help="clients at a time")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between bursts")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    if args.database and args.database.startswith("postgres"):
        import psycopg

        base, _, name = args.database.rpartition("/")
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
    results = measure(args.database, args.bursts, args.n, args.sockets, args.pause)
    text = json.dumps(results, indent=2)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    short = {k: v for k, v in results.items() if k != "record_queue_depth"}
    print(json.dumps(short, indent=2))
    depth = results["record_queue_depth"]
    print(f"\n{results['database']}: record queue depth max {depth['max']}, median {depth['median']}")
    print("| burst | runs | runs/s | closed before finished | 429s | stored, after finished (median / p95 / max) "
          "| a poller's API says ended, after finished (median / p95 / max) | all stored, after the last finished |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for i, b in enumerate(results["bursts"], 1):
        lag, kept = b["api_lag_ms"], b["stored_lag_ms"]
        print(f"| {i} | {b['runs']} | {b['runs_per_s']} | {b['early_closes']} | {b['refused_count']} | "
              f"{kept['median']} / {kept['p95']} / {kept['max']} ms | "
              f"{lag['median']} / {lag['p95']} / {lag['max']} ms | {b['all_stored_after_last_finished_s']} s |")
    return 0 if all(b["early_closes"] == 0 and b["never_stored"] == 0 for b in results["bursts"]) else 1


if __name__ == "__main__":
    sys.exit(main())
