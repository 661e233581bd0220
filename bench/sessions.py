"""Notebook sessions: what keeping a session's state buys and what it costs, on the playground's
own stack (daphne, its own Redis, the recorder, one CPU executor with 2 slots, SQLite), as a
script uses the API (POST, then the run's own websocket), interleaved in one run.

    .venv/bin/python -m bench.sessions [--samples 10] [--idle-sessions 6] [--node-gib 24] [--json out.json]

1. **A second cell calling a jitted function the first defined.** Each sample: a warm local Jupyter
   kernel (ipykernel through jupyter_client, jax imported, the first cell already executed) runs
   cell 2; a new session runs cell 1 (not timed), then cell 2 twice, timed, in turn first: posted
   (from ``POST .../cells`` to ``finished`` on the run's websocket) and sent on the session's own
   websocket, open beforehand as the notebook page holds it (from sending ``{"op": "cell"}`` to
   ``finished`` on that socket), and is deleted; then the two cells as one
   snippet through ``POST /api/runs`` (to ``finished``), once with a function no run compiled
   before and once with the one the node compiled for the warm-up (its compile cache). Cell 1
   defines ``f = jax.jit(lambda x: x @ x.T + c)`` on a 256×256 array, with a constant ``c`` of
   the sample's own (a new function for the kernel, the session and the first snippet alike);
   cell 2 calls ``f`` on new data of the same shape. The ``compiled`` events of the session's
   cell 2 are counted (0: it called what cell 1 compiled).
2. **Restoring a 20-cell notebook.** A notebook of 20 cells (imports, data, an MLP, its loss and
   ``jax.grad``, a few training steps, ``vmap``, ``lstsq``, ``lax.scan``, prints) run in a new
   session, cold (no run compiled any of it before); the session deleted, the node left to go
   idle (its compile jobs for the modules the cells reported run then), and the same 20 cells run
   in a new session again, as a restore does. The total (the first POST to the last ``finished``,
   cells one after the other), the per-cell median, and how many ``compiled`` events said
   ``cached: true`` (loaded from the node's compile cache rather than compiled).
3. **Memory held per idle session.** The node's own memory first (the executor's worker process,
   and the sandboxes' cgroups: the runner template and the pool's warm runners), then K sessions
   each having run one cell (jax imported, a small array made), idle: what each one's
   ``GET /api/sessions/<id>`` says (``memory_bytes``, its runner's resident set, which counts the
   pages it shares with the template), its sandbox cgroup's charge (``memory.usage_in_bytes`` on
   cgroup v1, ``memory.current`` on v2: the pages the session itself brought in) and the PSS of
   its processes (shared pages divided among those sharing them). How many idle sessions a node of
   ``--node-gib`` holds = (that memory - the node's own) / one session's, by each measure.

Medians and ratios are printed, and everything measured written as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench import recorded
from bench.latency import percentile
from bench.stack import RedisServer, Stack, own_stack
from bench.vs_kernel import Kernel, settle

BENCH = "bench.sessions"
SIDE = 256
# Cell 1: a jitted function with a constant of its own ({c}), called once; cell 2: called again
# on new data of the same shape (every operation of cell 2 was compiled by cell 1).
CELL1 = ("import jax, jax.numpy as jnp\n"
         "f = jax.jit(lambda x: x @ x.T + {c})\n"
         f"x = jax.random.normal(jax.random.PRNGKey(0), ({SIDE}, {SIDE}))\n"
         "print(f(x)[0, 0])\n")
CELL2 = (f"x = jax.random.normal(jax.random.PRNGKey(1), ({SIDE}, {SIDE}))\n"
         "print(f(x)[0, 0])\n")
KNOWN_C = 1  # the snippet the warm-up ran: its function is in the node's compile cache

NOTEBOOK = [
    "import jax\nimport jax.numpy as jnp\nimport numpy as np\nprint(jax.__version__, jax.devices())\n",
    "key = jax.random.PRNGKey(42)\nkx, kw, kn = jax.random.split(key, 3)\nX = jax.random.normal(kx, (512, FEAT))\n"
    "w_true = jax.random.normal(kw, (FEAT,))\ny = jnp.tanh(X @ w_true) + 0.1 * jax.random.normal(kn, (512,))\n"
    "print(X.shape, y.shape)\n",
    "print('mean', float(y.mean()), 'std', float(y.std()))\n",
    "def init(key, sizes=(FEAT, HID, 1)):\n    params = []\n"
    "    for k, (m, n) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):\n"
    "        params.append((jax.random.normal(k, (m, n)) / jnp.sqrt(m), jnp.zeros(n)))\n    return params\n\n"
    "params = init(jax.random.PRNGKey(0))\nprint([w.shape for w, b in params])\n",
    "@jax.jit\ndef predict(params, x):\n    for w, b in params[:-1]:\n        x = jnp.tanh(x @ w + b)\n"
    "    w, b = params[-1]\n    return (x @ w + b)[:, 0]\n",
    "print(predict(params, X[:4]))\n",
    "@jax.jit\ndef loss(params, x, y):\n    return jnp.mean((predict(params, x) - y) ** 2)\n\n"
    "print('initial loss', loss(params, X, y))\n",
    "grad_fn = jax.jit(jax.grad(loss))\ngrads = grad_fn(params, X, y)\n"
    "print([float(jnp.linalg.norm(gw)) for gw, gb in grads])\n",
    "@jax.jit\ndef step(params, x, y, lr=0.1):\n    g = jax.grad(loss)(params, x, y)\n"
    "    return jax.tree_util.tree_map(lambda p, d: p - lr * d, params, g)\n",
    "for i in range(5):\n    params = step(params, X, y)\n    print(i, loss(params, X, y))\n",
    "for i in range(5, 10):\n    params = step(params, X, y)\nprint('after 10 steps', loss(params, X, y))\n",
    "per_example = jax.vmap(lambda x, t: (predict(params, x[None])[0] - t) ** 2)\nerrs = per_example(X, y)\n"
    "print('worst', float(errs.max()), 'median', float(jnp.median(errs)))\n",
    "w_ls, *_ = jnp.linalg.lstsq(X, y)\nprint('least squares loss', float(jnp.mean((X @ w_ls - y) ** 2)))\n",
    "@jax.jit\ndef running_mean(xs):\n    def body(c, x):\n        c = 0.9 * c + 0.1 * x\n        return c, c\n"
    "    return jax.lax.scan(body, 0.0, xs)[1]\n\nprint(running_mean(y)[-3:])\n",
    "xb, yb = X.reshape(8, 64, FEAT), y.reshape(8, 64)\nfor i in range(8):\n"
    "    params = step(params, xb[i], yb[i], 0.05)\nprint('after an epoch of batches', loss(params, X, y))\n",
    "val_x = jax.random.normal(jax.random.PRNGKey(7), (128, FEAT))\nval_y = jnp.tanh(val_x @ w_true)\n"
    "print('validation loss', loss(params, val_x, val_y))\n",
    "jac = jax.jit(jax.jacfwd(lambda x: predict(params, x)))(X[:2])\nprint(jac.shape)\n",
    "summary = {'train': float(loss(params, X, y)), 'val': float(loss(params, val_x, val_y))}\nprint(summary)\n",
    "np.set_printoptions(precision=3)\nprint(np.asarray(params[0][0][:2, :4]))\n",
    "print('done', sum(w.size + b.size for w, b in params), 'parameters')\n",
]
IDLE_CELL = "import jax, jax.numpy as jnp\nx = jnp.ones((256, 256))\nprint(x.sum())\n"
GIB = 1024**3
# Cells POSTed, and how many of them were first answered 409 (the cell before them, whose
# ``finished`` had arrived, still marked as running) and sent again.
POSTED = {"cells": 0, "answered 409 first": 0, "409 answers": 0}


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "p90": percentile(values, 90), "n": len(values)}


# -- the API, as a script uses it --------------------------------------------------------------

def new_session(stack: Stack) -> dict:
    return stack.new_session()


def end_session(stack: Stack, session: dict) -> None:
    stack.call("DELETE", session["url"])


def follow(stack: Stack, path: str, code: str) -> dict:
    """POST ``code`` (a cell to ``path``, or a run) and follow it to ``finished`` on the run's own
    websocket: the time from the POST to ``finished`` arriving, and what its events said."""
    t0 = time.monotonic()
    status, run = stack.call("POST", path, {"code": code}, timeout=30)
    busy = 0
    while status == 409 and busy < 250:  # the cell before, finished on its socket, still marked running
        busy += 1
        time.sleep(0.02)
        status, run = stack.call("POST", path, {"code": code}, timeout=30)
    if path.endswith("/cells"):
        POSTED["cells"] += 1
        POSTED["answered 409 first"] += bool(busy)
        POSTED["409 answers"] += busy
    if status != 201:
        raise RuntimeError(f"POST {path}: {status} {run}")
    watched = stack.watch(run["id"], timeout=180)
    finished = watched.finished
    if finished is None or finished["status"] != "succeeded":
        raise RuntimeError(f"{path}: {finished} {watched.text('stderr')[-800:]} {watched.events[-3:]}")
    compiled = [e for e in watched.events if e["type"] == "compiled"]
    return {"ms": (watched.arrived[-1] - t0) * 1000, "compiled": len(compiled),
            "cached": sum(1 for e in compiled if e.get("cached")), "printed": watched.text(),
            "run_wall_ms": finished.get("wall_ms"), "refused_busy": busy}


def follow_on_socket(socket, code: str) -> dict:
    """Send ``code`` as a cell on the session's socket (``stack.session_socket``) and read its
    events there to ``finished``: the time from sending to ``finished`` arriving."""
    t0 = time.monotonic()
    answer, watched = socket.cell(code, timeout=180)
    busy = 0
    while answer["type"] == "refused" and answer["status"] == 409 and busy < 250:
        busy += 1
        time.sleep(0.02)
        answer, watched = socket.cell(code, timeout=180)
    if watched is None or watched.finished is None or watched.finished["status"] != "succeeded":
        raise RuntimeError(f"a cell on the session's socket: {answer} {watched and watched.events[-3:]}")
    return {"ms": (watched.arrived[-1] - t0) * 1000, "printed": watched.text(), "refused_busy": busy}


# -- memory: cgroups and processes -------------------------------------------------------------

CGROUP_ROOT = Path("/sys/fs/cgroup")


def sandboxes_base(pid: int) -> Path | None:
    """The ``jax-playground`` folder the executor (``pid``) makes its sandboxes' cgroups in,
    in the memory controller (v1) or the unified hierarchy (v2)."""
    v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (v2 and controllers == "") or (not v2 and "memory" in controllers.split(",")):
            here = CGROUP_ROOT / ("" if v2 else "memory") / path.lstrip("/")
            for folder in (here, *here.parents):  # v2: the worker may have moved into a leaf
                if (folder / "jax-playground").is_dir():
                    return folder / "jax-playground"
                if folder == CGROUP_ROOT:
                    break
    return None


def cgroup_charge(folder: Path) -> int:
    name = "memory.current" if (folder / "memory.current").exists() else "memory.usage_in_bytes"
    return int((folder / name).read_text())


def cgroup_anon(folder: Path) -> int:
    """Its anonymous memory alone (no page cache): ``anon`` on v2, ``total_rss`` on v1."""
    stat = dict(line.split() for line in (folder / "memory.stat").read_text().splitlines())
    return int(stat.get("anon", stat.get("total_rss", stat.get("rss", 0))))


def cgroups(base: Path | None) -> dict[str, Path]:
    return {} if base is None else {p.name: p for p in base.iterdir() if p.is_dir()}


def pss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
        except (OSError, StopIteration):
            pass
    return total


def procs(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) * 1024


# -- the three measures ------------------------------------------------------------------------

def second_cell(stack: Stack, kernel: Kernel, samples: int) -> dict:
    times: dict[str, list[float]] = {"kernel": [], "session": [], "session (socket)": [],
                                     "snippet (new function)": [], "snippet (compiled before)": []}
    compiled_cell2, cell1_ms = [], []
    for i in range(samples):
        c = 100 + i  # a function of the sample's own: none of the three has compiled it
        kernel.run(CELL1.format(c=c))
        took, printed = kernel.run(CELL2)
        assert printed.strip(), printed
        times["kernel"].append(took)

        time.sleep(0.2)
        session = new_session(stack)
        with stack.session_socket(session) as socket:
            first = follow(stack, f"{session['url']}/cells", CELL1.format(c=c))
            cell1_ms.append(first["ms"])
            # Cell 2 posted and cell 2 on the session's socket, in turn first (the same work: it
            # calls f on the same data again).
            for way in (("post", "socket") if i % 2 == 0 else ("socket", "post")):
                if way == "post":
                    second = follow(stack, f"{session['url']}/cells", CELL2)
                    times["session"].append(second["ms"])
                    compiled_cell2.append(second["compiled"])
                else:
                    second = follow_on_socket(socket, CELL2)
                    times["session (socket)"].append(second["ms"])
                assert second["printed"].strip() == printed.strip(), (way, second["printed"], printed)
        end_session(stack, session)

        time.sleep(0.2)  # the pool refills the runner a run used
        times["snippet (new function)"].append(follow(stack, "/api/runs", CELL1.format(c=1000 + c) + CELL2)["ms"])
        time.sleep(0.2)
        times["snippet (compiled before)"].append(follow(stack, "/api/runs", CELL1.format(c=KNOWN_C) + CELL2)["ms"])
        print(f"  sample {i + 1}/{samples}: kernel {took:.1f} ms, session cell 2 {times['session'][-1]:.1f} ms "
              f"({compiled_cell2[-1]} compiled), on its socket {times['session (socket)'][-1]:.1f} ms, "
              f"snippet {times['snippet (new function)'][-1]:.1f} / "
              f"{times['snippet (compiled before)'][-1]:.1f} ms", flush=True)
    out = {name: summary(values) for name, values in times.items()}
    out["samples"] = times
    out["cell2_compiled_events"] = compiled_cell2
    out["session_cell1"] = summary(cell1_ms)
    return out


def notebook(round_: int) -> list[str]:
    """The 20 cells, with shapes of the round's own (its features, its hidden layer): every module
    it compiles is new to the node's compile cache in the round's cold pass."""
    return [code.replace("FEAT", str(16 + round_)).replace("HID", str(32 + round_)) for code in NOTEBOOK]


def cache_entries(stack: Stack) -> int:
    """Entries in the node's compile cache (its folder, which only the executor writes)."""
    folder = Path(stack.env["EXECUTOR_COMPILE_CACHE_DIR"])
    return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def run_notebook(stack: Stack, cells_code: list[str]) -> dict:
    """The cells in order in a new session, each POSTed once the one before it finished; then
    the session deleted."""
    session = new_session(stack)
    cells = []
    t0 = time.monotonic()
    for code in cells_code:
        cells.append(follow(stack, f"{session['url']}/cells", code))
    total = (time.monotonic() - t0) * 1000
    end_session(stack, session)
    per_cell = [c["ms"] for c in cells]
    return {"total_ms": total, "per_cell_ms": per_cell, "per_cell": summary(per_cell),
            "run_wall_ms": [c["run_wall_ms"] for c in cells],
            "first_cell_ms": per_cell[0], "median_of_cells_2_to_20": statistics.median(per_cell[1:]),
            "compiled": sum(c["compiled"] for c in cells), "cached": sum(c["cached"] for c in cells),
            "compiled_per_cell": [c["compiled"] for c in cells], "cached_per_cell": [c["cached"] for c in cells]}


