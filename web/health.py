"""Health checks for load balancers and orchestrators: no authentication, no CSRF.

    GET /healthz   the process is up and answers: 200 {"status": "ok"}; touches nothing else,
                   and has no rate limit
    GET /readyz    it can serve: the database, Redis, and at least one executor online
                   200 {"status": "ready", "checks": {...}}
                   503 {"status": "unavailable", "checks": {...}} naming what failed and why

A check is one new database connection (2 s to connect) running ``SELECT 1 FROM
django_migrations``, and a Redis client of its own with 1 s timeouts for a PING and the
executors' heartbeats (executor.registry). /readyz is public, so it must not let anyone open
database connections at will: its answer is kept READYZ_CACHE_S (a second), so a process checks
at most once a second however often it is asked, and one client may ask
READYZ_RATE_LIMIT_PER_MINUTE times a minute (counted in Redis; while Redis is away, not counted).
"""

from __future__ import annotations

import logging
import threading
import time
from urllib.parse import quote

import redis
from django.conf import settings
from django.db import connections
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from executor import registry
from web.clients import client_address, client_key
from web.errors import ActionError
from web.ratelimit import check_rate

DATABASE_TIMEOUT_S = 2
REDIS_TIMEOUT_S = 1.0

log = logging.getLogger("web.health")
_was_ready: bool | None = None
_redis: dict[str, redis.Redis] = {}
_redis_lock = threading.Lock()
_check_lock = threading.Lock()
_cached: tuple[float, bool, dict] | None = None


def _no_store(response: JsonResponse) -> JsonResponse:
    response["Cache-Control"] = "no-store"
    return response


@csrf_exempt
@require_GET
def healthz(request):
    return _no_store(JsonResponse({"status": "ok"}))


@csrf_exempt
@require_GET
def readyz(request):
    try:
        # By address only: who is signed in would take a database query.
        address = client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))
        check_rate("readyz", client_key(address), settings.READYZ_RATE_LIMIT_PER_MINUTE, 60,
                   "readiness checks", redis=quick_redis())
    except ActionError as exc:
        response = _no_store(JsonResponse({"error": exc.message, **exc.data}, status=exc.status))
        for name, value in exc.headers.items():
            response[name] = value
        return response
    except redis.RedisError:
        pass  # Redis is away: the answer (cached) says so; there is nothing to count with
    ready, checks = readiness()
    return _no_store(JsonResponse({"status": "ready" if ready else "unavailable", "checks": checks},
                                  status=200 if ready else 503))


def readiness() -> tuple[bool, dict]:
    """(ready, checks), checked at most once every READYZ_CACHE_S in this process: concurrent
    requests wait for the one check under way rather than each opening a connection."""
    global _cached
    with _check_lock:
        if _cached is not None and time.monotonic() - _cached[0] < settings.READYZ_CACHE_S:
            return _cached[1], _cached[2]
        ready, checks = _check_all()
        _cached = (time.monotonic(), ready, checks)
        return ready, checks


def forget_readiness() -> None:
    """The next /readyz checks again (tests that change what it checks)."""
    global _cached
    with _check_lock:
        _cached = None


def _check_all() -> tuple[bool, dict]:
    checks = {"database": _timed(check_database)}
    checks["redis"] = _timed(check_redis)
    if checks["redis"]["ok"]:
        checks["executors"] = _timed(check_executors)
    else:
        checks["executors"] = {"ok": False, "error": "not checked: Redis is unreachable"}
    ready = all(c["ok"] for c in checks.values())
    _log_change(ready, checks)
    return ready, checks


def _log_change(ready: bool, checks: dict) -> None:
    """A line when readiness changes, not one per poll."""
    global _was_ready
    if ready != _was_ready:
        if ready:
            log.info("ready: database, Redis and executors answer")
        else:
            log.warning("not ready: %s", "; ".join(f"{name}: {c['error']}" for name, c in checks.items()
                                                   if not c["ok"]))
    _was_ready = ready


def _timed(check) -> dict:
    started = time.perf_counter()
    try:
        result = {"ok": True, **(check() or {})}
    except Unready as exc:
        result = {"ok": False, "error": str(exc), **exc.details}
    except Exception as exc:  # noqa: BLE001 - what failed, and why, is the answer
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}".strip()}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def check_database() -> dict:
    """A connection of its own (not the request's), with a short connect timeout, so that a
    database that does not answer fails the check in seconds instead of hanging it."""
    connection = connections["default"]
    params = connection.get_connection_params()
    if connection.vendor == "postgresql":
        params["connect_timeout"] = DATABASE_TIMEOUT_S
    elif connection.vendor == "sqlite":
        params["timeout"] = DATABASE_TIMEOUT_S
        # Read-write, never create: a missing file is a database that is not there.
        name = str(params["database"])
        if not name.startswith("file:") and name != ":memory:":
            params["database"] = f"file:{quote(name)}?mode=rw"
            params["uri"] = True
    # PostgreSQL's directly, not from the pool (which would wait its own timeout for one).
    raw = connection.Database.connect(**params) if connection.vendor == "postgresql" \
        else connection.get_new_connection(params)
    try:
        cursor = raw.cursor()
        # The schema is there, not only a server: the migrations' table.
        cursor.execute("SELECT 1 FROM django_migrations LIMIT 1")
        cursor.fetchall()
        cursor.close()
    finally:
        raw.close()
    return {"vendor": connection.vendor}


def quick_redis() -> redis.Redis:
    """A client with one-second timeouts, for answers that must come back when Redis is away
    (health checks, a metrics scrape): shared by them, apart from the requests' own."""
    with _redis_lock:
        client = _redis.get(settings.REDIS_URL)
        if client is None:
            client = _redis[settings.REDIS_URL] = redis.Redis.from_url(
                settings.REDIS_URL, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S,
                max_connections=8)
        return client


def check_redis() -> dict:
    quick_redis().ping()
    return {}


def check_executors() -> dict:
    window = settings.EXECUTOR_ONLINE_WINDOW_S
    client = quick_redis()
    online = {kind: len(registry.online_workers(client, kind, window)) for kind in settings.RUN_DEVICE_KINDS}
    # Workers whose runners do not start, and why (the cause's code and sentence only: what the
    # runner printed stays in the worker's log, this answer is public).
    faults = {kind: [{"worker": f.get("name"), "code": f.get("code"), "reason": str(f.get("reason", "")).split(" [")[0]}
                     for f in registry.faults(client, kind)] for kind in settings.RUN_DEVICE_KINDS}
    faults = {kind: found for kind, found in faults.items() if found}
    if not any(online.values()):
        raise Unready("no executor online: none has sent a heartbeat lately", online=online,
                      **({"faults": faults} if faults else {}))
    return {"online": online, **({"faults": faults} if faults else {})}


class Unready(Exception):
    """A check that ran and found the service not ready: its message and details are the answer."""

    def __init__(self, message: str, **details):
        super().__init__(message)
        self.details = details
