"""Hostile snippets through the whole stack (API, Celery executor, sandbox, recorder): each ends
in the status that names its limit, keeps the output it produced first, and the next run works.
(tests/sandbox has the full list against the sandbox itself.)"""

from __future__ import annotations

import pytest

FLOOD = "print('start', flush=True)\nwhile True:\n    print('x' * 1000)\n"
NUMPY_BOMB = ("import numpy as np\nprint('start', flush=True)\nkeep = []\n"
              "while True:\n    keep.append(np.ones(2**27))\n")
JAX_BOMB = ("import jax.numpy as jnp\nprint('start', flush=True)\nkeep = []\n"
            "while True:\n    keep.append(jnp.ones(2**27) + len(keep))\n")


def run(live_stack, code: str) -> dict:
    status, created = live_stack.post("/api/runs", {"code": code})
    assert status == 201, created
    return live_stack.wait_finished(created["id"], timeout=90)


@pytest.mark.parametrize("code, status, message", [
    (FLOOD, "limit_exceeded", "output limit of 1 MiB exceeded"),
    (NUMPY_BOMB, "failed", "MemoryError"),
    (JAX_BOMB, "failed", "RESOURCE_EXHAUSTED"),
], ids=["stdout-flood", "numpy-memory-bomb", "jax-memory-bomb"])
def test_a_hostile_run_ends_at_its_limit_and_the_next_run_works(live_stack, code, status, message):
    finished = run(live_stack, code)
    assert finished["status"] == status, finished["message"]
    said = finished["message"] + "".join(
        f"{e.get('exc_type', '')}: {e.get('message', '')}" for e in finished["events"] if e["type"] == "error")
    assert message in said
    output = "".join(e.get("text", "") for e in finished["events"] if e["type"] == "stdout")
    assert output.startswith("start\n")  # what it printed before the limit is kept
    if status == "limit_exceeded":
        assert finished["events"][-1]["truncated"] is True
        assert len(output.encode()) <= 1024**2

    after = run(live_stack, "print('still here')\n")
    assert after["status"] == "succeeded"
    assert "still here" in "".join(e.get("text", "") for e in after["events"])
