"""The parts of a chip's handover from one process to the next, timed on the host itself.

    python bench/accel/handover.py [--rounds 2]     (on a TPU host; JSON lines, then a summary)

A chip is held by one process at a time, so another person's run waits for the last holder to
go and the next one to open the chip. This times each part apart, with nothing of the executor:

- ``start``: a fresh interpreter's start and ``import jax`` (no backend yet: the chip is not
  touched, so it can overlap the last holder's run);
- ``open``: the backend's start and a first tiny jit, in a process that has imported jax;
- ``kill_reap``: SIGKILL to the holder until its exit status is read (the chip is free then);
- ``exit_reap``: the same for a holder that exits by itself (``os._exit``, libtpu's teardown
  skipped) and one that returns from Python (the atexit hooks, libtpu's teardown run);
- ``early``: whether a process that opens the chip right after the SIGKILL, before the reap,
  finds it held.

With ``--variant KEY=VALUE,...`` (libtpu's ``TPU_PREMAPPED_BUFFER_SIZE``, say), instead: for the
default environment and each variant, a fresh process's start, the chip's open, its resident
set, host↔chip transfers of 16, 64 and 256 MiB, and its exit after SIGKILL.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import jax, jax.numpy as jnp
print(json.dumps({"imported_ms": round((time.perf_counter() - t0) * 1000, 1)}), flush=True)
for line in sys.stdin:
    op = line.strip()
    if op == "open":
        t = time.perf_counter()
        try:
            jax.devices()
            jax.jit(lambda v: v + 1)(jnp.zeros((), jnp.float32)).block_until_ready()
            print(json.dumps({"opened_ms": round((time.perf_counter() - t) * 1000, 1),
                              "device": str(jax.devices()[0].device_kind)}), flush=True)
        except Exception as exc:
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300],
                              "after_ms": round((time.perf_counter() - t) * 1000, 1)}), flush=True)
    elif op == "measure":
        import numpy as np
        rss = {k: v.strip() for k, v in (line.split(":", 1) for line in open("/proc/self/status"))
               if k in ("VmRSS", "RssAnon")}
        times = {}
        for mib in (16, 64, 256):
            x = np.ones((mib, 256, 1024), np.float32)
            t = time.perf_counter(); y = jax.device_put(x).block_until_ready(); up = time.perf_counter() - t
            t = time.perf_counter(); z = np.asarray(y); down = time.perf_counter() - t
            times[f"up_{mib}MiB_ms"], times[f"down_{mib}MiB_ms"] = round(up * 1000, 1), round(down * 1000, 1)
            del x, y, z
        print(json.dumps({**rss, **times}), flush=True)
    elif op == "os_exit":
        os._exit(0)
    elif op == "return":
        break
"""


class Child:
    def __init__(self, env: dict | None = None) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                                     env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        self.started = self.read()
        self.start_ms = round((time.perf_counter() - self.t0) * 1000, 1)

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"eof": True}

    def tell(self, op: str) -> None:
        self.proc.stdin.write(op + "\n")
        self.proc.stdin.flush()

    def open(self) -> dict:
        t = time.perf_counter()
        self.tell("open")
        said = self.read()
        said["open_wall_ms"] = round((time.perf_counter() - t) * 1000, 1)
        return said

    def end(self, how: str) -> float:
        t = time.perf_counter()
        if how == "kill":
            self.proc.send_signal(signal.SIGKILL)
        else:
            self.tell(how)
        self.proc.wait()
        return round((time.perf_counter() - t) * 1000, 1)


def emit(record: dict) -> dict:
    print(json.dumps(record), flush=True)
    return record


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variant", action="append", default=[],
                        help="KEY=VALUE[,KEY=VALUE]: an environment to time open, transfers and exit under")
    args = parser.parse_args()
    if args.variant:
        for _ in range(args.rounds):
            for variant in ["", *args.variant]:
                env = dict(kv.split("=", 1) for kv in variant.split(",") if kv)
                child = Child(env)
                opened = child.open()
                child.tell("measure")
                measured = child.read()
                emit({"variant": variant or "default", "start_ms": child.start_ms,
                      "open_ms": opened.get("open_wall_ms"), "error": opened.get("error"), **measured,
                      "kill_reap_ms": child.end("kill")})
        return
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    emit({"python_start_ms": round((time.perf_counter() - t) * 1000, 1)})

    records: list[dict] = []
    holder = Child()
    emit({"first_start_ms": holder.start_ms, **holder.started})
    emit({"first_open": holder.open()})
    for round_ in range(args.rounds):
        for how in ("kill", "os_exit", "return"):
            nxt = Child()  # started and imported while the chip is held
            ended_ms = holder.end(how)
            opened = nxt.open()
            records.append(emit({"round": round_, "end": how, "next_start_ms": nxt.start_ms,
                                 "end_reap_ms": ended_ms, "next_open_ms": opened.get("open_wall_ms"),
                                 "next_said": opened}))
            holder = nxt
    # Opening at once after the SIGKILL, before the holder is reaped.
    nxt = Child()
    holder.proc.send_signal(signal.SIGKILL)
    early = nxt.open()
    holder.proc.wait()
    emit({"early": early})
    if "error" in early:
        emit({"early_retry": nxt.open()})
    nxt.end("kill")

    summary = {}
    for how in ("kill", "os_exit", "return"):
        rows = [r for r in records if r["end"] == how and "error" not in r["next_said"]]
        if rows:
            summary[how] = {k: statistics.median(r[k] for r in rows)
                            for k in ("next_start_ms", "end_reap_ms", "next_open_ms")}
    emit({"summary": summary})


if __name__ == "__main__":
    main()
