"""Measure the sandbox: cold start to "ready", first output byte of print(1) from a warm runner,
the memory of idle warm runners (RSS, PSS and private memory from the host's smaps_rollup, with
--idle of them alive at once, as in a pool) and how many a 24 GiB node can keep warm, the CPU
one run costs from the start of its runner to its exit (print(1) and a small jit), and a run's
first figure with and without the worker's prepared matplotlib font list.

    .venv/bin/python -m bench.sandbox [--runs 10] [--sandbox fork|bwrap|none]

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

from executor.runner import protocol
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


CPU_SNIPPETS = {
    "print(1)": "print(1)\n",
    "small jit": "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x * 2 + 1)\nprint(f(jnp.arange(3)))\n",
}


def template_cgroup(launcher):
    template = getattr(launcher, "_template", None)
    return template.cgroup if template is not None else None


def idle_memory(launcher, count: int) -> dict:
    """``count`` warm runners alive at once, idle, as in a pool: each one's smaps_rollup, and
    the template's (what they share) under the fork launcher."""
    runners = []
    try:
        for slot in range(count):
            runner = Runner(proc=launcher.start(slot), slot=slot)
            wait_ready(runner, 120)
            runners.append(runner)
        time.sleep(1.0)
        out = {"runners": [], "shared_kb": 0, "shared_rss_kb": 0}
        for runner in runners:
            pids = sandbox_pids(launcher, runner.proc)
            main_pid = max(pids, key=lambda p: rollup(p)["Rss"])  # the python, not bwrap's two
            out["runners"].append({"runner": rollup(main_pid),
                                   "others_rss_kb": sum(rollup(p)["Rss"] for p in pids if p != main_pid)})
        if (cgroup := template_cgroup(launcher)) is not None:
            for pid in cgroup.pids():
                values = rollup(pid)
                out["shared_kb"] += values["Pss"]
                out["shared_rss_kb"] += values["Rss"]
        return out
    finally:
        for runner in runners:
            discard(runner, launcher)


def cpu_per_run(launcher, code: str, runs: int) -> list[float]:
    """CPU milliseconds of one run from the start of its runner to its exit: the run's cgroup
    (everything the runner did, warm-up included) plus, under the fork launcher, what the
    template spent forking it (its cgroup's counter across the spawn)."""
    out = []
    for _i in range(runs + 1):
        template = template_cgroup(launcher) if launcher.name == "fork" else None
        before = template.cpu_seconds() if template is not None else 0.0
        runner = Runner(proc=launcher.start(0), slot=0)
        try:
            wait_ready(runner, 120)
            finished = supervise(runner, launcher, {"code": code, "options": {}}, launcher.limits, lambda *a, **k: None)
            assert finished["status"] == "succeeded", finished
            run_cpu = launcher.cpu_seconds(runner.proc)
        finally:
            discard(runner, launcher)
        template = template_cgroup(launcher) if launcher.name == "fork" else None
        after = template.cpu_seconds() if template is not None else 0.0
        if run_cpu is not None:
            out.append((run_cpu + after - before) * 1000)
    return out[1:]  # the first may have started the template


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--sandbox", default="fork")
    parser.add_argument("--idle", type=int, default=8, help="idle runners alive at once for the memory figures")
    args = parser.parse_args()
    launcher = get_launcher(args.sandbox, limits=Limits(), uid_base=63000, cpu_devices=8) \
        if args.sandbox != "none" else get_launcher(args.sandbox, limits=Limits(), cpu_devices=8)

    cold, first_byte, memory = [], [], []
    for _i in range(args.runs):
        t0 = time.perf_counter()
        proc = launcher.start(0)
        ready = json.loads(wait_line(proc.event_fd))
        cold.append((time.perf_counter() - t0) * 1000)
        assert ready["type"] == "ready", ready
        time.sleep(0.5)  # idle, as in the pool
        t1 = time.perf_counter()
        proc.stdin.write(protocol.request("run", code="print(1)", options={}, wall_s=30))
        proc.stdin.flush()
        out = os.read(proc.stdout.fileno(), 1)
        first_byte.append((time.perf_counter() - t1) * 1000)
        assert out == b"1", out
        proc.wait(timeout=30)
        discard(Runner(proc=proc, slot=0), launcher)

    memory = idle_memory(launcher, args.idle)
    cpu = {label: cpu_per_run(launcher, code, args.runs) for label, code in CPU_SNIPPETS.items()}

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
    rss = [m["runner"]["Rss"] / 1024 for m in memory["runners"]]
    pss = [m["runner"]["Pss"] / 1024 for m in memory["runners"]]
    private = [(m["runner"]["Private_Clean"] + m["runner"]["Private_Dirty"]) / 1024 for m in memory["runners"]]
    others = [m["others_rss_kb"] / 1024 for m in memory["runners"]]
    print(f"{args.idle} idle warm runners at once:")
    print(f"  RSS of a runner:             median {statistics.median(rss):.1f} MiB")
    print(f"  PSS of a runner:             median {statistics.median(pss):.1f} MiB")
    print(f"  private memory of a runner:  median {statistics.median(private):.1f} MiB")
    print(f"  other processes per runner (bwrap's), RSS: median {statistics.median(others):.1f} MiB")
    shared_mib = memory["shared_kb"] / 1024
    if shared_mib:
        print(f"  the template, PSS beside them: {shared_mib:.1f} MiB (RSS {memory['shared_rss_kb'] / 1024:.1f} MiB)")
    # What one more warm runner costs: its private pages, and under the one-shot sandbox (no
    # template) its share of the libraries too, which PSS splits among the runners alive.
    per_runner = statistics.median(private) if shared_mib else statistics.median(pss)
    node = 24 * 1024
    print(f"  warm runners a 24 GiB node can keep: {int((node - memory['shared_rss_kb'] / 1024) // per_runner)} "
          f"({per_runner:.1f} MiB each{', after the template' if shared_mib else ''})")
    for label, values in cpu.items():
        print(f"CPU per run, start of its runner to its exit, {label}: median {statistics.median(values):.1f} ms "
              f"(min {min(values):.1f}, max {max(values):.1f})")
    print(f"first figure, no font list:    {summary(first_figure[False])}")
    print(f"first figure, worker's list:   {summary(first_figure[True])}")


if __name__ == "__main__":
    main()
