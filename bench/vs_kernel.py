"""The playground against what a person would use instead on their own machine: a warm local
Jupyter kernel (ipykernel through jupyter_client) with jax imported, interleaved in one run.

    .venv/bin/python -m bench.vs_kernel [--samples 30] [--burst 200] [--class-size 30]

For each sample, in turn: `print(1)` in the kernel, then through the playground; the small `jit`
in the kernel, then through the playground. The kernel's time is from the execute request to its
reply with the output received (`execute_interactive`); the playground's from `POST /api/runs`
to the run's `finished` on its websocket (bench.latency's client, as a page follows a run), on
its own stack (daphne, Redis, the recorder, one CPU executor with 2 slots). Each small `jit`
defines a new jitted function, so both compile it every time; the kernel's CPU backend started
with its first sample, the playground's starts in each run's fresh runner. Then, on the same
stack, a burst (`--burst` `print(1)` at once) and a class (`--class-size` small `jit` at once).
Medians and ratios are printed, and written as JSON with `--json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from bench.latency import burst, one_run, percentile
from bench.stack import own_stack

PRINT = "print(1)\n"
# The small jit: compiled anew each time, on 8×8, printed.
JIT = "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)\nprint(f(jnp.ones((8, 8))).sum())\n"


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


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "p90": percentile(values, 90), "n": len(values)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--class-size", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    kernel = Kernel()
    times: dict[tuple[str, str], list[float]] = {(w, s): [] for w in ("kernel", "playground")
                                                 for s in ("print(1)", "small jit")}
    try:
        with own_stack("vs-kernel") as stack:
            stack.wait_online()
            for code in (PRINT, JIT, PRINT, JIT):  # warm both: the pool, the web side, the kernel
                asyncio.run(one_run(stack.url, code))
                kernel.run(code)
            for _ in range(args.samples):
                for label, code in (("print(1)", PRINT), ("small jit", JIT)):
                    took, printed = kernel.run(code)
                    assert printed.strip(), printed
                    times[("kernel", label)].append(took)
                    run = asyncio.run(one_run(stack.url, code))
                    assert run["status"] == "succeeded", run
                    times[("playground", label)].append(run["total_ms"])
                    time.sleep(0.1)  # the executor's pool refills the runner this run used
            time.sleep(2)
            burst_result = asyncio.run(burst(stack.url, args.burst, PRINT))
            time.sleep(2)
            class_result = asyncio.run(burst(stack.url, args.class_size, JIT))
    finally:
        kernel.stop()
    out = {f"{where} {label}": summary(values) for (where, label), values in times.items()}
    print(f"{'':12} {'warm kernel':>12} {'playground':>12} {'ratio':>7}   (medians of {args.samples}, interleaved)")
    for label in ("print(1)", "small jit"):
        k, p = out[f"kernel {label}"]["median"], out[f"playground {label}"]["median"]
        out[f"ratio {label}"] = p / k
        print(f"{label:12} {k:10.1f} ms {p:10.1f} ms {p / k:6.1f}×")
    print(f"{args.burst} print(1) at once: {burst_result['runs_per_s']:.1f} runs/s, {burst_result['statuses']}")
    print(f"{args.class_size} small jit at once: the last finished after {class_result['elapsed_s']:.2f} s, "
          f"{class_result['statuses']}")
    out["burst"], out["class"] = burst_result, class_result
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