def idle_node(stack: Stack, redis: RedisServer) -> float:
    """The node left idle until its compile jobs are done: the stack quiet, a pause, quiet again."""
    waited = settle(stack, redis)
    time.sleep(3)
    return waited + 3 + settle(stack, redis)


PASSES = ("cold", "restore", "restore again")


def restore(stack: Stack, redis: RedisServer, rounds: int) -> dict:
    """Each round: a notebook of its own run cold, then (the node idle between) restored twice."""
    out: dict = {name: [] for name in PASSES}
    out["settled_s"], out["cache_entries_before"] = [], []
    for r in range(rounds):
        cells = notebook(r)
        for i, name in enumerate(PASSES):
            if i:
                out["settled_s"].append(round(idle_node(stack, redis), 1))
            out["cache_entries_before"].append(cache_entries(stack))
            out[name].append(run_notebook(stack, cells))
            done = out[name][-1]
            print(f"  round {r + 1}/{rounds}, {name}: {done['total_ms']:.0f} ms, "
                  f"{done['cached']}/{done['compiled']} compiled events cached "
                  f"(the node's cache held {out['cache_entries_before'][-1]} entries)", flush=True)
        idle_node(stack, redis)
    for name in PASSES:
        passes = out[name]
        out[f"{name} summary"] = {
            "total_ms": summary([p["total_ms"] for p in passes]),
            "per_cell_median_ms": statistics.median(c for p in passes for c in p["per_cell_ms"]),
            "first_cell_ms": statistics.median(p["first_cell_ms"] for p in passes),
            "cells_2_to_20_median_ms": statistics.median(c for p in passes for c in p["per_cell_ms"][1:]),
            "compiled": [p["compiled"] for p in passes], "cached": [p["cached"] for p in passes]}
    return out


