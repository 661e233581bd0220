"""/healthz (the process is up, nothing else touched) and /readyz (database, Redis, an executor
online), with each dependency down in turn: 503 naming which and why, within a second or two."""

from __future__ import annotations

import json
import time

import pytest
import redis

from bench.stack import free_port
from executor import registry
from tests.conftest import stack_env

from .conftest import base_env


def beat(url: str, name: str = "cpu-probe@test") -> None:
    """An executor's heartbeat, as a worker writes it (executor.registry)."""
    registry.beat(redis.Redis.from_url(url), name, "cpu", {"slots": 1, "busy": 0})


@pytest.fixture
def on_redis(settings, own_redis):
    settings.REDIS_URL = own_redis.url
    settings.READYZ_CACHE_S = 0  # these tests change what it checks from one request to the next
    return own_redis


def test_healthz_touches_nothing(client, monkeypatch):
    """No database (this test may not use one: a query would fail it) and no Redis."""
    import redis as redis_module

    def no(*args, **kwargs):
        raise AssertionError("healthz touched Redis")

    monkeypatch.setattr(redis_module.Redis, "execute_command", no)
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_ready_with_database_redis_and_an_executor(client, on_redis):
    beat(on_redis.url)
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "ready"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True, "redis": True, "executors": True}
    assert body["checks"]["executors"]["online"]["cpu"] == 1
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_not_ready_without_an_executor_online(client, on_redis):
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["ok"] and body["checks"]["redis"]["ok"]
    assert body["checks"]["executors"]["ok"] is False
    assert "no executor online" in body["checks"]["executors"]["error"]


@pytest.mark.django_db
def test_not_ready_while_redis_is_down_and_ready_again_after(client, on_redis):
    beat(on_redis.url)
    assert client.get("/readyz").status_code == 200
    on_redis.stop()
    started = time.monotonic()
    response = client.get("/readyz")
    assert time.monotonic() - started < 3
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"]["ok"] is True
    assert checks["redis"]["ok"] is False
    assert "ConnectionError" in checks["redis"]["error"]
    assert checks["executors"] == {"ok": False, "error": "not checked: Redis is unreachable"}
    assert client.get("/healthz").status_code == 200
    on_redis.start()
    beat(on_redis.url)
    assert client.get("/readyz").status_code == 200


@pytest.mark.django_db
def test_not_ready_when_an_executor_stopped_beating(client, on_redis, settings):
    client_redis = redis.Redis.from_url(on_redis.url)
    window = getattr(settings, "EXECUTOR_ONLINE_WINDOW_S", registry.ONLINE_WINDOW_S)
    client_redis.zadd("executors:cpu", {"gone@test": time.time() - window - 5})
    assert client.get("/readyz").status_code == 503


def test_no_csrf_no_auth_and_only_get(client):
    csrf_client = client.__class__(enforce_csrf_checks=True)
    assert csrf_client.get("/healthz").status_code == 200
    assert client.post("/healthz").status_code == 405


@pytest.mark.parametrize("database_url", [
    "postgres://nobody@127.0.0.1:{port}/nowhere",  # nothing listens there
    "sqlite:////nonexistent-folder/db.sqlite3",
])
def test_not_ready_when_the_database_is_unreachable(web_server, own_redis, database_url):
    """Through a real web process whose DATABASE_URL points nowhere: /healthz still answers."""
    server = web_server(base_env(DATABASE_URL=database_url.format(port=free_port()), REDIS_URL=own_redis.url))
    beat(own_redis.url)
    assert server.get("/healthz")[:2] == (200, {"status": "ok"})
    started = time.monotonic()
    status, body, _ = server.get("/readyz")
    assert time.monotonic() - started < 4
    assert status == 503
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["ok"] is False
    assert body["checks"]["database"]["error"]
    assert body["checks"]["redis"]["ok"] and body["checks"]["executors"]["ok"]


def test_ready_through_the_real_server(live_stack):
    status, body = live_stack.fetch("/readyz")
    assert status == 200, body
    assert body["checks"]["executors"]["online"]["cpu"] >= 1
    assert live_stack.fetch("/healthz") == (200, {"status": "ok"})


