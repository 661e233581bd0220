"""Fair shares of the executors, per client: admission in front of Celery's queues.

    client    a signed-in account ("user:<id>"), else its address; an IPv6 address counts per /64
              (one host holds a whole /64: rotating through it must not buy more runs)
    active    runs queued or running at once, at most RUN_MAX_ACTIVE_PER_CLIENT: one person
              submitting 100 runs has a few in the queue, so everyone else's wait behind at most
              that many of theirs
    order     a run goes into the queue at the priority of how many the client already has
              queued or running: a client's first run is taken before anyone's second, its
              second before anyone's third (Celery's priorities, one Redis list a step)
    budget    executor seconds (runs' wall time) per hour and per day for each device kind
    queue     a kind whose queue already holds RUN_QUEUE_MAX runs answers 503 at once

Going over a limit is a 429 (a full queue a 503) whose JSON says which limit was hit and when to
come back, as does its Retry-After. A run's slot is given back and its seconds counted when the
recorder stores its end (``run_status_changed``), whatever the end was; a slot whose end never
came (a database restored from a backup, say) expires after RUN_QUEUE_TIMEOUT_S + the wall clock.
"""

from __future__ import annotations

import ipaddress
import math
import time

from django.conf import settings
from django.dispatch import receiver

from executor import events as ev
from executor import registry

from .actions.errors import ActionError
from .redis import get_redis
from .signals import run_status_changed

KEY_TTL_S = 2 * 24 * 3600
# The Retry-After of a client at its cap of active runs.
ACTIVE_RETRY_S = 2.0

# Admission, atomically: drop slots that expired, count, take one if there is room.
# KEYS[1] the client's active set; ARGV: now, expiry cutoff, cap, run id, ttl. Returns the count
# before (a count >= cap: refused) and the oldest slot's time (when one frees at the latest).
_ADMIT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {n, oldest[2] or ARGV[1]}
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return {n, ARGV[1]}
"""


def client_key(address: str, user=None) -> str:
    """Whom a run counts against: the account when signed in, else the address (IPv6 per /64)."""
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"ip:{address}"
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return f"ip:{ip.ipv4_mapped}"
        return f"ip:{ipaddress.ip_network(f'{ip}/64', strict=False)}"
    return f"ip:{ip}"


def _kind(device: str) -> str:
    return device.split(":", 1)[0]


def _limits(kind: str) -> dict:
    return settings.RUN_QUOTAS.get(kind) or settings.RUN_QUOTAS["cpu"]


def refuse(message: str, limit: str, retry_s: float, status: int = 429) -> ActionError:
    retry = max(1, math.ceil(retry_s))
    return ActionError(f"{message}; try again in {retry} s", status=status,
                       headers={"Retry-After": str(retry)}, data={"limit": limit, "retry_after": retry})


def check_queue_length(device: str, queue_length: int) -> None:
    cap = _limits(_kind(device))["queue_max"]
    if cap and queue_length >= cap:
        raise refuse(f"the {device} queue is full ({queue_length} runs waiting)", "queue_length",
                     settings.RUN_LIMITS["wall_s"], status=503)


def check_budget(client: str, device: str) -> None:
    """Refuse when the client has used its executor seconds of this kind this hour or day."""
    kind, now = _kind(device), time.time()
    limits = _limits(kind)
    redis = get_redis()
    for window, per, name in ((3600, limits["per_hour_s"], "hourly_budget"),
                              (86400, limits["per_day_s"], "daily_budget")):
        if not per:
            continue
        used = float(redis.get(_budget_key(client, kind, window, now)) or 0)
        if used >= per:
            span = "hour" if window == 3600 else "day"
            raise refuse(f"you have used this {span}'s {per:g} s of {kind} executor time", name,
                         window - now % window)


def admit(client: str, device: str, run_id: str) -> int:
    """Take one of the client's active slots for ``run_id``, or refuse (429). Returns the run's
    priority step: 0 for a client with nothing queued or running, later steps for more."""
    cap = _limits(_kind(device))["active"]
    now = time.time()
    redis = get_redis()
    redis.set(_client_of(run_id), client, ex=KEY_TTL_S)
    if not cap:
        return 0
    expire_s = settings.RUN_QUEUE_TIMEOUT_S + settings.RUN_LIMITS["wall_s"] + 60
    count, oldest = redis.eval(_ADMIT, 1, _active_key(client), now, now - expire_s, cap, run_id, KEY_TTL_S)
    if int(count) >= cap:
        redis.delete(_client_of(run_id))
        # A slot frees when one of these runs ends, which for most runs is within a second or
        # two (the wall clock bounds it): asking again soon costs a request, asking late a wait.
        retry = min(ACTIVE_RETRY_S, max(1.0, float(oldest) + settings.RUN_LIMITS["wall_s"] - now))
        raise refuse(f"you already have {int(count)} runs queued or running (at most {cap} at once)",
                     "active_runs", retry)
    return priority(int(count))


def priority(active_before: int) -> int:
    """The priority step of a client's next run, from how many it already has (0 first)."""
    return registry.PRIORITY_STEPS[min(active_before, len(registry.PRIORITY_STEPS) - 1)]


def release(run_id: str, *, wall_ms: float | None = None, device: str | None = None) -> None:
    """The run ended: its slot is free and its seconds are counted."""
    redis = get_redis()
    client = redis.get(_client_of(run_id))
    if client is None:
        return
    client = client.decode()
    pipe = redis.pipeline()
    pipe.zrem(_active_key(client), run_id)
    pipe.delete(_client_of(run_id))
    if wall_ms and device:
        now = time.time()
        for window in (3600, 86400):
            key = _budget_key(client, _kind(device), window, now)
            pipe.incrbyfloat(key, wall_ms / 1000)
            pipe.expire(key, window + 60)
    pipe.execute()


def _active_key(client: str) -> str:
    return f"quota:active:{client}"


def _client_of(run_id: str) -> str:
    return f"quota:client:{run_id}"


def _budget_key(client: str, kind: str, window: int, now: float) -> str:
    return f"quota:seconds:{client}:{kind}:{window}:{int(now // window)}"


@receiver(run_status_changed, dispatch_uid="playground.quotas.release")
def _on_run_status_changed(sender, run_id: str, status: str, **kwargs) -> None:
    if status not in ev.TERMINAL_STATUSES:
        return
    from .models import Run

    run = Run.objects.filter(id=run_id).values("wall_ms", "device").first() or {}
    release(run_id, wall_ms=run.get("wall_ms"), device=run.get("device"))
