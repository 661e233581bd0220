"""Comparisons through the real stack, as a script uses them (daphne, plain websockets, no Origin):
one POST starts the same code on the default runtime's worker and on a worker of JAX 0.4.38 at
once; each side is followed over its own socket to its end; each ran where it says, captured its
compiled function and its %timeit; the link's API and page answer from the database afterwards.
A pinned snippet's "run on the newest" keeps its saved run as side A and starts only B."""

from __future__ import annotations

import json
import re
import threading

import pytest

from executor import runtimes
from tests.conftest import OLD_RUNTIME as OLD

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("old_runtime_worker")]

CODE = """\
import jax
import jax.numpy as jnp
print("jax", jax.__version__)
f = jax.jit(lambda x: jnp.sin(x) @ x.T + 1)
x = jnp.ones((8, 8))
%timeit -n 3 -r 3 f(x).block_until_ready()
print(float(f(x).sum()))
"""


def watch_both(live_stack, made: dict) -> list:
    """Both sides' sockets at once, each in its own thread, as the page follows them."""
    watched: list = [None, None]

    def follow(i: int) -> None:
        watched[i] = live_stack.watch(made["sides"][i]["run"]["id"], timeout=120)

    threads = [threading.Thread(target=follow, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    return watched


def test_one_post_runs_the_code_on_two_runtimes_and_the_link_keeps_both(live_stack):
    live_stack.wait_runtime(OLD)
    status, made = live_stack.post("/api/comparisons", {
        "code": CODE, "sides": [{"runtime": OLD, "device": "cpu"}, {"runtime": runtimes.FIRST, "device": "cpu"}]})
    assert status == 201, made
    old, new = watch_both(live_stack, made)
    for watched, runtime, jax in ((old, OLD, "0.4.38"), (new, runtimes.FIRST, runtimes.FIRST[4:])):
        types = [e["type"] for e in watched.events]
        assert types[0] == "queued" and types[-1] == "finished", types
        assert [e["seq"] for e in watched.events] == list(range(1, len(types) + 1))
        finished = watched.events[-1]
        assert finished["status"] == "succeeded", finished
        started = next(e for e in watched.events if e["type"] == "started")
        assert started["runtime"] == runtime and started["jax_version"] == jax
        stdout = "".join(e["text"] for e in watched.events if e["type"] == "stdout")
        assert stdout.startswith(f"jax {jax}\n"), stdout
        compiled = [e for e in watched.events if e["type"] == "compiled"]
        assert [e["name"] for e in compiled] == ["<lambda>"] and compiled[0]["jaxpr"].startswith("{ lambda")
        assert compiled[0]["compile_ms"] > 0
        timing = [e for e in watched.events if e["type"] == "timing"]
        assert [t["kind"] for t in timing] == ["timeit"] and timing[0]["median_ms"] > 0
        # Nothing of the old JAX's logging in the snippet's output.
        assert not [e for e in watched.events if e["type"] == "stderr" and "LLVM" in e["text"]]
    # Both print the same sum of the same numbers.
    sums = ["".join(e["text"] for e in w.events if e["type"] == "stdout").splitlines()[-1] for w in (old, new)]
    assert abs(float(sums[0]) - float(sums[1])) < 1e-3, sums

    # The link answers from the database once the runs are recorded.
    for side in made["sides"]:
        live_stack.wait_finished(side["run"]["id"])
    answer = live_stack.get(f"/api/comparisons/{made['slug']}")
    assert [s["run"]["status"] for s in answer["sides"]] == ["succeeded", "succeeded"]
    assert all(s["run"]["wall_ms"] > 0 for s in answer["sides"])
    page = live_stack.fetch_text(f"/compare/{made['slug']}")
    data = json.loads(re.search(r'id="comparison-data" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert [s["label"] for s in data["sides"]] == ["JAX 0.4.38 · CPU", f"JAX {runtimes.FIRST[4:]} · CPU"]


def test_an_unserved_side_starts_neither(live_stack):
    before = live_stack.get("/api/runtimes")
    assert "cpu" not in {r["id"]: r for r in before["runtimes"]}["jax-0.6.2"]["kinds"]
    status, answer = live_stack.post("/api/comparisons", {
        "code": "print(1)\n", "sides": [{"runtime": OLD}, {"runtime": "jax-0.6.2"}]})
    assert status == 503 and "jax-0.6.2" in answer["error"], answer


def test_a_pinned_snippet_runs_on_the_newest_beside_its_saved_run(live_stack):
    live_stack.wait_runtime(OLD)
    code = "import jax\nprint(jax.tree_map(lambda v: v + 1, {'a': 1}))\n"
    _, run = live_stack.post("/api/runs", {"code": code, "runtime": OLD})
    live_stack.wait_finished(run["id"])
    _, snippet = live_stack.post("/api/snippets", {"code": code, "run": run["id"]})
    assert snippet["runtime"] == OLD
    assert 'id="run-on-newest"' in live_stack.fetch_text(f"/s/{snippet['slug']}")
    status, made = live_stack.post("/api/comparisons", {
        "code": code, "snippet": snippet["slug"],
        "sides": [{"run": run["id"]}, {"runtime": runtimes.FIRST, "device": "cpu"}]})
    assert status == 201, made
    assert made["sides"][0]["run"]["id"] == run["id"] and made["sides"][0]["saved"] is True
    old, new = watch_both(live_stack, made)
    assert old.events[-1]["status"] == "succeeded"  # the saved run, replayed
    assert "".join(e["text"] for e in old.events if e["type"] == "stdout") == "{'a': 2}\n"
    assert new.events[-1]["status"] == "failed"
    error = next(e for e in new.events if e["type"] == "error")
    assert error["exc_type"] == "AttributeError" and OLD in error["explanation"]
