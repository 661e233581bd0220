"""Sharing through the public API: how long saving a snippet and opening its link take.

    python -m bench.sharing                  # starts its own stack
    python -m bench.sharing --url http://127.0.0.1:8000 --n 50

It runs one snippet that prints, jits and draws a figure, shares it with that run, then times
(sequentially, over loopback against daphne): sharing new content, sharing the same content again
(the same link), opening the link's page, the API's view of it with its saved run, and the
notebook download. Opening runs nothing: the run count of the device's queue is checked.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from bench.stack import Stack, own_stack

CODE = ("import jax, jax.numpy as jnp, matplotlib.pyplot as plt\nf = jax.jit(lambda x: jnp.sin(x) * 2)\n"
        "x = jnp.linspace(0, 6, 200)\nprint(f(x)[:4])\nplt.plot(x, f(x))\nplt.show()\n")


def timed(fn, n: int) -> dict:
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - t0) * 1000)
    return {"median_ms": statistics.median(samples), "p95_ms": sorted(samples)[int(0.95 * (n - 1))], "n": n}


def measure(url: str, n: int) -> dict:
    stack = Stack(url=url, env={}, logdir=Path("."))
    status, run = stack.post("/api/runs", {"code": CODE})
    assert status == 201, run
    finished = stack.wait_finished(run["id"], timeout=120)
    assert finished["status"] == "succeeded", finished["message"]
    status, shared = stack.post("/api/snippets", {"code": CODE, "title": "Sine", "run": run["id"]})
    assert status in (200, 201), shared
    slug = shared["slug"]
    before = stack.get("/api/devices")["devices"][0]["queue_depth"]

    def get(path: str) -> int:
        with urllib.request.urlopen(url + path, timeout=30) as r:
            return len(r.read())

    stamp = time.time()
    out = {
        "share new content": timed(lambda i: stack.post("/api/snippets", {"code": f"# {stamp} {i}\nprint({i})"}), n),
        "share the same content again": timed(lambda i: stack.post("/api/snippets", {"code": CODE, "title": "Sine",
                                                                                     "run": run["id"]}), n),
        "open the link (/s/<slug>)": timed(lambda i: get(f"/s/{slug}"), n),
        "the API with the saved run": timed(lambda i: get(f"/api/snippets/{slug}"), n),
        "the notebook (.ipynb)": timed(lambda i: get(f"/s/{slug}.ipynb"), n),
    }
    out["sizes"] = {"page_bytes": get(f"/s/{slug}"), "api_bytes": get(f"/api/snippets/{slug}"),
                    "ipynb_bytes": get(f"/s/{slug}.ipynb"), "events": len(finished["events"])}
    after = stack.get("/api/devices")["devices"][0]["queue_depth"]
    out["queue_depth_before_after"] = [before, after]
    for label, figures in out.items():
        if isinstance(figures, dict) and "median_ms" in figures:
            print(f"  {label:32} median {figures['median_ms']:6.1f} ms   p95 {figures['p95_ms']:6.1f} ms", flush=True)
    print(f"  sizes: {out['sizes']}; queue depth before/after opening: {before}/{after}", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.url:
        results = measure(args.url, args.n)
    else:
        with own_stack("sharing") as stack:
            stack.wait_online()
            results = measure(stack.url, args.n)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
