"""What each runtime costs and how fast it runs: disk, the runner template's memory, and warm
`print(1)` and small-`jit` latency through the real supervisor and fork sandbox (one warm
runner forked per run, as a worker does), interleaved across runtimes in one run.

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

PRINT = "print(1)\n"
JIT = "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)\nprint(f(jnp.ones((8, 8))).sum())\n"


def disk_mb(path) -> float:
    out = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


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
    print(f"{'runtime':14} {'jax':9} {'disk MB':>8} {'template RSS MB':>16} {'print(1) ms':>12} {'jit ms':>8}")
    for rid, launcher in launchers.items():
        rt = catalog.runtimes[rid]
        env = runtimes.environment(rt)
        rss = launcher.template().info.get("template_rss_kb", 0) / 1024
        print(f"{rid:14} {rt.jax:9} {disk_mb(env):8.0f} {rss:16.0f} "
              f"{statistics.median(times[(rid, 'print')]):12.1f} {statistics.median(times[(rid, 'jit')]):8.1f}")
    for launcher in launchers.values():
        launcher.close()
    print(f"(medians of {args.samples} runs each, interleaved; end to end through the supervisor: fork, "
          f"code in, output out; pid {os.getpid()})")


if __name__ == "__main__":
    main()
