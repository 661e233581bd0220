"""The playground against what a person would use instead on their own machine: a warm local
Jupyter kernel (ipykernel through jupyter_client) with jax imported, interleaved in one run.

    .venv/bin/python -m bench.vs_kernel [--samples 30] [--burst 200] [--class-size 30] [--ways page,POST]

For each sample, in turn: `print(1)` in the kernel, then through the playground; the small `jit`
in the kernel, then through the playground. The kernel's time is from the execute request to its
reply with the output received (`execute_interactive`). The playground's is measured two ways,
on its own stack (daphne, its own Redis, the recorder, one CPU executor with 2 slots):

- **page**: as the page starts a run, on the run socket it opened beforehand (`/ws/runs/new/`),
  from sending the code to the run's `finished` on that socket;
- **POST**: as a script does, from `POST /api/runs` to `finished` on the run's own websocket.

Each small `jit` defines a new jitted function, so the kernel compiles it every time; the
playground loads what its node compiled for the earlier samples (its compile cache), as the
kernel keeps its eager operations compiled. The "edited jit" has a constant of its own each
sample, so both compile the function anew. The kernel's CPU backend started with its first
sample, the playground's in a runner the idle node warmed (or, in a burst, in the run's own
runner). Then, on the same stack, a burst (`--burst` `print(1)` at once), a class
(`--class-size` small `jit` at once: the code the samples ran) and a new class (`--class-size`
copies of a `jit` no run compiled before), each started as pages start them (every socket opened
first) and as scripts do (`--ways`); with each burst, the CPU time
every process of the stack spent per run (web, recorder, the executor with its template and
runners, Redis). Medians and ratios are printed, and written as JSON with `--json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from bench import recorded
from bench.latency import burst, one_run, percentile, socket_run
from bench.stack import RedisServer, own_stack

BENCH = "bench.vs_kernel"
PRINT = "print(1)\n"
# The small jit: compiled anew each time, on 8×8, printed.
JIT = "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)\nprint(f(jnp.ones((8, 8))).sum())\n"
# The same with a constant of its own each time: the function edited between runs, new to the
# node's compile cache and to the kernel's (only its eager operations were compiled before).
EDITED = JIT.replace("+ 1)", "+ {n})")


class Kernel:
    """A local ipykernel, started once and warmed (jax imported, its backend started)."""

    def __init__(self) -> None:
        from jupyter_client.manager import KernelManager

        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel()
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.run("import jax, jax.numpy as jnp\n")

    def run(self, code: str) -> tuple[float, str]:
        """Run ``code``: how long until its reply (ms), and what it printed."""
        printed: list[str] = []

        def output(message) -> None:
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])

        t0 = time.perf_counter()
        reply = self.client.execute_interactive(code, timeout=120, output_hook=output)
        took = (time.perf_counter() - t0) * 1000
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"the kernel failed: {reply['content']}")
        return took, "".join(printed)

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def _tree(pid: int) -> list[int]:
    """``pid`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def cpu_s(pid: int) -> float:
    """CPU seconds of a process tree so far: its live processes and the children they reaped."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / tick


def own_cpu_s(pid: int) -> float:
    """CPU seconds of one process alone, its threads and none of its children."""
    import os

    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_by_process(stack, redis: RedisServer) -> dict[str, float]:
    pids = {name: proc.pid for name, proc in stack.procs.items()}
    pids["redis"] = redis.proc.pid
    return {name: cpu_s(pid) for name, pid in pids.items()}


def settle(stack, redis, quiet_ms: float = 50.0, limit_s: float = 90.0) -> float:
    """Wait until the stack spends under ``quiet_ms`` of CPU in a second: the pool refilled and
    warmed, the recorder caught up, and the compile jobs the samples' runs left (the edited
    ``jit``'s modules, compiled for the node's cache while it is idle) done. Returns the wait."""
    t0 = time.monotonic()
    time.sleep(2)
    while time.monotonic() - t0 < limit_s:
        before = sum(cpu_by_process(stack, redis).values())
        time.sleep(1.0)
        if (sum(cpu_by_process(stack, redis).values()) - before) * 1000 < quiet_ms:
            break
    return time.monotonic() - t0


def measured_burst(stack, redis, count: int, code: str, sockets: bool) -> dict:
    """A burst from a settled stack, and the CPU each process spent on it per run (ms)."""
    settled_s = settle(stack, redis)
    before = cpu_by_process(stack, redis)
    worker_before = own_cpu_s(stack.procs["executor"].pid)
    result = asyncio.run(burst(stack.url, count, code, sockets=sockets))
    time.sleep(3)  # what the runs left to do: the recorder's last batches, the pool's refill
    after = cpu_by_process(stack, redis)
    result["cpu_ms_per_run"] = {name: (after[name] - before[name]) * 1000 / count for name in before}
    result["cpu_ms_per_run"]["all"] = sum(result["cpu_ms_per_run"].values())
    # The executor's own process (its threads: the runs' supervision, the relay, the pool), apart
    # from the template and the runners it forks, which the executor's figure includes.
    result["executor_process_ms_per_run"] = (own_cpu_s(stack.procs["executor"].pid) - worker_before) * 1000 / count
    result["settled_s"] = round(settled_s, 1)
    return result


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "p90": percentile(values, 90), "n": len(values)}


def bursts_only(repeats: int, count: int) -> int:
    """Bursts alone, to compare two checkouts alternated: the stack started, warmed with a few
    runs and a small burst, then ``repeats`` measured bursts of ``count`` print(1) from the page."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        redis = RedisServer(Path(tmp))
        redis.start()
        try:
            with own_stack("vs-kernel", redis_url=redis.url) as stack:
                stack.wait_online()
                for _ in range(4):
                    asyncio.run(socket_run(stack.url, PRINT))
                asyncio.run(burst(stack.url, 50, PRINT, sockets=True))
                for _ in range(repeats):
                    b = measured_burst(stack, redis, count, PRINT, True)
                    cpu = ", ".join(f"{k} {v:.1f}" for k, v in b["cpu_ms_per_run"].items())
                    print(f"{count} print(1) at once: {b['runs_per_s']:.1f} runs/s, {b['statuses']}; "
                          f"CPU ms per run: {cpu} (the executor's own process "
                          f"{b['executor_process_ms_per_run']:.1f})", flush=True)
                    print(f"  runs/s {recorded.beside(BENCH, 'burst page runs/s', b['runs_per_s'])}, CPU ms "
                          f"{recorded.beside(BENCH, 'burst page CPU all ms', b['cpu_ms_per_run']['all'])}")
        finally:
            redis.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--class-size", type=int, default=30)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", action="store_true", help="print the block that records these figures")
    parser.add_argument("--ways", default="page,POST",
                        help="how runs start: page (on a run socket), POST (as scripts), or both")
    parser.add_argument("--bursts-only", type=int, metavar="N",
                        help="no kernel and no samples: N bursts of print(1) from the page on one stack")
    args = parser.parse_args()
    if args.bursts_only:
        return bursts_only(args.bursts_only, args.burst)
    ways = [w for w in args.ways.split(",") if w in ("page", "POST")]
    kernel = Kernel()
    labels = ("print(1)", "small jit", "edited jit")
    times: dict[tuple[str, str], list[float]] = {(w, s): [] for w in ("kernel", *ways) for s in labels}
    bursts: dict[str, dict] = {}
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        redis = RedisServer(Path(tmp))  # the stack's own: its CPU is the stack's alone
        redis.start()
        try:
            with own_stack("vs-kernel", redis_url=redis.url) as stack:
                stack.wait_online()
                for code in (PRINT, JIT, PRINT, JIT):  # warm all: the pool, the web side, the kernel
                    for way in ways:
                        asyncio.run(socket_run(stack.url, code) if way == "page" else one_run(stack.url, code))
                    kernel.run(code)
                for i in range(args.samples):
                    codes = (PRINT, JIT, EDITED.format(n=i + 2))
                    for label, code in zip(labels, codes, strict=True):
                        took, printed = kernel.run(code)
                        assert printed.strip(), printed
                        times[("kernel", label)].append(took)
                        for way in ways:
                            time.sleep(0.1)  # the executor's pool refills (and warms) the runner a run used
                            started = socket_run(stack.url, code) if way == "page" else one_run(stack.url, code)
                            run = asyncio.run(started)
                            assert run["status"] == "succeeded", run
                            times[(way, label)].append(run["total_ms"])
                for way in ways:
                    bursts[f"burst {way}"] = measured_burst(stack, redis, args.burst, PRINT, way == "page")
                    bursts[f"class {way}"] = measured_burst(stack, redis, args.class_size, JIT, way == "page")
                    new = EDITED.format(n=1000 + len(bursts))  # compiled by no run before
                    bursts[f"new class {way}"] = measured_burst(stack, redis, args.class_size, new, way == "page")
        finally:
            kernel.stop()
            redis.stop()
    out = {f"{where} {label}": summary(values) for (where, label), values in times.items()}
    print(f"{'':12} {'warm kernel':>12} " + " ".join(f"{'playground (' + w + ')':>20} {'ratio':>6}" for w in ways)
          + f"   (medians of {args.samples}, interleaved)")
    for label in labels:
        k = out[f"kernel {label}"]["median"]
        cells = []
        for way in ways:
            p = out[f"{way} {label}"]["median"]
            out[f"ratio {way} {label}"] = p / k
            cells.append(f"{p:17.1f} ms {p / k:5.1f}×")
        print(f"{label:12} {k:9.1f} ms " + " ".join(cells))
    for name, b in bursts.items():
        what = f"{args.burst} print(1)" if name.startswith("burst") else f"{args.class_size} small jit"
        what += " (new)" if name.startswith("new") else ""
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in b["cpu_ms_per_run"].items())
        print(f"{name:12} {what} at once: {b['runs_per_s']:.1f} runs/s, the last after {b['elapsed_s']:.2f} s, "
              f"{b['statuses']}; CPU ms per run: {cpu} (after {b['settled_s']:.0f} s settling)")
    out.update(bursts)
    figures = {f"{key} median ms": out[key]["median"] for key in out
               if isinstance(out[key], dict) and "median" in out[key] and not key.startswith(("burst", "class", "new"))}
    figures.update({key: out[key] for key in out if key.startswith("ratio ")})
    for name, b in bursts.items():
        figures[f"{name} runs/s"] = b["runs_per_s"]
        figures[f"{name} CPU all ms"] = b["cpu_ms_per_run"]["all"]
    recorded.report(BENCH, figures, 2)
    if args.record:
        print("\n" + recorded.table(BENCH, figures, 2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
