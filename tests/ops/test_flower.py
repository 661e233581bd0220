"""Flower, Celery's monitor, against the suite's broker with nothing but its URL (requirements/ops.txt):
it finds the running executor and the queue its Celery consumer takes, as an operator's dashboard would."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from bench.stack import ROOT, free_port
from tests.conftest import TEST_REDIS_URL


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read().decode()


@pytest.fixture
def flower(live_stack, tmp_path):
    port = free_port()
    log = open(tmp_path / "flower.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", f"--broker={TEST_REDIS_URL}", "flower", f"--port={port}",
         "--address=127.0.0.1"],
        cwd=ROOT, env={**live_stack.env, "FLOWER_UNAUTHENTICATED_API": "1"}, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if get(f"{url}/healthcheck") == "OK":
                break
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "flower.log").read_text()
        time.sleep(0.3)
    yield url
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)


def test_flower_lists_the_executor_and_its_queues(live_stack, flower):
    """/api/workers asks the workers (celery inspect); /metrics follows their heartbeat events,
    sent every 2 s: both are waited for, a minute at most."""
    live_stack.wait_online("cpu")
    deadline = time.monotonic() + 60
    while True:
        workers = json.loads(get(f"{flower}/api/workers?refresh=1"))
        executors = {name: info for name, info in workers.items() if name.startswith("cpu-executor@")}
        metrics = get(f"{flower}/metrics")
        if (executors and all(info.get("active_queues") for info in executors.values())
                and all(f'flower_worker_online{{worker="{name}"}} 1.0' in metrics for name in executors)):
            break
        assert time.monotonic() < deadline, (workers, [m for m in metrics.splitlines() if "online" in m])
        time.sleep(1)
    [(name, info)] = executors.items()
    # Its Celery consumer takes the cells scripts send to its sessions; its runs are taken off
    # exec.cpu by its run threads (executor/runqueue.py), not through Celery.
    assert {q["name"] for q in info["active_queues"]} == {f"sessions.{name}"}
    assert "executor.run" in info["registered"]
