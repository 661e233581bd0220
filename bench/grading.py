"""Grading at scale, through the public API: a class submits at once, and how fast its grades land.

    python -m bench.grading                 # its own stack; 200 students
    python -m bench.grading --n 50
    python -m bench.grading --overhead 15    # what grading adds to one run (sandbox only)
    python -m bench.grading --transforms 9   # what one check that transforms the student's f costs
    python -m bench.grading --validation 5   # saving an assignment to both validation scores shown

One course of ``n`` students (accounts and API tokens made directly in the stack's database), one
small assignment with five hidden checks (values, a gradient against finite differences, "no
float64", "compiled once"). Every student submits at the same moment (one thread each, over
loopback against daphne); the wall time runs from the first POST to the last submission found
``graded`` by GET /api/submissions/<id>. First with the stack's one executor worker, then with a
second one started beside it. Each worker runs ``--slots`` runners at once (default 1: on a
2-core machine one worker with two slots already keeps both cores busy, and a second worker
would have nothing to add).

Meanwhile the instructor's dashboard (/ws/courses/<id>/, token in the Authorization header) is
open, with every student's run socket: the time from each POST returning to the dashboard's update
for that submission ("queued": the grid shows the submission) and to its "graded" update.
"""

from __future__ import annotations

import argparse
import warnings
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from bench.stack import ROOT, Stack, own_stack

STUDENT = """
import jax, jax.numpy as jnp
def square(x):
    return x * x
@jax.jit
def loss(w):
    return jnp.sum(w ** 2)
def loss_grad(w):
    return 2 * w
def f(x):
    return jnp.sin(x) ** 2
print(loss(jnp.arange(3.0)))
"""
CHECKS = """
from jaxplay.grading import allclose, check, grad_check, max_compilations, no_float64
import numpy as np
check("square of 3", allclose(square(3.0), 9.0), 2)
check("square of an array", allclose(square(np.arange(4.0)), np.arange(4.0) ** 2))
with check("gradient", points=2):
    assert grad_check(loss, np.arange(3.0), loss_grad), "the gradient differs from finite differences"
x = np.arange(3.0, dtype=np.float32)
check("no float64", no_float64(loss, x))
check("compiled once", max_compilations(loss, 1, (x,), (x + 1,)))
"""
MAX_SCORE = 7.0

PEOPLE = """
import json, os
from django.contrib.auth import get_user_model
from accounts.actions import do_create_token
User = get_user_model()
out = {}
for name in ["instructor"] + [f"student{i:03d}" for i in range(int(os.environ["BENCH_STUDENTS"]))]:
    user, _ = User.objects.get_or_create(username=name)
    out[name] = do_create_token(user, "bench")[1]
print(json.dumps(out))
"""


