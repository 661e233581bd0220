"""GET /metrics in process: who may read it (METRICS_ALLOW, METRICS_TOKEN, a forwarded address
only behind TRUSTED_PROXIES), that it is Prometheus's format, requests counted by route rather
than path, open websockets, the fleet read from a Redis of the test's own (a worker's heartbeat,
a run waiting in its queue, a batch waiting for the recorder, Redis away), and the multiprocess
directory folding the counts of processes that are gone into its archive. The counts through the
real stack, across two web processes and the recorder: tests/integration/test_metrics.py."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import time
import uuid

import pytest
import redis
from django.urls import resolve
from prometheus_client.parser import text_string_to_metric_families

from bench.stack import ROOT
from executor import registry, runtimes, submit
from executor.celeryconf import COMMON

from .conftest import base_env

TOKEN = "metrics-token-" + "k" * 24
OUTSIDER = "203.0.113.9"


def scrape(client, **meta) -> list:
    response = client.get("/metrics", **meta)
    assert response.status_code == 200, response.content
    return [s for family in text_string_to_metric_families(response.content.decode()) for s in family.samples]


def value(samples: list, name: str, **labels) -> float:
    """The sum of a metric's samples with these labels (0 when there are none)."""
    return sum(s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


# Who may read it ----------------------------------------------------------------------------------

def test_it_answers_loopback_in_prometheus_text_format(client):
    response = client.get("/metrics")  # the test client comes from 127.0.0.1
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert response["Cache-Control"] == "no-store"
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    assert families["playground_http_requests"].type == "counter"
    assert families["playground_http_request_duration_seconds"].type == "histogram"
    assert families["playground_websockets_open"].type == "gauge"
    for name in ("playground_runs_started", "playground_runs_ended", "playground_run_latency_seconds",
                 "playground_recorder_lag_seconds", "playground_broker_up"):
        assert name in families, name


def test_a_scraper_that_asks_for_openmetrics_gets_it(client):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

    response = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    names = {f.name for f in openmetrics_families(response.content.decode())}
    assert {"playground_http_requests", "playground_runs_ended", "playground_broker_up"} <= names


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"])
def test_loopback_is_allowed_by_default(client, address):
    assert client.get("/metrics", REMOTE_ADDR=address).status_code == 200


@pytest.mark.parametrize("address", [OUTSIDER, "10.1.2.3", "2001:db8::1", "::ffff:203.0.113.9", "unknown"])
def test_another_address_is_refused(client, address):
    response = client.get("/metrics", REMOTE_ADDR=address)
    assert response.status_code == 403
    assert b"playground_" not in response.content


def test_addresses_and_networks_of_metrics_allow(client, settings):
    settings.METRICS_ALLOW = [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("2001:db8:5::7")]
    assert client.get("/metrics", REMOTE_ADDR="10.200.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="2001:db8:5::7").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="2001:db8:5::8").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403  # loopback was the default only


def test_the_token_lets_any_address_in_and_a_wrong_one_does_not(client, settings):
    settings.METRICS_TOKEN = TOKEN
    assert client.get("/metrics", REMOTE_ADDR=OUTSIDER, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    for header in (f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer ", f"Token {TOKEN}", TOKEN, ""):
        assert client.get("/metrics", REMOTE_ADDR=OUTSIDER, HTTP_AUTHORIZATION=header).status_code == 403, header


def test_without_metrics_token_no_token_lets_anyone_in(client, settings):
    settings.METRICS_TOKEN = ""
    for header in ("Bearer ", "Bearer", "Bearer x"):
        assert client.get("/metrics", REMOTE_ADDR=OUTSIDER, HTTP_AUTHORIZATION=header).status_code == 403


def test_a_forwarded_address_is_not_believed_without_trusted_proxies(client, settings):
    settings.TRUSTED_PROXIES = 0
    response = client.get("/metrics", REMOTE_ADDR=OUTSIDER, HTTP_X_FORWARDED_FOR="127.0.0.1")
    assert response.status_code == 403


def test_behind_a_trusted_proxy_the_address_it_saw_is_judged(client, settings):
    """nginx on the same host connects from 127.0.0.1: what counts is the client it saw, so the
    proxy's own loopback address lets no one through, nor does a forwarded loopback address that
    a client wrote itself (the proxy appends the address it saw after it)."""
    settings.TRUSTED_PROXIES = 1
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=OUTSIDER).status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1",
                      HTTP_X_FORWARDED_FOR=f"127.0.0.1, {OUTSIDER}").status_code == 403
    # A scraper on the proxy's host, through the proxy.
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 200
    # The token still works through the proxy.
    settings.METRICS_TOKEN = TOKEN
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=OUTSIDER,
                      HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_only_get_is_answered(client):
    assert client.post("/metrics").status_code == 405


def test_bad_settings_refuse_to_start():
    setup = "import django; django.setup(); print('started')"
    for env, message in ((dict(METRICS_ALLOW="10.0.0.0/33"), "METRICS_ALLOW"),
                         (dict(METRICS_ALLOW="localhost"), "METRICS_ALLOW"),
                         (dict(METRICS_TOKEN="short"), "METRICS_TOKEN is shorter than 16")):
        done = subprocess.run([sys.executable, "-c", setup], cwd=ROOT, env=base_env(**env), capture_output=True,
                              text=True, timeout=60)
        assert done.returncode != 0 and "started" not in done.stdout, env
        assert "ImproperlyConfigured" in done.stderr and message in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-c", setup], cwd=ROOT, env=base_env(METRICS_ALLOW="none"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "started" in done.stdout, done.stderr


# What it counts -----------------------------------------------------------------------------------

@pytest.mark.django_db
def test_requests_are_counted_by_route_and_status_never_by_path(client):
    before = scrape(client)
    first, second = uuid.uuid4(), uuid.uuid4()
    assert client.get(f"/api/runs/{first}").status_code == 404
    assert client.get(f"/api/runs/{second}").status_code == 404
    assert client.get(f"/no/such/page/{first}").status_code == 404
    client.generic("BREW", "/healthz")
    after = scrape(client)
    route = "/" + resolve(f"/api/runs/{first}").route  # the pattern, as urls.py writes it
    assert "run_id" in route
    name = "playground_http_requests_total"
    assert value(after, name, route=route, method="GET", status="404") - \
        value(before, name, route=route, method="GET", status="404") == 2
    assert value(after, name, route="unmatched", method="GET", status="404") - \
        value(before, name, route="unmatched", method="GET", status="404") == 1
    assert value(after, name, route="/healthz", method="other", status="405") - \
        value(before, name, route="/healthz", method="other", status="405") == 1
    # The scrape before this one is counted under its own route.
    assert value(after, name, route="/metrics", method="GET", status="200") >= 1
    assert value(after, "playground_http_request_duration_seconds_count", route=route, method="GET") - \
        value(before, "playground_http_request_duration_seconds_count", route=route, method="GET") == 2
    labels = {v for s in after if s.name.startswith("playground_http_") for v in s.labels.values()}
    assert not any(str(first) in v or str(second) in v or "/no/such" in v for v in labels), labels


@pytest.mark.django_db(transaction=True)
async def test_open_websockets_are_counted_until_they_close():
    from channels.testing import WebsocketCommunicator
    from prometheus_client import REGISTRY

    from web.asgi import application

    def open_now() -> float:
        return REGISTRY.get_sample_value("playground_websockets_open", {"consumer": "run"}) or 0.0

    def opened() -> float:
        return REGISTRY.get_sample_value("playground_websockets_opened_total", {"consumer": "run"}) or 0.0

    before, opened_before = open_now(), opened()
    comm = WebsocketCommunicator(application, f"/ws/runs/{uuid.uuid4()}/")
    connected, _ = await comm.connect()
    assert connected
    assert open_now() == before + 1
    await comm.disconnect()
    assert open_now() == before
    assert opened() == opened_before + 1


# The fleet, from a Redis of the test's own --------------------------------------------------------

@pytest.fixture
def fleet_redis(settings, own_redis):
    settings.REDIS_URL = own_redis.url
    settings.RECORD_QUEUE = "record"
    return own_redis


def celery_app(url: str):
    from celery import Celery

    app = Celery("metrics-test", broker=url)
    app.conf.update(COMMON)
    return app


def test_the_fleet_gauges_follow_a_heartbeat_and_a_queued_run(client, fleet_redis):
    broker = redis.Redis.from_url(fleet_redis.url)
    before = scrape(client)
    assert value(before, "playground_broker_up") == 1
    assert value(before, "playground_executor_workers_online", kind="gpu") == 0
    assert value(before, "playground_executor_queue_depth", queue="exec.gpu") == 0
    first = runtimes.FIRST
    registry.beat(broker, "gpu-metrics@test", "gpu", {"slots": 3, "busy": 1, "warm": 2, "runtime": first}, "test")
    submit.send_run(broker, "gpu:test", submit.run_message(str(uuid.uuid4()), "print(1)", {}, {"wall_s": 5}), 0)
    # A Celery client's publish lands in the same lists (at its priority step).
    celery_app(fleet_redis.url).send_task(submit.RUN_TASK, queue="exec.gpu", priority=3,
                                          kwargs=submit.run_message(str(uuid.uuid4()), "print(2)", {}, {"wall_s": 5}))
    after = scrape(client)
    labels = {"kind": "gpu", "device": "gpu:test", "runtime": first}
    assert value(after, "playground_executor_workers_online", **labels) == 1
    assert value(after, "playground_executor_slots", state="busy", **labels) == 1
    assert value(after, "playground_executor_slots", state="free", **labels) == 2
    assert value(after, "playground_executor_warm_runners", **labels) == 2
    assert value(after, "playground_executor_queue_depth", queue="exec.gpu.test", **labels) == 1
    # The kind's own queue, at another priority step: counted all the same.
    assert value(after, "playground_executor_queue_depth", queue="exec.gpu", kind="gpu", runtime=first) == 1
    # Every kind and runtime has its queue and a count of workers, 0 where there are none.
    for kind in ("cpu", "tpu"):
        for runtime in runtimes.catalog().own_ids:
            assert [s.value for s in after if s.name == "playground_executor_workers_online"
                    and s.labels == {"kind": kind, "device": kind, "runtime": runtime}] == [0], (kind, runtime)
            queue = registry.queue_name(registry.route(kind, runtime))
            assert [s.value for s in after if s.name == "playground_executor_queue_depth"
                    and s.labels.get("queue") == queue] == [0], queue
    # A worker that stopped beating leaves the count.
    registry.leave(broker, "gpu-metrics@test", "gpu", "test")
    assert value(scrape(client), "playground_executor_workers_online", kind="gpu") == 0


def test_a_batch_waiting_for_the_recorder_shows_its_age(client, fleet_redis):
    assert value(scrape(client), "playground_recorder_oldest_batch_age_seconds") == 0
    app = celery_app(fleet_redis.url)
    broker = redis.Redis.from_url(fleet_redis.url)
    now = time.time()
    # An executor's batches go on the recorder's stream; a task queued before an upgrade (or a
    # grade) in its queue. Both wait, and the oldest event of either is the age.
    batch = [{"seq": 2, "type": "stdout", "text": "x", "ts": now - 30}, {"seq": 3, "type": "stdout", "ts": now}]
    submit.send_batch(broker, "record", str(uuid.uuid4()), batch)
    submit.send_batch(broker, "record", str(uuid.uuid4()), [{"seq": 2, "type": "stdout", "ts": now - 5}])
    app.send_task(submit.RECORD_TASK, args=[str(uuid.uuid4()), [{"seq": 2, "type": "stdout", "ts": now - 50}]],
                  queue="record")
    samples = scrape(client)
    assert value(samples, "playground_recorder_queue_depth") == 3
    assert 50 <= value(samples, "playground_recorder_oldest_batch_age_seconds") < 60
    broker.delete("record")
    samples = scrape(client)
    assert value(samples, "playground_recorder_queue_depth") == 2
    assert 30 <= value(samples, "playground_recorder_oldest_batch_age_seconds") < 40


def test_with_redis_away_the_rest_is_still_answered(client, fleet_redis):
    assert client.get("/healthz").status_code == 200
    fleet_redis.stop()
    started = time.monotonic()
    samples = scrape(client)
    assert time.monotonic() - started < 5
    assert value(samples, "playground_broker_up") == 0
    assert not [s for s in samples if s.name.startswith("playground_executor_")]
    assert [s for s in samples if s.name == "playground_http_requests_total"]


# The multiprocess directory -----------------------------------------------------------------------

COUNT = """
import django, os, sys
django.setup()
from web import metrics
metrics.HTTP_REQUESTS.labels("/x", "GET", "200").inc(int(sys.argv[1]))
metrics.HTTP_DURATION.labels("/x", "GET").observe(0.02)
metrics.WEBSOCKETS_OPEN.labels("run").inc()
print(os.getpid(), flush=True)
os._exit(0)  # killed: no goodbye, its live gauge stays behind
"""


def test_the_counts_of_processes_that_are_gone_are_kept_in_one_archive(tmp_path):
    from prometheus_client.multiprocess import MultiProcessCollector

    from web.metrics import directory_lock, tidy

    path = tmp_path / "metrics"
    env = base_env(PROMETHEUS_MULTIPROC_DIR=str(path))

    def run(count: int) -> int:
        done = subprocess.run([sys.executable, "-c", COUNT, str(count)], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.split()[-1])

    def totals() -> dict:
        with directory_lock(str(path)):
            tidy(str(path))
            samples = [s for m in MultiProcessCollector(None, path=str(path)).collect() for s in m.samples]
        return {"requests": value(samples, "playground_http_requests_total", route="/x"),
                "observed": value(samples, "playground_http_request_duration_seconds_count", route="/x"),
                "sockets": value(samples, "playground_websockets_open", consumer="run")}

    first = run(3)
    assert (path / f"gauge_livesum_{first}.db").exists()  # settings made the directory, the process its files
    second = run(4)  # starting, it tidies what the first left
    assert not (path / f"counter_{first}.db").exists()
    assert totals() == {"requests": 7, "observed": 2, "sockets": 0}
    assert sorted(os.listdir(path)) == [".lock", "counter_archive.db", "histogram_archive.db"], second
    assert run(5) and totals() == {"requests": 12, "observed": 3, "sockets": 0}
    assert sorted(os.listdir(path)) == [".lock", "counter_archive.db", "histogram_archive.db"]
