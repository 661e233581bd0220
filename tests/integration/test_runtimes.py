"""Runtimes through the real stack, as a script uses them (daphne, no Origin): the suite's CPU
executor serves the first runtime; a second one, started here, serves JAX 0.4.38
(EXECUTOR_RUNTIME, queue exec.cpu@jax-0.4.38). A run goes to a worker of its runtime and says
which; a runtime no worker serves is a 503 at once, an unknown one a 400 naming those there are;
a snippet is pinned to the runtime it ran on."""

from __future__ import annotations

import pytest

from executor import runtimes
from tests.conftest import OLD_RUNTIME as OLD

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("old_runtime_worker")]

UNSERVED = "jax-0.6.2"


def finished(live_stack, run_id: str) -> tuple[dict, dict, str]:
    detail = live_stack.wait_finished(run_id, timeout=90)
    started = next(e for e in detail["events"] if e["type"] == "started")
    stdout = "".join(e["text"] for e in detail["events"] if e["type"] == "stdout")
    return detail, started, stdout


def test_the_runtimes_are_listed_with_their_versions_and_who_serves_them(live_stack):
    answer = live_stack.get("/api/runtimes")
    listed = {r["id"]: r for r in answer["runtimes"]}
    # A host runtime (an accelerator host's own JAX) is listed only while a worker serves it.
    assert list(listed) == runtimes.catalog().own_ids and answer["default"] == runtimes.FIRST
    assert listed[runtimes.FIRST]["default"] is True and listed[runtimes.FIRST]["kinds"] == ["cpu"]
    assert (listed[OLD]["jax"], listed[OLD]["jaxlib"], listed[OLD]["python"]) == ("0.4.38", "0.4.38", "3.12")
    assert listed[OLD]["kinds"] == ["cpu"] and listed[OLD]["libraries"]["flax"] == "0.10.2"
    assert listed[UNSERVED]["kinds"] == [] and listed[UNSERVED]["jax"] == "0.6.2"


def test_a_run_goes_to_a_worker_of_its_runtime_and_says_so(live_stack):
    code = "import jax, numpy\nprint(jax.__version__, numpy.__version__)\n"
    status, old = live_stack.post("/api/runs", {"code": code, "runtime": OLD})
    assert status == 201 and old["runtime"] == OLD, old
    status, new = live_stack.post("/api/runs", {"code": code})
    assert status == 201 and new["runtime"] == runtimes.FIRST, new
    detail, started, stdout = finished(live_stack, old["id"])
    assert detail["status"] == "succeeded" and stdout == "0.4.38 2.2.1\n", detail
    assert started["runtime"] == OLD and started["jax_version"] == "0.4.38"
    assert started["worker"].startswith("cpu-old-jax@")
    detail, started, stdout = finished(live_stack, new["id"])
    assert stdout.startswith("0.12.0.1 ") and started["runtime"] == runtimes.FIRST


def test_an_unserved_runtime_is_a_503_and_an_unknown_one_names_the_known(live_stack):
    status, answer = live_stack.post("/api/runs", {"code": "print(1)", "runtime": UNSERVED})
    assert status == 503 and UNSERVED in answer["error"], answer
    status, answer = live_stack.post("/api/runs", {"code": "print(1)", "runtime": "jax-9.9"})
    assert status == 400, answer
    assert "jax-9.9" in answer["error"] and all(rid in answer["error"] for rid in runtimes.catalog().ids)
    status, answer = live_stack.post("/api/runs", {"code": "print(1)", "runtime": 3})
    assert status == 400 and "runtime" in answer["error"]


def test_removed_api_is_explained_and_runs_on_the_runtime_that_has_it(live_stack):
    code = "import jax\nprint(jax.tree_map(lambda x: x * 2, [1, 2]))\n"
    _, new = live_stack.post("/api/runs", {"code": code})
    detail, _, _ = finished(live_stack, new["id"])
    error = next(e for e in detail["events"] if e["type"] == "error")
    assert detail["status"] == "failed" and "jax.tree.map" in error["explanation"], error
    assert OLD in error["explanation"]
    _, old = live_stack.post("/api/runs", {"code": code, "runtime": OLD})
    detail, _, stdout = finished(live_stack, old["id"])
    assert detail["status"] == "succeeded" and stdout == "[2, 4]\n", detail


def test_a_snippet_is_pinned_to_its_runtime(live_stack):
    code = "import jax\nprint('pinned to', jax.__version__)\n"
    _, run = live_stack.post("/api/runs", {"code": code, "runtime": OLD})
    finished(live_stack, run["id"])
    status, snippet = live_stack.post("/api/snippets", {"code": code, "run": run["id"]})
    assert status == 201 and snippet["runtime"] == OLD, snippet
    assert live_stack.get(f"/api/snippets/{snippet['slug']}")["runtime"] == OLD
    # The same code shared for the default runtime is another snippet: another link.
    status, other = live_stack.post("/api/snippets", {"code": code})
    assert status == 201 and other["runtime"] == runtimes.FIRST and other["slug"] != snippet["slug"]
    status, again = live_stack.post("/api/snippets", {"code": code, "runtime": OLD})
    assert again["slug"] == snippet["slug"]
