"""What each runtime costs and how fast it runs: disk, the runner template's memory (RSS as it
says, and PSS: its share of pages it shares with no one else here), each warm runner's PSS (a
runner forked and ready, waiting for code, with the process it was forked through; the pages it
shares with its template are divided between them), and warm `print(1)` and small-`jit` latency
through the real supervisor and fork sandbox (one warm runner forked per run, as a worker does),
interleaved across runtimes in one run. Run as root (PSS is read from /proc/<pid>/smaps_rollup).

    .venv/bin/python -m bench.runtimes [--samples 15]

The build time of a fresh node is `python -m executor.runtimes build` into an empty folder
with uv's cache emptied (`uv cache clean`); it is printed by that command, not here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from executor import runtimes
from executor.local import run_local
from executor.sandbox import Limits, get_launcher
from executor.supervisor import Runner, wait_ready

WARM = 2  # warm runners measured per runtime, as a worker's pool keeps them

PRINT = "print(1)\n"
JIT = "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)\nprint(f(jnp.ones((8, 8))).sum())\n"


def disk_mb(path) -> float:
    out = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("PPid:"))


def pss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Pss:"))


def template_pid(launcher) -> int:
    """The template's interpreter: the child of its bwrap wrapper."""
    wrapper = launcher.template().proc.pid
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _ppid(int(entry)) == wrapper:
            return int(entry)
    raise RuntimeError("the template's process was not found")


def warm_memory(launcher) -> tuple[float, list[float]]:
    """PSS in MB of the template and of each of WARM runners forked and ready (a runner with the
    process between it and the template, which it was forked through)."""
    template = template_pid(launcher)
    runners = [Runner(proc=launcher.start(slot), slot=slot) for slot in range(WARM)]
    try:
        for runner in runners:
            wait_ready(runner, 120)
        time.sleep(0.5)
        each = []
        for runner in runners:
            chain, pid = [], runner.proc.sandbox_runner_pid
            while pid != template:
                chain.append(pid)
                pid = _ppid(pid)
            each.append(sum(pss_kb(p) for p in chain) / 1024)
        return pss_kb(template) / 1024, each
    finally:
        for runner in runners:
            launcher.cleanup(runner.proc)
            runner.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=15)
    args = parser.parse_args()
    catalog = runtimes.catalog()
    launchers = {}
    for i, rt in enumerate(catalog.runtimes.values()):
        launcher = get_launcher("fork", limits=Limits(wall_s=60), cpu_devices=8, uid_base=63000 + 100 * i,
                                venv=str(runtimes.environment(rt)))
        launcher.prepare()
        launchers[rt.id] = launcher
    times: dict[tuple[str, str], list[float]] = {(rid, k): [] for rid in launchers for k in ("print", "jit")}
    for _ in range(args.samples):
        for rid, launcher in launchers.items():
            for kind, code in (("print", PRINT), ("jit", JIT)):
                t0 = time.perf_counter()
                events = run_local(code, launcher=launcher)
                took = (time.perf_counter() - t0) * 1000
                assert events[-1]["status"] == "succeeded", events
                times[(rid, kind)].append(took)
    memory = {rid: warm_memory(launcher) for rid, launcher in launchers.items()}
    print(f"{'runtime':14} {'jax':9} {'disk MB':>8} {'template RSS MB':>16} {'template PSS MB':>16} "
          f"{'warm runner PSS MB':>19} {'print(1) ms':>12} {'jit ms':>8}")
    for rid, launcher in launchers.items():
        rt = catalog.runtimes[rid]
        env = runtimes.environment(rt)
        rss = launcher.template().info.get("template_rss_kb", 0) / 1024
        template_pss, runners = memory[rid]
        print(f"{rid:14} {rt.jax:9} {disk_mb(env):8.0f} {rss:16.0f} {template_pss:16.0f} "
              f"{' / '.join(f'{r:.1f}' for r in runners):>19} "
              f"{statistics.median(times[(rid, 'print')]):12.1f} {statistics.median(times[(rid, 'jit')]):8.1f}")
    for launcher in launchers.values():
        launcher.close()
    print(f"(medians of {args.samples} runs each, interleaved; end to end through the supervisor: fork, "
          f"code in, output out; pid {os.getpid()})")


if __name__ == "__main__":
    main()
