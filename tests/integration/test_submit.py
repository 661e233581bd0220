"""``python -m executor.submit``: runs submitted with nothing but the broker's URL, as a new node is
tried from the node itself, to the suite's real CPU executor. No web side takes part: the run's
events come from its log in Redis, as a websocket reads them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.stack import ROOT
from tests.conftest import TEST_REDIS_URL

pytestmark = pytest.mark.django_db(transaction=True)


def submit(*args: str, cwd=ROOT, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "executor.submit", "--redis", TEST_REDIS_URL, *args],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_a_snippet_runs_and_says_where_and_how_long(live_stack, tmp_path):
    live_stack.wait_online("cpu")
    snippet = tmp_path / "speed.py"
    snippet.write_text("import jax, jax.numpy as jnp\n"
                       "f = jax.jit(lambda x: x * 2 + 1)\n"
                       "print('sum', float(f(jnp.arange(4.0)).sum()))\n"
                       "%timeit -n3 -r2 f(jnp.arange(4.0)).block_until_ready()\n")
    done = submit("--device", "cpu", "--summary", "--repeat", "2", str(snippet))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert line["status"] == "succeeded" and line["device"] == "cpu:cpu" and line["platform"] == "cpu"
        assert line["worker"].startswith("cpu-executor@") and line["jax"]
        assert line["stdout"].startswith("sum 16.0\n") and "per loop" in line["stdout"]
        assert line["compiled"], line  # the jitted lambda, captured with no change to the code
        [timing] = line["timings"]
        assert (timing["loops"], timing["repeats"]) == (3, 2) and timing["mean_ms"] > 0
        assert 0 < line["queued_to_started_ms"] <= line["queued_to_finished_ms"]


def test_the_events_are_the_runs_log_in_order(live_stack, tmp_path):
    snippet = tmp_path / "fails.py"
    snippet.write_text("print('before')\n1 / 0\n")
    done = submit("--device", "cpu", str(snippet))
    assert done.returncode == 1  # the snippet failed
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["type"] for e in events][:2] == ["queued", "started"] and events[-1]["type"] == "finished"
    assert events[-1]["status"] == "failed"
    error = next(e for e in events if e["type"] == "error")
    assert (error["exc_type"], error["line"]) == ("ZeroDivisionError", 2)


@pytest.mark.parametrize("device, code, said", [
    ("tpu", 2, "no tpu executor is online"),
    ("gpu:H200", 2, "unknown device 'gpu:H200'"),
])
def test_a_device_with_no_executor_is_refused_before_anything_is_queued(live_stack, tmp_path, redis_client,
                                                                          device, code, said):
    snippet = tmp_path / "one.py"
    snippet.write_text("print(1)\n")
    done = submit("--device", device, str(snippet), timeout=60)
    assert done.returncode == code and said in done.stderr
    assert redis_client.llen("exec.tpu") == 0
