"""/metrics through the real stack, as a host with several web processes runs it: two daphne
processes and the recorder share one PROMETHEUS_MULTIPROC_DIR, so either process answers for all
three. A run through one is counted in the other's answer (started, ended, its latency, the
recorder's lag, the request); a run waiting behind a busy slot shows in the fleet's gauges; a web
process killed with a socket open leaves the open-socket count and keeps its counts. The stack
is this file's own, on a Redis of its own, with one executor slot."""

from __future__ import annotations

import os
import signal
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.stack import RedisServer, Stack, free_port
from executor import runtimes
from tests.conftest import stack_env

pytestmark = pytest.mark.django_db(transaction=True)


class Metrics:
    """What one scrape of a web process said."""

    def __init__(self, url: str):
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            assert response.status == 200
            text = response.read().decode()
        self.samples = [s for family in text_string_to_metric_families(text) for s in family.samples]

    def __call__(self, name: str, **labels) -> float:
        return sum(s.value for s in self.samples
                   if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


@pytest.fixture(scope="module")
def metrics_stack(django_db_setup, django_db_blocker, tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("metrics-redis"))
    server.start()
    directory = tmp_path_factory.mktemp("metrics") / "multiproc"  # made by the settings
    env = stack_env(server.url, PROMETHEUS_MULTIPROC_DIR=str(directory), EXECUTOR_CONCURRENCY="1",
                    EXECUTOR_POOL_SIZE="1")
    stack = Stack.launch(env, tmp_path_factory.mktemp("metrics-stack-logs"))
    try:
        port = free_port()
        stack.start("web-2", [sys.executable, "-m", "web.server", "-e", f"tcp:port={port}:interface=127.0.0.1",
                              "web.asgi:application"])
        second = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(second + "/healthz", timeout=5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the second web process did not start"
                time.sleep(0.2)
        stack.directory = directory
        stack.second = second
        yield stack
    finally:
        stack.stop()
        server.stop()


def until(scrape, check, timeout: float = 30):
    """Scrape until ``check(metrics)`` holds; the last scrape."""
    deadline = time.monotonic() + timeout
    while True:
        metrics = scrape()
        if check(metrics) or time.monotonic() > deadline:
            return metrics
        time.sleep(0.2)


def test_a_run_through_one_process_is_counted_in_the_others_answer(metrics_stack):
    first = runtimes.FIRST
    second = lambda: Metrics(metrics_stack.second)
    before = second()
    status, run = metrics_stack.post("/api/runs", {"code": "print(1)"})  # the first web process
    assert status == 201, run
    assert metrics_stack.wait_finished(run["id"])["status"] == "succeeded"
    ended = dict(kind="cpu", runtime=first, status="succeeded")
    after = until(second, lambda m: m("playground_runs_ended_total", **ended) > before("playground_runs_ended_total",
                                                                                          **ended))
    assert after("playground_runs_ended_total", **ended) - before("playground_runs_ended_total", **ended) == 1
    assert after("playground_runs_started_total", kind="cpu", runtime=first) - \
        before("playground_runs_started_total", kind="cpu", runtime=first) == 1
    latency = dict(kind="cpu", status="succeeded")
    assert after("playground_run_latency_seconds_count", **latency) - \
        before("playground_run_latency_seconds_count", **latency) == 1
    assert 0 < after("playground_run_latency_seconds_sum", **latency) - \
        before("playground_run_latency_seconds_sum", **latency) < 60
    assert after("playground_recorder_lag_seconds_count") > before("playground_recorder_lag_seconds_count")
    created = dict(route="/api/runs", method="POST", status="201")
    assert after("playground_http_requests_total", **created) - before("playground_http_requests_total", **created) == 1
    # The first process answers the same counts: one directory, whichever process is asked.
    assert Metrics(metrics_stack.url)("playground_runs_ended_total", **ended) == \
        after("playground_runs_ended_total", **ended)
    # The stack's executor, from its heartbeat: one slot, free again once it has beaten since.
    workers = dict(kind="cpu", runtime=first)
    fleet = until(second, lambda m: m("playground_executor_slots", state="free", **workers) == 1)
    assert fleet("playground_broker_up") == 1
    assert fleet("playground_executor_workers_online", **workers) == 1
    assert fleet("playground_executor_slots", state="free", **workers) == 1
    assert fleet("playground_executor_slots", state="busy", **workers) == 0


def test_a_waiting_run_and_a_killed_process_with_an_open_socket(metrics_stack):
    from websockets.sync.client import connect

    first = runtimes.FIRST
    scrape = lambda: Metrics(metrics_stack.url)
    status, sleeper = metrics_stack.post("/api/runs", {"code": "import time\ntime.sleep(6)\nprint('done')"})
    assert status == 201, sleeper
    status, waiter = metrics_stack.post("/api/runs", {"code": "print(2)"})
    assert status == 201, waiter
    workers = dict(kind="cpu", runtime=first)
    busy = until(scrape, lambda m: m("playground_executor_slots", state="busy", **workers) == 1
                 and m("playground_executor_queue_depth", queue="exec.cpu") == 1)
    assert busy("playground_executor_slots", state="busy", **workers) == 1
    assert busy("playground_executor_slots", state="free", **workers) == 0
    assert busy("playground_executor_queue_depth", queue="exec.cpu", kind="cpu", device="cpu", runtime=first) == 1

    # A socket held open on the second process, seen from the first.
    port = metrics_stack.second.rsplit(":", 1)[1]
    with connect(f"ws://127.0.0.1:{port}/ws/runs/{sleeper['id']}/", open_timeout=10) as socket:
        assert '"queued"' in socket.recv(timeout=10)
        held = until(scrape, lambda m: m("playground_websockets_open", consumer="run") == 1)
        assert held("playground_websockets_open", consumer="run") == 1
        pid = metrics_stack.procs["web-2"].pid
        assert (metrics_stack.directory / f"gauge_livesum_{pid}.db").exists()
        metrics_stack.kill("web-2", signal.SIGKILL)  # no goodbye
    counted = held("playground_http_requests_total")
    gone = scrape()
    assert gone("playground_websockets_open", consumer="run") == 0
    # Its requests are still counted (the scrape before this one, too): none fell out of the total.
    assert gone("playground_http_requests_total") >= counted + 1
    assert not [name for name in os.listdir(metrics_stack.directory) if name.endswith(f"_{pid}.db")]
    assert (metrics_stack.directory / "counter_archive.db").exists()

    for run in (sleeper, waiter):
        assert metrics_stack.wait_finished(run["id"], timeout=60)["status"] == "succeeded"
