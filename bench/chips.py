"""A node of exclusive chips on a stand-in device, through the public API: what a chip's line
costs, on a machine without an accelerator.

    .venv/bin/python -m bench.chips                    # 1 stand-in chip that opens in 1 s
    .venv/bin/python -m bench.chips --open-ms 8000 --pairs 5

It starts its own stack (bench/stack.py: SQLite, Redis database 14, the suite's CPU executor) and
a second worker posing as ``tpu:standin`` (EXECUTOR_DEVICE_KIND) with one stand-in exclusive chip
(EXECUTOR_EXCLUSIVE_DEVICES=1, EXECUTOR_STANDIN_DEVICE: runner/exclusive.py flocks a lock file
as libtpu takes its lockfile, and sleeps EXECUTOR_STANDIN_OPEN_MS as a chip's open), in the real
sandbox, and measures, from the runs' own events:

- two people's runs sent at once, ``--pairs`` times: the turnaround between them (the second's
  ``started`` after the first's ``finished``: the first runner's exit, the next one's open), the
  second's ``waited_ms`` and what its ``waiting`` said (``eta_s``) once turnarounds were known;
- one person's runs back to back (each sent when the last finished): the time from the POST to
  ``started`` on the chip (where their runner is kept for their next run: EXECUTOR_CHIP_KEEP_S),
  against the same on the CPU node (a fresh warm runner every run);
- ``print(1)``'s own wall time on the chip and on the CPU node.

Not a test: figures depend on the machine and its load; it prints the load with them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

from bench.stack import own_stack

STANDIN = "tpu:standin"


def post(stack, code: str, device: str, client: str) -> str:
    status, answer, _ = stack.post_as(client, "/api/runs", {"code": code, "device": device})
    if status != 201:
        raise RuntimeError(f"POST /api/runs: {status} {answer}")
    return answer["id"]


def event(detail: dict, type_: str) -> dict | None:
    return next((e for e in detail["events"] if e["type"] == type_), None)


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def pairs(stack, count: int) -> dict:
    """Two people's print(1) sent at once, ``count`` times, each pair once the chip has reopened."""
    turnarounds, waited, etas = [], [], []
    for _ in range(count):
        wait_chip_ready(stack)
        ids: list[str] = []
        threads = [threading.Thread(target=lambda c=c, ids=ids: ids.append(post(stack, "print(1)", STANDIN, c)))
                   for c in ("10.9.0.1", "10.9.0.2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        details = sorted((stack.wait_finished(i, timeout=120) for i in ids), key=lambda d: event(d, "started")["ts"])
        first, second = details
        assert all(d["status"] == "succeeded" for d in details), [d["status"] for d in details]
        turnarounds.append((event(second, "started")["ts"] - event(first, "finished")["ts"]) * 1000)
        waited.append(event(second, "started")["waited_ms"])
        told = [e["eta_s"] for e in second["events"] if e["type"] == "waiting" and "eta_s" in e]
        if told:
            etas.append(told[0] * 1000)
    return {"turnaround_ms": median(turnarounds), "second_waited_ms": median(waited),
            "second_told_eta_ms": median(etas), "pairs": count}


def back_to_back(stack, device: str, runs: int) -> dict:
    """One person's print(1), each sent when the last finished: POST to ``started``, and the wall."""
    to_start, walls = [], []
    for _ in range(runs):
        t0 = time.time()
        detail = stack.wait_finished(post(stack, "print(1)", device, "10.9.0.3"), timeout=120)
        assert detail["status"] == "succeeded", detail["status"]
        to_start.append((event(detail, "started")["ts"] - t0) * 1000)
        walls.append(detail["wall_ms"])
    return {"post_to_started_ms": median(to_start), "wall_ms": median(walls), "runs": runs}


def wait_chip_ready(stack, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = stack.wait_online(STANDIN, warm=False)
        if info.get("chips_ready"):
            return info
        time.sleep(0.1)
    raise RuntimeError("the stand-in chip did not open")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--open-ms", type=int, default=1000, help="a stand-in chip's open (a v5e's: 7200-9500)")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=10, help="one person's runs back to back, per node")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-standin-", dir="/var/tmp")
    os.chmod(folder, 0o755)
    try:
        # X-Forwarded-For names each run's person (one trusted proxy: the bench's own client).
        with own_stack("chips", TRUSTED_PROXIES="1") as stack:
            stack.start_executor("tpu-standin", device=STANDIN, EXECUTOR_HEARTBEAT_S="1", EXECUTOR_CONCURRENCY="3",
                                 EXECUTOR_EXCLUSIVE_DEVICES="1", EXECUTOR_STANDIN_DEVICE=folder,
                                 EXECUTOR_STANDIN_OPEN_MS=str(args.open_ms), EXECUTOR_RO_BINDS=folder)
            stack.wait_online()
            wait_chip_ready(stack)
            print(f"stand-in chip opening in {args.open_ms} ms; sandbox {os.environ.get('EXECUTOR_SANDBOX', 'fork')}; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            out = {"open_ms": args.open_ms, "chip": pairs(stack, args.pairs)}
            print("two people at once:", json.dumps(out["chip"]), flush=True)
            out["same_person_chip"] = back_to_back(stack, STANDIN, args.runs)
            print("one person back to back, chip:", json.dumps(out["same_person_chip"]), flush=True)
            out["same_person_cpu"] = back_to_back(stack, "cpu", args.runs)
            print("one person back to back, cpu: ", json.dumps(out["same_person_cpu"]), flush=True)
            out["chip_open_ms_measured"] = stack.wait_online(STANDIN, warm=False).get("chip_open_ms")
            out["chip_turnaround_s_node"] = stack.wait_online(STANDIN, warm=False).get("chip_turnaround_s")
            print(f"the node's own: open {out['chip_open_ms_measured']} ms (median), turnaround "
                  f"{out['chip_turnaround_s_node']} s; load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
