"""Measure the sandbox: cold start to "ready", first output byte of print(1) from a warm runner,
the memory of an idle warm runner (RSS and PSS from the host's smaps_rollup), and a run's first
figure with and without the worker's prepared matplotlib font list.

    .venv/bin/python -m bench.sandbox [--runs 10] [--sandbox bwrap|none]

Not a test: numbers depend on the machine and its load, which it prints with them.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import time
from pathlib import Path

from executor.sandbox import Limits, get_launcher
from executor.supervisor import Runner, discard, supervise, wait_ready


FIRST_FIGURE = """\
import time
t = time.perf_counter()
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.show()
print((time.perf_counter() - t) * 1000)
"""


def wait_line(fd: int, timeout: float = 120.0) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(b"\n"):
        if not select.select([fd], [], [], deadline - time.monotonic())[0]:
            raise TimeoutError("no line from the runner")
        chunk = os.read(fd, 1)
        if not chunk:
            raise RuntimeError("runner died")
        buf += chunk
    return buf


def sandbox_pids(launcher, proc) -> list[int]:
    cgroup = getattr(proc, "sandbox_cgroup", None)
    return cgroup.pids() if cgroup else [proc.pid]


def rollup(pid: int) -> dict[str, int]:
    values = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        values[key] = int(value.split()[0])  # kB
    return values


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--sandbox", default="bwrap")
    args = parser.parse_args()
    launcher = get_launcher(args.sandbox, limits=Limits(), uid_base=63000) if args.sandbox == "bwrap" \
        else get_launcher(args.sandbox, limits=Limits())

    cold, first_byte, memory = [], [], []
    for _i in range(args.runs):
        t0 = time.perf_counter()
        proc = launcher.start(0)
        ready = json.loads(wait_line(proc.event_fd))
        cold.append((time.perf_counter() - t0) * 1000)
        assert ready["type"] == "ready", ready
        time.sleep(0.5)  # idle, as in the pool
        pids = sandbox_pids(launcher, proc)
        runner = max(pids, key=lambda p: rollup(p)["Rss"])  # the python, not bwrap's two
        memory.append({"runner": rollup(runner), "others_rss_kb": sum(rollup(p)["Rss"] for p in pids if p != runner)})
        t1 = time.perf_counter()
        proc.stdin.write(b'{"code": "print(1)", "options": {}}\n')
        proc.stdin.flush()
        out = os.read(proc.stdout.fileno(), 1)
        first_byte.append((time.perf_counter() - t1) * 1000)
        assert out == b"1", out
        proc.wait(timeout=30)
        discard(Runner(proc=proc, slot=0), launcher)

    # The same through the supervisor, as a browser gets it: its output coalescing included.
    via_supervisor = []
    for _i in range(args.runs):
        runner = Runner(proc=launcher.start(0), slot=0)
        wait_ready(runner, 120)
        time.sleep(0.5)
        first = []
        t1 = time.perf_counter()

        def emit(type_, first=first, **fields):
            if type_ == "stdout" and not first:
                first.append(time.perf_counter())

        supervise(runner, launcher, {"code": "print(1)", "options": {}}, launcher.limits, emit)
        via_supervisor.append((first[0] - t1) * 1000)
        discard(runner, launcher)

    # A run's first figure: importing pyplot and drawing, as the snippet itself times it, with the
    # worker's prepared font list (what executors do) and without (each run scans the fonts).
    from executor.local import RunResult, run_local

    first_figure = {}
    for prepared in (False, True):
        if prepared:
            launcher.prepare()
        times = []
        for _i in range(args.runs):
            result = RunResult(run_local(FIRST_FIGURE, launcher=launcher, limits=launcher.limits))
            assert result.status == "succeeded", result.stderr
            times.append(float(result.stdout))
        first_figure[prepared] = times

    def summary(values):
        return f"median {statistics.median(values):.1f} ms (min {min(values):.1f}, max {max(values):.1f})"

    print(f"sandbox={args.sandbox} runs={args.runs} load={os.getloadavg()[0]:.2f} cpus={os.cpu_count()}")
    print(f"cold start to ready:           {summary(cold)}")
    print(f"print(1) first byte, warm:     {summary(first_byte)}")
    print(f"  as a stdout event (supervisor): {summary(via_supervisor)}")
    rss = [m["runner"]["Rss"] / 1024 for m in memory]
    pss = [m["runner"]["Pss"] / 1024 for m in memory]
    anon = [m["runner"]["Anonymous"] / 1024 for m in memory]
    others = [m["others_rss_kb"] / 1024 for m in memory]
    print(f"idle warm runner RSS:          median {statistics.median(rss):.1f} MiB")
    print(f"idle warm runner PSS:          median {statistics.median(pss):.1f} MiB "
          f"(anonymous {statistics.median(anon):.1f} MiB)")
    print(f"bwrap's two processes RSS:     median {statistics.median(others):.1f} MiB")
    print(f"first figure, no font list:    {summary(first_figure[False])}")
    print(f"first figure, worker's list:   {summary(first_figure[True])}")


if __name__ == "__main__":
    main()