def cgroup_figures(folder: Path) -> dict:
    try:
        return {"cgroup charge": cgroup_charge(folder), "cgroup anon": cgroup_anon(folder), "PSS": pss(procs(folder))}
    except OSError:
        return {}


def memory(stack: Stack, redis: RedisServer, count: int, node_gib: float) -> dict:
    """The node's own memory, then ``count`` idle sessions': each session's cgroup is the one that
    goes when it is deleted (the pool's runners stay)."""
    worker = stack.procs["executor"].pid
    base = sandboxes_base(worker)
    settle(stack, redis)
    before = cgroups(base)
    figures = {name: cgroup_figures(p) for name, p in before.items()}
    node = {"worker_rss": rss(worker), "worker_pss": pss([worker]), "sandbox_cgroups": len(before),
            "sandboxes_charge": sum(f.get("cgroup charge", 0) for f in figures.values()),
            "sandboxes_anon": sum(f.get("cgroup anon", 0) for f in figures.values()),
            "sandboxes_pss": sum(f.get("PSS", 0) for f in figures.values()),
            "cgroups_base": str(base)}
    node["charge"] = node["worker_rss"] + node["sandboxes_charge"]
    node["pss"] = node["worker_pss"] + node["sandboxes_pss"]
    sessions = []
    for _ in range(count):
        session = new_session(stack)
        follow(stack, f"{session['url']}/cells", IDLE_CELL)
        sessions.append(session)
    settle(stack, redis)
    time.sleep(2)
    held = {name: cgroup_figures(p) for name, p in cgroups(base).items()}
    answers = [stack.call("GET", s["url"])[1] for s in sessions]
    per: dict[str, list] = {"memory_bytes (GET)": [a.get("memory_bytes") or 0 for a in answers],
                            "cgroup charge": [], "cgroup anon": [], "PSS": []}
    unattributed = 0
    for session in sessions:
        there = set(cgroups(base))
        end_session(stack, session)
        deadline = time.monotonic() + 10
        gone: set[str] = set()
        while not gone and time.monotonic() < deadline:
            time.sleep(0.1)
            gone = there - set(cgroups(base))
        if len(gone) == 1 and held.get(next(iter(gone))):
            for measure, value in held[next(iter(gone))].items():
                per[measure].append(value)
        else:
            unattributed += 1
    node_bytes = node_gib * GIB
    out = {"node": node, "sessions": count, "unattributed": unattributed, "states": [a.get("state") for a in answers],
           "per_session": per, "node_gib": node_gib, "holds": {}}
    for measure, values in per.items():
        if values:
            median = statistics.median(values)
            out[f"median {measure}"] = median
            own = node["pss"] if measure == "PSS" else node["charge"]
            out["holds"][measure] = int((node_bytes - own) // median) if median else None
    return out


# -- the report --------------------------------------------------------------------------------

def mib(n: float) -> str:
    return f"{n / 1024**2:.1f} MiB"


def figures(out: dict) -> dict[str, float]:
    """The figures recorded in docs/BENCHMARKS.md and compared against."""
    first = out["second cell"]
    found = {f"second cell {name} median ms": first[name]["median"]
             for name in ("kernel", "session", "session (socket)", "snippet (new function)",
                          "snippet (compiled before)") if name in first}
    nb = out.get("notebook") or {}
    for name in PASSES:
        if f"{name} summary" in nb:
            found[f"notebook {name} total median ms"] = nb[f"{name} summary"]["total_ms"]["median"]
    return found


def report(out: dict, samples: int) -> None:
    first = out["second cell"]
    k = first["kernel"]["median"]
    print(f"\n1. a second cell calling cell 1's jitted function ({SIDE}×{SIDE}), medians of {samples}, interleaved")
    print(f"{'':34} {'median':>10} {'p90':>10} {'× kernel':>9} {'× session':>10}")
    s = first["session"]["median"]
    for name in ("kernel", "session", "session (socket)", "snippet (new function)", "snippet (compiled before)"):
        label = {"kernel": "warm Jupyter kernel: cell 2", "session": "session: cell 2 (POST)",
                 "session (socket)": "session: cell 2 on its socket",
                 "snippet (new function)": "POST /api/runs: cells 1+2",
                 "snippet (compiled before)": "  the same, f compiled before"}[name]
        m = first[name]
        print(f"{label:34} {m['median']:7.1f} ms {m['p90']:7.1f} ms {m['median'] / k:8.1f}× {m['median'] / s:9.2f}×")
    print(f"compiled events in the session's cell 2: {first['cell2_compiled_events']} (cell 1, not timed: "
          f"median {first['session_cell1']['median']:.1f} ms)")

    nb = out["notebook"]
    rounds = len(nb["cold"])
    print(f"\n2. the 20-cell notebook in a new session, {rounds} round(s) of a notebook of their own: cold, then "
          f"restored twice (the node idle {min(nb['settled_s']):.0f}-{max(nb['settled_s']):.0f} s before each)")
    print(f"{'':14} {'total median':>13} {'per cell median':>16} {'first cell':>11} {'cells 2-20':>11} "
          f"{'cached/compiled events':>23}")
    cold = nb["cold summary"]["total_ms"]["median"]
    for name in PASSES:
        r = nb[f"{name} summary"]
        events = ", ".join(f"{c}/{t}" for c, t in zip(r["cached"], r["compiled"], strict=True))
        print(f"{name:14} {r['total_ms']['median']:10.0f} ms {r['per_cell_median_ms']:13.1f} ms "
              f"{r['first_cell_ms']:8.0f} ms {r['cells_2_to_20_median_ms']:8.1f} ms {events:>23}"
              f"   ({r['total_ms']['median'] / cold:.2f}× cold)")
    print("per cell, round 1 (ms, cold / restore / again; cached events of the restores): " + ", ".join(
        f"{i + 1}: {c:.0f}/{r:.0f}/{g:.0f} ({nb['restore'][0]['cached_per_cell'][i]},"
        f"{nb['restore again'][0]['cached_per_cell'][i]})"
        for i, (c, r, g) in enumerate(zip(nb["cold"][0]["per_cell_ms"], nb["restore"][0]["per_cell_ms"],
                                          nb["restore again"][0]["per_cell_ms"], strict=True))))

    mem = out["memory"]
    node = mem["node"]
    print(f"\n3. memory: {mem['sessions']} idle sessions (states {sorted(set(mem['states']))}, "
          f"{mem['sessions'] - mem['unattributed']} of them with their cgroup told apart)")
    print(f"the node before them: worker {mib(node['worker_rss'])} + sandboxes ({node['sandbox_cgroups']} cgroups: "
          f"template and pool) {mib(node['sandboxes_charge'])} = {mib(node['charge'])} (PSS {mib(node['pss'])})")
    print(f"{'per idle session':24} {'median':>12}   a {mem['node_gib']:g} GiB node holds")
    for measure, holds in mem["holds"].items():
        print(f"{measure:24} {mib(mem[f'median {measure}']):>12}   {holds}")
    print(f"\ncells POSTed: {POSTED['cells']}; answered 409 (the cell before, its finished received, still "
          f"running for the server) and POSTed again: {POSTED['answered 409 first']} "
          f"({POSTED['409 answers']} answers)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--idle-sessions", type=int, default=6)
    parser.add_argument("--node-gib", type=float, default=24.0)
    parser.add_argument("--rounds", type=int, default=2, help="notebooks run cold, then restored twice")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", action="store_true", help="print the block that records these figures")
    args = parser.parse_args()
    out: dict = {"samples": args.samples}
    kernel = Kernel()
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        redis = RedisServer(Path(tmp))
        redis.start()
        try:
            with own_stack("sessions", redis_url=redis.url, EXECUTOR_CONCURRENCY="2",
                           EXECUTOR_MAX_SESSIONS=str(args.idle_sessions + 2),
                           SESSION_MAX_PER_CLIENT=str(args.idle_sessions + 2),
                           SESSION_RATE_LIMIT_PER_HOUR="100000") as stack:
                info = stack.wait_online()
                out["stack"] = {"sandbox": stack.env["EXECUTOR_SANDBOX"], "slots": info.get("slots"),
                                "jax": info.get("jax_version")}
                # Warm all: the pool, the web side, the kernel, the snippet whose function the
                # node then compiles for its cache ("compiled before").
                for c in (KNOWN_C, KNOWN_C):
                    kernel.run(CELL1.format(c=c))
                    kernel.run(CELL2)
                    follow(stack, "/api/runs", CELL1.format(c=c) + CELL2)
                    session = new_session(stack)
                    follow(stack, f"{session['url']}/cells", CELL1.format(c=c))
                    follow(stack, f"{session['url']}/cells", CELL2)
                    end_session(stack, session)
                settle(stack, redis)
                out["second cell"] = second_cell(stack, kernel, args.samples)
                print("  the 20-cell notebook: cold, then restored twice", flush=True)
                out["notebook"] = restore(stack, redis, args.rounds)
                print(f"  {args.idle_sessions} idle sessions", flush=True)
                out["memory"] = memory(stack, redis, args.idle_sessions, args.node_gib)
        finally:
            kernel.stop()
            redis.stop()
    out["posted"] = POSTED
    report(out, args.samples)
    recorded.report(BENCH, figures(out))
    if args.record:
        print("\n" + recorded.table(BENCH, figures(out)))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
