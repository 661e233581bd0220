"""An accelerator node tried from the node itself: runs submitted to its real Celery worker through
``executor.submit`` (no web side), and what they measured, as a table and as JSON.

    python -m bench.accelerator_check --device tpu --out /tmp/check      (bench/tpu_check.sh runs it)

What it records, each a median where it repeats:
    print(1)            time to first output and to finished, and the run's own wall time, one
                        person's runs back to back
    chip open           the runners' warm-up (ready's warmup_ms): what a run never waits for when
                        the node opened the chip beforehand
    turnaround          two people's runs back to back (each gets a fresh runner, which opens the chip)
    two at once         both succeed; the second waits for the chip, and says so
    article             the article's grad/jit/vmap/pmap snippet
    matmul              jaxplay.bench of an 8192² bf16 matrix product: its share of the chip's peak
    profile             a profiled run's lanes (a TPU lane)
    profile cost        500 training steps, plain and profiled in turn: the profiled run's wall
                        clock against the plain one's, and when its trace was ready
    session             two cells, the second compiling nothing; then the lease's end when idle
    device memory       what a 1 GiB array's run reports as its device memory peak

Standard library and the executor's client only, on the node's own Python (3.11 on a TPU host).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
SNIPPETS = HERE / "accel"


def median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 1) if values else None


class Check:
    def __init__(self, redis_url: str, device: str, wall_s: float):
        import redis as redis_py

        # A run that opens a chip can keep a small host busy for seconds: the blocking reads wait longer.
        self.redis = redis_py.Redis.from_url(redis_url, socket_timeout=60)
        self.device = device
        self.limits = {"wall_s": wall_s}
        self.results: dict = {}

    def run(self, name: str, *, options: dict | None = None, person: str | None = None, **kw) -> dict:
        from executor import shares, submit

        code = (SNIPPETS / name).read_text()
        run_id = str(uuid.uuid4())
        if person:  # who runs it, as the web side's admission records it (one person's runs may share a runner)
            self.redis.set(shares.client_key(run_id), person, ex=3600)
        result = submit.submit(self.redis, self.device, code, self.limits, self.limits["wall_s"] + 120,
                               options=options, run_id=run_id, **kw)
        events = result["events"]
        result["run_id"] = run_id
        finished = events[-1]
        started = next((e for e in events if e["type"] == "started"), {})
        result["summary"] = {
            "snippet": name, "status": finished.get("status"), "message": finished.get("message") or None,
            "wall_ms": finished.get("wall_ms"), "cpu_ms": finished.get("cpu_ms"),
            "peak_memory_kb": finished.get("peak_memory_kb"), "device_peak_bytes": finished.get("device_peak_bytes"),
            "queued_to_started_ms": result["queued_to_started_ms"], "first_output_ms": result["first_output_ms"],
            "queued_to_finished_ms": result["queued_to_finished_ms"], "worker": started.get("worker"),
            "device_kind": started.get("device_kind"), "chips": started.get("chips"),
            "waited_ms": started.get("waited_ms"), "reused": bool(started.get("reused")),
            "waiting": [{k: e.get(k) for k in ("ahead", "eta_s")} for e in events if e["type"] == "waiting"],
        }
        print(json.dumps(result["summary"]), flush=True)
        return result

    def built_trace(self, run_id: str, timeout_s: float = 120.0) -> dict:
        """A trace built after the run's end (executor/profiles.py): what it holds (its lanes) and
        how long after ``finished`` was seen it was ready, or why it was not."""
        from executor import events as ev

        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            state = self.redis.get(ev.profile_state_key(run_id))
            if state is not None and state != b"building":
                state = json.loads(state)
                if state.get("ready"):
                    info = state.get("info") or {}
                    return {"lanes": info.get("lanes"), "trace_events": info.get("events"),
                            "build_ms": info.get("build_ms"),
                            "ready_after_finished_ms": round((time.monotonic() - t0) * 1000, 1)}
                return {"error": state.get("error")}
            time.sleep(0.05)
        return {"error": f"the trace was not built within {timeout_s:g} s"}

    # -- the checks --------------------------------------------------------------------------------

    def hello_same_person(self, n: int) -> None:
        runs = [self.run("hello.py", person="alice")["summary"] for _ in range(n)]
        self.results["print1_same_person"] = {
            "runs": runs, "first_output_ms": median(r["first_output_ms"] for r in runs[1:]),
            "finished_ms": median(r["queued_to_finished_ms"] for r in runs[1:]),
            "wall_ms": median(r["wall_ms"] for r in runs[1:]),
            "reused": f"{sum(r['reused'] for r in runs[1:])} of {len(runs) - 1}",
            "statuses": sorted({r["status"] for r in runs})}

    def turnaround(self, n: int) -> None:
        runs = [self.run("hello.py", person=("alice", "bob")[i % 2])["summary"] for i in range(n)]
        self.results["print1_two_people"] = {
            "runs": runs, "finished_ms": median(r["queued_to_finished_ms"] for r in runs[1:]),
            "started_ms": median(r["queued_to_started_ms"] for r in runs[1:]),
            "statuses": sorted({r["status"] for r in runs})}

    def two_at_once(self) -> None:
        out: dict[str, dict] = {}
        barrier = threading.Barrier(2)

        def one(person: str) -> None:
            barrier.wait()
            out[person] = self.run("hello.py", person=person)["summary"]

        threads = [threading.Thread(target=one, args=(p,)) for p in ("carol", "dave")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        runs = sorted(out.values(), key=lambda r: r["queued_to_started_ms"] or 0)
        self.results["two_at_once"] = {"runs": runs, "statuses": [r["status"] for r in runs],
                                       "started_ms": [r["queued_to_started_ms"] for r in runs],
                                       "waited_ms": [r["waited_ms"] for r in runs],
                                       "second_waiting": runs[-1]["waiting"]}

    def snippets(self) -> None:
        self.results["article"] = self.run("article.py")["summary"]
        matmul = self.run("matmul.py")
        timing = next((e for e in matmul["events"] if e["type"] == "timing"), {})
        self.results["matmul"] = {**matmul["summary"], "timing": {
            k: timing.get(k) for k in ("label", "median_ms", "mean_ms", "gflops", "peak_gflops", "flops_share",
                                       "peak_share", "device_kind") if k in timing}}
        profiled = self.run("profiled.py", options={"profile": True})
        profile = next((e for e in profiled["events"] if e["type"] == "profile"), {})
        self.results["profile"] = {**profiled["summary"], "lanes": profile.get("lanes"),
                                   "profile_ms": profile.get("profile_ms"), "error": profile.get("error"),
                                   **(self.built_trace(profiled["run_id"]) if profile.get("building") else {})}
        self.results["device_memory"] = self.run("memory.py")["summary"]

    def profile_cost(self, n: int) -> None:
        """The same steps plain and profiled, in turn, one person's (the chip's runner reused):
        the medians of each one's own wall time, their ratio, and the trace's readiness."""
        plain, profiled, ready = [], [], []
        for _ in range(n):
            plain.append(self.run("steps.py", person="erin")["summary"])
            run = self.run("steps.py", person="erin", options={"profile": True})
            profiled.append(run["summary"])
            event = next((e for e in run["events"] if e["type"] == "profile"), {})
            ready.append(self.built_trace(run["run_id"]) if event.get("building") else {"error": event.get("error")})
        walls = median(r["wall_ms"] for r in plain[1:]), median(r["wall_ms"] for r in profiled[1:])
        self.results["profile_cost"] = {
            "plain": plain, "profiled": profiled, "traces": ready,
            "plain_wall_ms": walls[0], "profiled_wall_ms": walls[1],
            "ratio": round(walls[1] / walls[0], 2) if all(walls) else None,
            "ready_after_finished_ms": median(t.get("ready_after_finished_ms") for t in ready[1:]),
            "lanes": next((t.get("lanes") for t in ready if t.get("lanes")), None),
            "statuses": sorted({r["status"] for r in plain + profiled})}

    def session(self, idle_s: float) -> None:
        from executor import sessionstate

        sid = str(uuid.uuid4())
        sessionstate.create(self.redis, sid, idle_s=int(idle_s))
        cell = {"id": sid, "idle_s": int(idle_s)}
        first = self.cell(sid, cell,
                          "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x * 2)\nprint(f(jnp.ones(3)))")
        node = (sessionstate.read(self.redis, sid) or {}).get("node")
        second = self.cell(sid, cell, "print(f(jnp.ones(3)))", queue=sessionstate.node_queue(node) if node else None)
        t0 = time.monotonic()
        state = {}
        while time.monotonic() - t0 < idle_s + 60:
            state = sessionstate.read(self.redis, sid) or {}
            if state.get("state") == sessionstate.STOPPED:
                break
            time.sleep(1)
        self.results["session"] = {
            "cells": [first, second],
            "second_compiled": second["compiled"],
            "lease_ended_after_s": (round(time.monotonic() - t0, 1)
                                    if state.get("state") == sessionstate.STOPPED else None),
            "stopped_reason": state.get("stopped_reason"),
        }

    def cell(self, sid: str, cell: dict, code: str, queue: str | None = None) -> dict:
        from executor import submit

        result = submit.submit(self.redis, self.device, code, self.limits, self.limits["wall_s"] + 120,
                               session=cell, queue=queue)
        events = result["events"]
        summary = {"status": events[-1].get("status"), "wall_ms": events[-1].get("wall_ms"),
                   "queued_to_finished_ms": result["queued_to_finished_ms"],
                   "compiled": sum(1 for e in events if e["type"] == "compiled" and not e.get("cached")),
                   "stdout": "".join(e.get("text", "") for e in events if e["type"] == "stdout")[-200:]}
        print(json.dumps({"cell": summary}), flush=True)
        return summary


def table(results: dict) -> str:
    """The figures a reader compares, one a row."""
    rows = []

    def row(what, value):
        rows.append(f"| {what} | {value} |")

    same = results.get("print1_same_person", {})
    row("print(1), one person's next run: queued → first output (median ms)", same.get("first_output_ms"))
    row("print(1), one person's next run: queued → finished (median ms)", same.get("finished_ms"))
    row("print(1): the run's own wall time, finished after start (median ms)", same.get("wall_ms"))
    two = results.get("print1_two_people", {})
    row("two people alternating: queued → finished (median ms)", two.get("finished_ms"))
    node = results.get("node", {})
    row("a chip's open alone, \"warm\" → \"warmed\" (the node's chip_open_ms, median)", node.get("chip_open_ms"))
    row("its runner's start before it, paid while the chip is held (chip_start_ms, median)", node.get("chip_start_ms"))
    row("a chip's turnaround: its holder taken or closed → the next runner ready (chip_turnaround_s)",
        node.get("chip_turnaround_s"))
    row("one person's next runs reused the chip's runner", same.get("reused"))
    once = results.get("two_at_once", {})
    row("two submitted at once: statuses, queued → started (ms), waited for the chip (ms)",
        f"{once.get('statuses')} {once.get('started_ms')} {once.get('waited_ms')}")
    art = results.get("article", {})
    row("article grad/jit/vmap/pmap", f"{art.get('status')}, wall {art.get('wall_ms')} ms")
    mm = results.get("matmul", {})
    row("8192² bf16 matmul through jaxplay.bench", json.dumps(mm.get("timing")))
    prof = results.get("profile", {})
    row("profiled run's lanes", f"{prof.get('status')}: {prof.get('lanes')} "
                                f"(trace ready {prof.get('ready_after_finished_ms')} ms after finished)")
    cost = results.get("profile_cost", {})
    row("500 steps: plain / profiled wall (median ms), ratio, trace ready after finished (median ms)",
        f"{cost.get('plain_wall_ms')} / {cost.get('profiled_wall_ms')}, {cost.get('ratio')}×, "
        f"{cost.get('ready_after_finished_ms')}")
    mem = results.get("device_memory", {})
    row("1 GiB array: device_peak_bytes / host peak_memory_kb",
        f"{mem.get('device_peak_bytes')} / {mem.get('peak_memory_kb')}")
    sess = results.get("session", {})
    row("session: second cell compiled / lease ended after s",
        f"{sess.get('second_compiled')} / {sess.get('lease_ended_after_s')}")
    return "| | |\n|---|---|\n" + "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.accelerator_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="tpu")
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/accelerator-check"))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--wall", type=float, default=120)
    parser.add_argument("--session-idle-s", type=float, default=20)
    parser.add_argument("--only", nargs="*",
                        default=["hello", "turnaround", "once", "snippets", "profile_cost", "session"])
    args = parser.parse_args(argv)
    check = Check(args.redis, args.device, args.wall)
    steps = {"hello": lambda: check.hello_same_person(args.repeat),
             "turnaround": lambda: check.turnaround(args.repeat), "once": check.two_at_once,
             "snippets": check.snippets, "session": lambda: check.session(args.session_idle_s),
             "profile_cost": lambda: check.profile_cost(args.repeat)}
    for name in args.only:
        t0 = time.monotonic()
        try:
            steps[name]()
        except Exception as exc:  # noqa: BLE001 - the rest still runs; the failure is in the output
            check.results[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
            print(f"{name} failed: {exc}", file=sys.stderr, flush=True)
        print(f"== {name} took {time.monotonic() - t0:.1f} s", flush=True)
    try:
        from executor import registry

        described = registry.describe_kind(check.redis, args.device.partition("@")[0])
        check.results["node"] = {k: described.get(k) for k in ("device_kind", "device_count", "chips", "chips_ready",
                                                                 "chip_turnaround_s", "chip_open_ms", "chip_start_ms",
                                                                 "jax_version")}
    except Exception as exc:  # noqa: BLE001 - the figures above stand without it
        check.results["node_error"] = str(exc)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "check.json").write_text(json.dumps(check.results, indent=1))
    print(table(check.results))
    return 0 if not any(k.endswith("_error") for k in check.results) else 1


if __name__ == "__main__":
    sys.exit(main())
