"""What a comparison costs a person against one run, through the real stack (daphne, Redis, the
recorder, one worker of the default runtime and one of JAX 0.4.38, each with one slot): from
POST to the last ``finished`` over plain websockets, for a single run on each runtime and for a
comparison of the two (POST /api/comparisons, both sockets followed at once), interleaved, with
the small `jit` snippet. A comparison's two runs go to two workers, so it should take about as
long as the slower of its two runs, not their sum.

    .venv/bin/python -m bench.comparisons [--samples 10]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from executor import runtimes

from .stack import own_stack

OLD = "jax-0.4.38"
JIT = "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)\nprint(f(jnp.ones((8, 8))).sum())\n"


def follow(stack, run_ids: list[str]) -> list[str]:
    """Each run's socket at once, to its end: the statuses."""
    statuses = [""] * len(run_ids)

    def one(i: int) -> None:
        statuses[i] = stack.watch(run_ids[i], timeout=120).events[-1].get("status", "")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(run_ids))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def single(stack, runtime: str) -> float:
    t0 = time.perf_counter()
    status, run = stack.post("/api/runs", {"code": JIT, "runtime": runtime})
    assert status == 201, run
    assert follow(stack, [run["id"]]) == ["succeeded"]
    return (time.perf_counter() - t0) * 1000


def comparison(stack) -> float:
    t0 = time.perf_counter()
    sides = [{"runtime": OLD}, {"runtime": runtimes.FIRST}]
    status, made = stack.post("/api/comparisons", {"code": JIT, "sides": sides})
    assert status == 201, made
    assert follow(stack, [side["run"]["id"] for side in made["sides"]]) == ["succeeded", "succeeded"]
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10)
    args = parser.parse_args()
    with own_stack("comparisons", EXECUTOR_CONCURRENCY="1", EXECUTOR_POOL_SIZE="1") as stack:
        stack.start_executor("old-jax", EXECUTOR_RUNTIME=OLD, EXECUTOR_CONCURRENCY="1", EXECUTOR_POOL_SIZE="1")
        stack.wait_online()
        stack.wait_runtime(OLD)
        for _ in range(2):  # warm both workers' pools and the web side
            comparison(stack)
        times: dict[str, list[float]] = {"new": [], "old": [], "both": []}
        for _ in range(args.samples):
            times["new"].append(single(stack, runtimes.FIRST))
            times["old"].append(single(stack, OLD))
            times["both"].append(comparison(stack))
            time.sleep(0.2)  # each worker's pool refills its runner
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{'what':44} {'median ms':>10} {'p90 ms':>8}")
    for key, label in (("new", f"one run on {runtimes.FIRST}"), ("old", f"one run on {OLD}"),
                       ("both", "a comparison of the two (both finished)")):
        p90 = sorted(times[key])[int(0.9 * (len(times[key]) - 1))]
        print(f"{label:44} {med[key]:10.0f} {p90:8.0f}")
    slower = max(med["new"], med["old"])
    print(f"comparison / slower single run: {med['both'] / slower:.2f}; "
          f"/ the two one after the other: {med['both'] / (med['new'] + med['old']):.2f}")
    print(f"(the small jit snippet; {args.samples} samples of each, interleaved; POST to the last finished over "
          f"websockets; one worker of each runtime, one slot each)")


if __name__ == "__main__":
    main()
