"""What the runner reports about JAX, checked against ground truth, in the real sandbox.

    python -m bench.jaxruns [--size 4000] [--repeats 5]

1. Timing fidelity: ``jaxplay.bench`` of the article's ``fn`` under ``jit`` in a run, against
   a bare ``timeit`` loop with ``block_until_ready`` in a plain Python process on the same
   machine, alternating, with the same number of simulated CPU devices (8, as in runs).
2. Overhead of compile capture: a snippet that compiles 20 small functions, run with capture on
   and off (the run option ``capture``), wall time of each run.
3. The article's speed test as the playground reports it: the gallery's first example, run as
   shipped (``%timeit`` lines and the four-way ``jaxplay.compare``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

from executor.local import run_local
from executor.sandbox import Limits, get_launcher

ROOT = Path(__file__).resolve().parent.parent
FN = "def fn(x):\n    return x + x*x + x*x*x\n"


def plain_process_median_ms(size: int, repeats: int) -> float:
    """A bare timeit loop, as a careful person would write it, outside the playground."""
    code = textwrap.dedent(f"""\
        import json, statistics, timeit
        import jax
        jax.config.update("jax_num_cpu_devices", 8)
        import jax.numpy as jnp
        {FN.replace(chr(10), chr(10) + '        ')}
        f = jax.jit(fn)
        x = jnp.asarray(__import__("numpy").random.randn({size}, {size}).astype("float32"))
        f(x).block_until_ready()
        t = timeit.Timer(lambda: f(x).block_until_ready())
        number, _ = t.autorange()
        runs = [s / number * 1000 for s in t.repeat(repeat={repeats}, number=number)]
        print(json.dumps(statistics.median(runs)))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def playground_median_ms(launcher, size: int, repeats: int) -> float:
    code = textwrap.dedent(f"""\
        import jax, jax.numpy as jnp, numpy as np, jaxplay
        {FN.replace(chr(10), chr(10) + '        ')}
        x = jnp.asarray(np.random.randn({size}, {size}).astype("float32"))
        jaxplay.bench(jax.jit(fn), x, repeats={repeats}, quiet=True)
        """)
    events = run_local(code, launcher=launcher)
    assert events[-1]["status"] == "succeeded", events[-1]
    timing = next(e for e in events if e["type"] == "timing")
    return timing["median_ms"]


def capture_overhead(launcher, runs: int) -> dict:
    code = "import jax, jax.numpy as jnp\nx = jnp.ones((64, 64))\n" + "".join(
        f"def f{i}(x):\n    return jnp.tanh(x @ x + {i})\njax.jit(f{i})(x).block_until_ready()\n"
        for i in range(20))
    walls: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(runs):
        for mode, options in (("on", {}), ("off", {"capture": False})):
            events = run_local(code, launcher=launcher, options=options)
            assert events[-1]["status"] == "succeeded", events[-1]
            compiled = sum(e["type"] == "compiled" for e in events)
            assert compiled == (20 if mode == "on" else 0), (mode, compiled)
            walls[mode].append(events[-1]["wall_ms"])
    on, off = statistics.median(walls["on"]), statistics.median(walls["off"])
    return {"on_ms": on, "off_ms": off, "per_function_ms": (on - off) / 20, "overhead": on / off - 1}


def speed_test(launcher) -> list[dict]:
    code = (ROOT / "playground" / "examples" / "01-speed-test.py").read_text()
    events = run_local(code, launcher=launcher)
    assert events[-1]["status"] == "succeeded", events[-1]
    comparison = next(e for e in events if e["type"] == "timing" and e.get("kind") == "comparison")
    timeits = [e for e in events if e["type"] == "timing" and e.get("kind") == "timeit"]
    return [{"label": t["label"], "median_ms": t["median_ms"], "source": "%timeit"} for t in timeits] + [
        {"label": r["label"], "median_ms": r["median_ms"], "speedup": r.get("speedup"),
         "gbs": r.get("gbs"), "source": "jaxplay.compare"} for r in comparison["rows"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=5, help="alternating pairs for fidelity")
    parser.add_argument("--sandbox", default="fork", choices=("fork", "bwrap", "none"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    launcher = get_launcher(args.sandbox, limits=Limits(wall_s=120), cpu_devices=8)
    results: dict = {}

    print(f"1. timing fidelity, jit(fn) at {args.size}x{args.size} float32, 8 CPU devices", flush=True)
    plain, play = [], []
    for _ in range(args.repeats):
        plain.append(plain_process_median_ms(args.size, 7))
        play.append(playground_median_ms(launcher, args.size, 7))
    p, q = statistics.median(plain), statistics.median(play)
    results["fidelity"] = {"plain_ms": plain, "playground_ms": play, "ratio": q / p}
    print(f"   plain process timeit median {p:.2f} ms   jaxplay.bench median {q:.2f} ms   "
          f"ratio {q / p:.3f} ({(q / p - 1) * 100:+.1f} %)", flush=True)

    print("2. compile capture overhead, 20 small jitted functions", flush=True)
    results["capture"] = c = capture_overhead(launcher, args.repeats)
    print(f"   run wall median: capture on {c['on_ms']:.0f} ms, off {c['off_ms']:.0f} ms: "
          f"+{c['per_function_ms']:.1f} ms a function ({c['overhead'] * 100:+.1f} %)", flush=True)

    print("3. the article's speed test, gallery example 01 as shipped (4000x4000)", flush=True)
    results["speed_test"] = rows = speed_test(launcher)
    for r in rows:
        extra = f"  x{r['speedup']:.2f}" if r.get("speedup") else ""
        print(f"   {r['source']:16} {r['label'][:40]:40} {r['median_ms']:9.2f} ms{extra}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