def make_people(stack: Stack, n: int) -> dict[str, str]:
    """{username: API token} for an instructor and ``n`` students."""
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", PEOPLE], cwd=ROOT,
                          env={**stack.env, "BENCH_STUDENTS": str(n)}, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def call(stack: Stack, method: str, path: str, token: str, body=None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(stack.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


class Dashboard(threading.Thread):
    """The instructor's dashboard socket: when each submission's updates arrived."""

    def __init__(self, stack: Stack, course: int, token: str):
        super().__init__(daemon=True)
        from websockets.sync.client import connect

        self.ws = connect(f"{stack.ws_url}/ws/courses/{course}/", max_size=8 * 1024**2,
                          additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=30)
        first = json.loads(self.ws.recv(timeout=30))
        assert first["type"] == "snapshot", first
        self.seen: dict[tuple[int, str], float] = {}
        self.start()

    def run(self) -> None:
        try:
            while True:
                message = json.loads(self.ws.recv())
                item = message.get("item") or {}
                if message.get("type") == "update" and item.get("kind") == "submission":
                    self.seen.setdefault((item["submission"], item["status"]), time.monotonic())
        except Exception:  # noqa: BLE001 - closed at the end
            return


def grade_class(stack: Stack, people: dict[str, str], course: int, assignment: int, students: list[str]) -> dict:
    dashboard = Dashboard(stack, course, people["instructor"])
    submitted: dict[str, tuple[int, str, float]] = {}
    sockets = []
    barrier = threading.Barrier(len(students))

    def submit(name: str) -> None:
        barrier.wait()
        status, body = call(stack, "POST", f"/api/assignments/{assignment}/submissions", people[name],
                            {"code": STUDENT})
        assert status == 201, body
        submitted[name] = (body["id"], body["run"], time.monotonic())

    t0 = time.monotonic()
    threads = [threading.Thread(target=submit, args=(name,)) for name in students]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Each student's page follows its run: one socket each, as browsers would hold.
    from websockets.sync.client import connect

    for _sub, run, _ in submitted.values():
        sockets.append(connect(f"{stack.ws_url}/ws/runs/{run}/", open_timeout=30))
    pending = {sub: name for name, (sub, _run, _) in submitted.items()}
    scores = []
    deadline = time.monotonic() + 1800
    while pending and time.monotonic() < deadline:
        for sub, name in list(pending.items()):
            status, body = call(stack, "GET", f"/api/submissions/{sub}", people[name])
            if body.get("status") == "graded":
                scores.append(body["score"])
                del pending[sub]
        time.sleep(0.5)
    wall_s = time.monotonic() - t0
    assert not pending, f"{len(pending)} submissions never graded"
    time.sleep(1)
    for ws in sockets:
        ws.close()
    dashboard.ws.close()
    shown = [(dashboard.seen[(sub, "queued")] - at) * 1000 for sub, _run, at in submitted.values()
             if (sub, "queued") in dashboard.seen]
    graded = [(dashboard.seen[(sub, "graded")] - at) * 1000 for sub, _run, at in submitted.values()
              if (sub, "graded") in dashboard.seen]
    return {
        "submissions": len(students),
        "wall_s": round(wall_s, 1),
        "per_s": round(len(students) / wall_s, 2),
        "all_full_marks": all(s == MAX_SCORE for s in scores),
        "dashboard_shown_ms": summary(shown),
        "dashboard_graded_ms": summary(graded),
    }


def summary(samples: list[float]) -> dict:
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)
    return {"n": len(samples), "median": round(statistics.median(ordered), 1),
            "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1)}


def measure(stack: Stack, n: int) -> dict:
    people = make_people(stack, n)
    teacher = people["instructor"]
    status, course = call(stack, "POST", "/api/courses", teacher, {"title": "Bench course"})
    assert status == 201, course
    status, made = call(stack, "POST", f"/api/courses/{course['id']}/assignments", teacher,
                        {"title": "Squares", "description": "", "starter_code": "", "checks": CHECKS})
    assert status == 201, made
    students = [name for name in people if name != "instructor"]
    for name in students:
        status, body = call(stack, "POST", "/api/courses/join", people[name], {"code": course["join_code"]})
        assert status == 200, body
    results = {"one worker": grade_class(stack, people, course["id"], made["id"], students)}
    stack.start_executor("executor2")
    deadline = time.monotonic() + 120
    while stack.get("/api/devices")["devices"][0].get("workers", 1) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    results["two workers"] = grade_class(stack, people, course["id"], made["id"], students)
    return results


def validation(stack: Stack, n: int) -> dict:
    """Saving an assignment with a reference solution, through the API, to the moment its
    instructor's view shows both scores (the reference's and the starter code's): ``n`` saves that
    change the checks, each waited out before the next, polled every 50 ms as the page does
    (every second); then the same with the reference wrong, which must be flagged."""
    teacher = make_people(stack, 0)["instructor"]
    status, course = call(stack, "POST", "/api/courses", teacher, {"title": "Bench validation"})
    assert status == 201, course
    status, made = call(stack, "POST", f"/api/courses/{course['id']}/assignments", teacher,
                        {"title": "Squares", "starter_code": "def square(x):\n    ...\n", "checks": CHECKS,
                         "reference_solution": STUDENT})
    assert status == 201, made

    def landed(assignment_id: int, t0: float) -> tuple[float, dict]:
        while True:
            status, body = call(stack, "GET", f"/api/assignments/{assignment_id}", teacher)
            v = body.get("validation") or {}
            if all((v.get(k) or {}).get("status") == "graded" for k in ("reference", "starter")):
                return (time.monotonic() - t0) * 1000, v
            assert time.monotonic() - t0 < 180, v
            time.sleep(0.05)

    out = {}
    for label, reference, ok in (("reference right", STUDENT, True),
                                 ("reference wrong", STUDENT.replace("x * x", "x + x"), False)):
        times = []
        for i in range(n):
            t0 = time.monotonic()
            status, body = call(stack, "PATCH", f"/api/assignments/{made['id']}", teacher,
                                {"checks": CHECKS + f"# save {label} {i}\n", "reference_solution": reference})
            assert status == 200, body
            ms, v = landed(made["id"], t0)
            assert v["reference"]["ok"] is ok and v["starter"]["ok"] is True, v
            times.append(ms)
        out[label] = {"saves": n, "median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1),
                      "reference": f"{v['reference']['score']} / {v['reference']['max_score']}",
                      "starter": f"{v['starter']['score']} / {v['starter']['max_score']}"}
    return out


def overhead(n: int) -> dict:
    """What grading adds to one run, in the sandbox without the web side (executor.local): the
    student's code alone, graded with one trivial check, with the five checks, and the checker's
    latency per check (401 value checks against 1, each a call of the student's function)."""
    from executor.local import grade_local, run_local
    from executor.sandbox import Limits, get_launcher

    many = "from jaxplay.grading import allclose, check\n" + "".join(
        f"check('square {i}', allclose(square({i}.0), {i * i}.0))\n" for i in range(401))
    one = "from jaxplay.grading import allclose, check\ncheck('square 0', allclose(square(0.0), 0.0))\n"
    launcher = get_launcher("fork", limits=Limits(wall_s=60))
    out = {}
    try:
        for label, checks in (("not graded", None), ("graded: check('ok', True)", "check('ok', True)"),
                              ("graded: the five checks", CHECKS), ("graded: 1 value check", one),
                              ("graded: 401 value checks", many)):
            walls, cpus = [], []
            for _ in range(n):
                if checks is None:
                    finished = run_local(STUDENT, launcher=launcher)[-1]
                else:
                    events, grade = grade_local(STUDENT, checks, launcher=launcher)
                    finished = events[-1]
                    assert grade["score"] == grade["max_score"] > 0, (grade["score"], grade["error"][:500])
                assert finished["status"] == "succeeded", finished
                walls.append(finished["wall_ms"])
                cpus.append(finished["cpu_ms"])
            out[label] = {"wall_ms": round(statistics.median(walls), 1), "cpu_ms": round(statistics.median(cpus), 1)}
    finally:
        launcher.close()
    per_check = (out["graded: 401 value checks"]["wall_ms"] - out["graded: 1 value check"]["wall_ms"]) / 400
    out["per value check"] = {"wall_ms": round(per_check, 2), "cpu_ms": None}
    return out


# One check each, of the student's ``f``, as a JAX course writes them (docs/CHECKS.md).
TRANSFORMED = {
    "f(x): a value": "allclose(f(x), np.sin(x) ** 2)",
    "jax.grad(f)(0.3)": "allclose(jax.grad(f)(0.3), np.sin(0.6))",
    "jax.vmap(f)(x)": "allclose(jax.vmap(f)(x), np.sin(x) ** 2)",
    "jax.jit(f)(x)": "allclose(jax.jit(f)(x), np.sin(x) ** 2)",
    "jax.hessian(f)(0.3)": "allclose(jax.hessian(f)(0.3), 2 * np.cos(0.6), rtol=1e-4)",
    "jax.make_jaxpr(f)(0.3)": "'sin' in str(jax.make_jaxpr(f)(0.3))",
    "jax.grad(lambda t: 3 * f(t))(0.3)": "allclose(jax.grad(lambda t: 3 * f(t))(0.3), 3 * np.sin(0.6))",
    "jax.jit(jax.grad(lambda t: 3 * f(t)))(0.3)":
        "allclose(jax.jit(jax.grad(lambda t: 3 * f(t)))(0.3), 3 * np.sin(0.6))",
    "jax.vmap(lambda t: f(t) + 1)(x)": "allclose(jax.vmap(lambda t: f(t) + 1)(x), np.sin(x) ** 2 + 1)",
}


def transforms(n: int) -> dict:
    """What one check of each kind adds to a graded run, in the sandbox without the web side:
    the median wall time of grading with a check that does nothing, and with that check instead
    (the student's code, its runner, the checker and, where a check lowers, the analyst alike)."""
    from executor.local import grade_local
    from executor.sandbox import Limits, get_launcher

    head = "from jaxplay.grading import allclose, check\nimport jax\nimport numpy as np\n" \
           "x = np.linspace(0, 1, 16, dtype=np.float32)\n"
    launcher = get_launcher("fork", limits=Limits(wall_s=60))
    out = {}
    try:
        for label, expr in (("check('ok', True)", "True"), *TRANSFORMED.items()):
            walls = []
            for _ in range(n):
                events, grade = grade_local(STUDENT, head + f"check('it', {expr})\n", launcher=launcher)
                assert grade["score"] == grade["max_score"] == 1.0, (label, grade["checks"], grade["log"][-800:])
                walls.append(events[-1]["wall_ms"])
            out[label] = {"wall_ms": round(statistics.median(walls), 1)}
    finally:
        launcher.close()
    base = out["check('ok', True)"]["wall_ms"]
    for label in TRANSFORMED:
        out[label]["added_ms"] = round(out[label]["wall_ms"] - base, 1)
    return out


def main() -> int:
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="bench.grading")
    parser = argparse.ArgumentParser(prog="python -m bench.grading", description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200, help="students (submissions per round)")
    parser.add_argument("--transforms", type=int, default=0, metavar="N",
                        help="what one check that transforms the student's function adds (N gradings each)")
    parser.add_argument("--validation", type=int, default=0, metavar="N",
                        help="saving an assignment to both validation scores shown (N saves each way)")
    parser.add_argument("--overhead", type=int, default=0, metavar="N",
                        help="only measure what grading adds to one run (medians of N runs), without the web side")
    parser.add_argument("--slots", type=int, default=1,
                        help="runners each executor worker runs at once (EXECUTOR_CONCURRENCY; default 1, so that "
                             "a second worker is a second node's worth)")
    args = parser.parse_args()
    if args.validation:
        with own_stack("grading") as stack:
            results = validation(stack, args.validation)
        print(json.dumps(results, indent=2))
        return 0
    if args.transforms:
        results = transforms(args.transforms)
        print(json.dumps(results, indent=2))
        return 0
    if args.overhead:
        results = overhead(args.overhead)
        print(json.dumps(results, indent=2))
        print("\n| one run of the student's code | wall (median) | CPU (median) |\n|---|---|---|")
        for label, r in results.items():
            cpu = "" if r["cpu_ms"] is None else f"{r['cpu_ms']} ms"
            print(f"| {label} | {r['wall_ms']} ms | {cpu} |")
        return 0
    with own_stack("grading", EXECUTOR_CONCURRENCY=str(args.slots)) as stack:
        results = measure(stack, args.n)
    print(json.dumps(results, indent=2))
    one, two = results["one worker"], results["two workers"]
    print(f"\n{args.n} submissions, 5 checks each, {args.slots} runner(s) per worker "
          f"(median / p95 of the dashboard's updates):")
    print("| executor workers | wall | submissions/s | grid shows it | grid shows its grade |")
    print("|---|---|---|---|---|")
    for label, r in (("1", one), ("2", two)):
        print(f"| {label} | {r['wall_s']} s | {r['per_s']} | {r['dashboard_shown_ms'].get('median')} / "
              f"{r['dashboard_shown_ms'].get('p95')} ms | {r['dashboard_graded_ms'].get('median')} / "
              f"{r['dashboard_graded_ms'].get('p95')} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
