"""How fast the editor's analysis answers, from outside, as the page asks it: completion,
signature help and hover through daphne to the analysers on the executor node and back, idle and
while a class of 30 runs executes; the first answer after the analysers start; their memory.

    .venv/bin/python -m bench.analyse                 # 40 samples of each, idle and under the class
    .venv/bin/python -m bench.analyse --samples 20

Its own stack (bench.stack.own_stack) with the executor's two analyser processes and two runners.
A sample is one ``POST /api/analyse`` (the time from the request to the parsed answer: what a
keystroke waits for before Monaco draws the list). The class is 30 clients posting the small
``jit`` snippet at once; its samples are taken while those runs are queued or running.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.stack import Stack, own_stack

HEAD = "import jax\nimport jax.numpy as jnp\nimport optax\n"
# (op, code, line, column): what people type, in turn.
ASKS = [
    ("complete", HEAD + "jnp.ein", 4, 8),
    ("complete", HEAD + "jax.random.nor", 4, 15),
    ("complete", HEAD + "x = jnp.ones((3, 3))\nx.res", 5, 6),
    ("complete", HEAD + "optax.ad", 4, 9),
    ("complete", HEAD + "jax.", 4, 5),
    ("signatures", HEAD + "jnp.einsum('ij,jk', ", 4, 21),
    ("hover", HEAD + "jnp.einsum", 4, 6),
]
CLASS_CODE = "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)\nprint(f(jnp.ones((8, 8))))"


def ask(stack: Stack, op: str, code: str, line: int, column: int, seq: int) -> tuple[float, bool]:
    t0 = time.perf_counter()
    status, answer = stack.post("/api/analyse", {"op": op, "code": code, "line": line, "column": column,
                                                 "seq": seq, "editor": f"bench-{seq}"})
    ms = (time.perf_counter() - t0) * 1000
    good = status == 200 and not answer.get("error") and bool(answer.get("items") or answer.get("signatures")
                                                              or answer.get("doc"))
    if not good and os.environ.get("BENCH_VERBOSE"):
        print(op, status, str(answer)[:200])
    return ms, good


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))], 1)


def sample(stack: Stack, n: int, start: int = 0) -> dict[str, dict]:
    by_op: dict[str, list[float]] = {}
    failed = 0
    for i in range(n):
        for j, (op, code, line, column) in enumerate(ASKS):
            ms, good = ask(stack, op, code, line, column, start + i * len(ASKS) + j)
            failed += not good
            by_op.setdefault(op, []).append(ms)
    return {op: {"median": round(statistics.median(v), 1), "p95": pct(v, 95), "n": len(v)}
            for op, v in by_op.items()} | {"failed": failed}


def analyser_memory_mb() -> list[float]:
    found = subprocess.run(["pgrep", "-f", "[-]m executor[.]analyser$"], capture_output=True, text=True).stdout.split()
    sizes = []
    for pid in found:
        try:
            pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, ValueError):
            continue
        sizes.append(round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20))
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    args = parser.parse_args()
    with own_stack("analyse", ANALYSER_PROCESSES="2", ANALYSE_RATE_LIMIT_PER_MINUTE="0",
                   EXECUTOR_CONCURRENCY="2") as stack:
        stack.wait_online()
        t0 = time.monotonic()
        while True:  # the analysers warm up (import the libraries, fill jedi's caches)
            status, answer = stack.post("/api/analyse", {"op": "complete", "code": "x", "line": 1, "column": 2})
            if status == 200 and "items" in answer:
                break
            time.sleep(0.5)
        ready_s = time.monotonic() - t0
        first = {op: round(ask(stack, op, code, line, column, 10**6 + i)[0], 1)
                 for i, (op, code, line, column) in enumerate(ASKS[:1] + ASKS[4:])}
        idle = sample(stack, args.samples)
        memory = analyser_memory_mb()
        with ThreadPoolExecutor(30) as pool:
            runs = list(pool.map(lambda i: stack.post_as(None, "/api/runs", {"code": CLASS_CODE})[1].get("id"),
                                 range(30)))
            busy = sample(stack, max(args.samples // 4, 5), start=10**5)
        ended = 0
        for run_id in runs:
            if run_id and stack.wait_finished(run_id, timeout=120)["status"] == "succeeded":
                ended += 1
    print(json.dumps({"ready_after_s": round(ready_s, 1), "first_ms": first, "idle": idle, "class": busy,
                      "class_runs_succeeded": ended, "analyser_rss_mb": memory,
                      "load_average": round(os.getloadavg()[0], 1)}, indent=2))
    print("\n| op | first after start | idle median / p95 | during a class of 30 runs, median / p95 |")
    print("|---|---:|---:|---:|")
    for op in ("complete", "signatures", "hover"):
        print(f"| {op} | {first.get(op, '-')} ms | {idle[op]['median']} / {idle[op]['p95']} ms | "
              f"{busy[op]['median']} / {busy[op]['p95']} ms |")
    print(f"\nanalysers ready {ready_s:.1f} s after the executor was online; memory {memory} MB; "
          f"failed answers {idle['failed']} idle, {busy['failed']} during the class ({ended}/30 runs succeeded)")


if __name__ == "__main__":
    main()