def test_health_is_not_rate_limited(web_server, own_redis, django_db_setup):
    server = web_server(stack_env(own_redis.url, RUN_RATE_LIMIT_PER_MINUTE="1"))
    beat(own_redis.url)
    statuses = {server.get("/readyz")[0] for _ in range(30)} | {server.get("/healthz")[0] for _ in range(30)}
    assert statuses == {200}


@pytest.mark.django_db
def test_readyz_checks_at_most_once_a_second(client, on_redis, settings, monkeypatch):
    """It is public: polling it as fast as one likes opens one database connection a second."""
    from web import health

    settings.READYZ_CACHE_S = 1
    beat(on_redis.url)
    checked = []
    real = health.check_database
    monkeypatch.setattr(health, "check_database", lambda: checked.append(1) or real())
    statuses = {client.get("/readyz").status_code for _ in range(20)}
    assert statuses == {200}
    assert len(checked) == 1
    time.sleep(1.1)
    assert client.get("/readyz").status_code == 200
    assert len(checked) == 2


@pytest.mark.django_db
def test_readyz_is_rate_limited_per_client(on_redis, settings):
    from django.test import Client

    settings.READYZ_RATE_LIMIT_PER_MINUTE = 3
    beat(on_redis.url)
    prober = Client(REMOTE_ADDR="2001:db8:1:2::1")
    assert [prober.get("/readyz").status_code for _ in range(3)] == [200, 200, 200]
    refused = Client(REMOTE_ADDR="2001:db8:1:2::99").get("/readyz")  # the same /64
    assert refused.status_code == 429
    assert set(refused.json()) == {"error", "limit", "retry_after"} and refused["Retry-After"]
    assert Client(REMOTE_ADDR="203.0.113.7").get("/readyz").status_code == 200
    assert prober.get("/healthz").status_code == 200  # the liveness check has no limit


@pytest.mark.django_db
def test_a_node_whose_runners_cannot_open_the_chip_says_why(client, on_redis, settings):
    """A TPU node whose runners find the chip held never becomes ready, so it sends no heartbeat:
    its pool reports the cause instead, which /readyz and /metrics show, and takes it back once
    a runner starts."""
    import sys

    from executor.pool import RunnerPool
    from executor.sandbox import DirectLauncher, Limits, launcher as launcher_module

    held = ("import sys; sys.stderr.write('ABORTED: Internal error when accessing libtpu multi-process "
            "lockfile.\\n'); sys.exit(1)")

    class HeldChip(DirectLauncher):
        def start(self, slot, lean=False, session_cpu_s=None):
            return launcher_module.spawn_runner(lambda fd: [sys.executable, "-c", held, str(fd)], cwd="/", env={})

    client_redis = redis.Redis.from_url(on_redis.url)
    told = []

    def on_fault(code, reason):
        told.append(code)
        if code is None:
            registry.clear_fault(client_redis, "tpu@host-a", "tpu")
        else:
            registry.report_fault(client_redis, "tpu@host-a", "tpu", code, reason)

    settings.RUN_DEVICE_KINDS = ["cpu", "tpu"]
    pool = RunnerPool(HeldChip(limits=Limits()), size=1, concurrency=1, ready_timeout_s=5, on_fault=on_fault)
    pool.start()
    try:
        deadline = time.monotonic() + 20
        while "device_busy" not in told and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        pool.stop()
    assert told and told[0] == "device_busy", told
    body = client.get("/readyz").json()
    assert body["checks"]["executors"]["faults"]["tpu"] == [{
        "worker": "tpu@host-a", "code": "device_busy",
        "reason": "runner exited during warm-up: the device is held by another process "
                  "(libtpu lets one process hold a chip)"}]
    assert "lockfile" not in json.dumps(body)  # what the runner printed stays in the worker's log
    metrics = client.get("/metrics").content.decode()
    assert 'playground_executor_start_faults{code="device_busy",kind="tpu"} 1.0' in metrics
    on_fault(None, None)
    assert "faults" not in client.get("/readyz").json()["checks"]["executors"]
