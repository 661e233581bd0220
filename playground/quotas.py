"""Fair shares of the executors, per client: admission in front of Celery's queues.

    client    ``web.clients.client_key``: a signed-in account ("user:<id>") and only it,
              else its address; an IPv6 address counts per /64 (one host holds a whole /64:
              rotating through it must not buy more runs)
    active    runs queued or running at once, at most RUN_MAX_ACTIVE_PER_CLIENT: one person
              submitting 100 runs has a few in the queue, so everyone else's wait behind at most
              that many of theirs. Everyone signed out behind one address shares its
              RUN_MAX_ACTIVE_PER_ADDRESS (twice a person's by default); a refusal tells them
              that signing in gives each a share of their own
    order     a run goes into the queue at the priority of how many the client already has
              queued or running: a client's first run is taken before anyone's second, its
              second before anyone's third (Celery's priorities, one Redis list a step); the
              last step is a regrade's, below every run a person is waiting for
    budget    executor seconds (runs' wall time) per hour and per day for each device kind
    queue     a kind whose queue already holds RUN_QUEUE_MAX runs answers 503 at once (a
              regrade's runs wait apart and are not counted against people's runs)

Every run a person starts is admitted by ``check_admit_run``: a run of the playground, a free run
on an assignment's page and a submission alike. A regrade is its instructor's: its runs count
against the instructor's budget, take no active slot (one regrade queues a run per student) and
are queued at the regrade step (``check_admit_regrade``, ``admit_regrade``).

Going over a limit is a 429 (a full queue a 503) whose JSON is ``{"error", "limit",
"retry_after"}``, with a Retry-After, on every endpoint. A run's slot is given back and its
seconds counted when the recorder stores its end (``run_status_changed``), whatever the end was;
a slot whose end never came (a database restored from a backup, say) expires after
RUN_QUEUE_TIMEOUT_S + the wall clock.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.dispatch import receiver

from executor import events as ev
from executor import registry, shares

from web.clients import client_key, is_account_key
from web.errors import ActionError
from web.ratelimit import check_rate

from .redis import get_redis
from .signals import run_status_changed

__all__ = ["client_key", "check_admit_run", "check_admit_regrade", "admit_regrade", "release"]

KEY_TTL_S = 2 * 24 * 3600
# Priority steps: a person's runs take the first steps, by how many they already have; a
# regrade's runs take the last, so a worker takes one only when no person's run is waiting.
INTERACTIVE_STEPS = registry.PRIORITY_STEPS[:-1]
REGRADE_STEP = registry.PRIORITY_STEPS[-1]
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


def _kind(device: str) -> str:
    """The kind of a device string or route: budgets are per kind, whatever the runtime."""
    return registry.parse_device(device)[0]


def _limits(kind: str) -> dict:
    return settings.RUN_QUOTAS.get(kind) or settings.RUN_QUOTAS["cpu"]


def refuse(message: str, limit: str, retry_s: float, status: int = 429) -> ActionError:
    retry = max(1, math.ceil(retry_s))
    return ActionError(f"{message}; try again in {retry} s", status=status,
                       headers={"Retry-After": str(retry)}, data={"limit": limit, "retry_after": retry})


def check_admit_run(who: str, device: str, run_id: str) -> int:
    """Admit a run a person starts (``who``: their client key) on ``device``, or refuse: the run
    rate, the device's queue, the hourly and daily budget, then one of their active slots.
    Returns the priority step to queue it at. The caller releases the slot (``release``) if the
    run is not made after all."""
    try:
        check_rate("runs", who, settings.RUN_RATE_LIMIT_PER_MINUTE, 60, "runs")
        check_queue_length(device, interactive_queue_depth(device))
        check_budget(who, device)
        return admit(who, device, run_id)
    except ActionError as exc:
        if exc.status != 429 or is_account_key(who):
            raise
        # Signed out, the share is the address's: the fifth person on a shared network is told
        # it is not theirs alone, and how to have one that is.
        raise ActionError(f"{exc.message}. Signed out, everyone at your address shares this limit: "
                          "sign in to have a share of your own", status=exc.status, headers=exc.headers,
                          data=exc.data) from None


def check_admit_regrade(who: str, device: str, runs: int) -> None:
    """A regrade of ``runs`` submissions by the instructor ``who``: refused while the instructor's
    budget of the kind is used up, or when the regrade's runs would not fit in the queue."""
    check_budget(who, device)
    cap = _limits(_kind(device))["queue_max"]
    waiting = regrade_queue_depth(device)
    if cap and waiting + runs > cap:
        raise refuse(f"the {device} queue has {waiting} regrade runs waiting; {runs} more would pass its "
                     f"{cap}", "queue_length", settings.RUN_LIMITS["wall_s"], status=503)


def admit_regrade(who: str, run_id: str) -> int:
    """A regrade's run: its seconds count against the instructor ``who`` when it ends; it takes no
    active slot. Returns the regrade step."""
    get_redis().set(_client_of(run_id), who, ex=KEY_TTL_S)
    return REGRADE_STEP


def interactive_queue_depth(device: str) -> int:
    """Runs of people waiting in the device's queue (every step but the regrade's)."""
    pipe = get_redis().pipeline(transaction=False)
    for key in registry.queue_lists(device)[:-1]:
        pipe.llen(key)
    return sum(pipe.execute())


def regrade_queue_depth(device: str) -> int:
    return get_redis().llen(registry.queue_lists(device)[-1])


# The admission of the run about to be started where the code that starts it cannot be handed
# it (courses.grading.queue_grading starts a submission's run): {"run_id", "priority"}.
_pending: ContextVar[dict | None] = ContextVar("playground_quotas_pending", default=None)


@contextmanager
def starting(run_id, priority: int):
    """Within the block, the next ``pending_admission()`` answers this run id and priority."""
    token = _pending.set({"run_id": run_id, "priority": priority})
    try:
        yield
    finally:
        _pending.reset(token)


def pending_admission() -> dict:
    """``do_start_run``'s ``run_id`` and ``priority`` for the run admitted by the enclosing
    ``starting`` block (once: a second run in the block gets its own id), else {}."""
    pending = _pending.get()
    _pending.set(None)
    return dict(pending or {})


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
    limits = _limits(_kind(device))
    cap = limits["active"] if is_account_key(client) else limits["address_active"]
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
        whose = "you already have" if is_account_key(client) else "your address already has"
        raise refuse(f"{whose} {int(count)} runs queued or running (at most {cap} at once)", "active_runs", retry)
    return priority(int(count))


def priority(active_before: int) -> int:
    """The priority step of a client's next run, from how many it already has (0 first); never
    the regrade's step."""
    return INTERACTIVE_STEPS[min(active_before, len(INTERACTIVE_STEPS) - 1)]


def release(run_id: str, *, wall_ms: float | None = None, device: str | None = None) -> None:
    """The run ended: its slot is free and its seconds are counted (once, whoever releases first:
    the executor at the run's end, or this, the recorder's backstop; executor/shares.py)."""
    shares.release(get_redis(), run_id, wall_ms=wall_ms, kind=_kind(device) if device else None)


def client_of(run_id: str) -> str | None:
    """The client key a queued or running run was admitted for (None once it ended)."""
    client = get_redis().get(_client_of(run_id))
    return client.decode() if client is not None else None


_active_key = shares.active_key
_client_of = shares.client_key
_budget_key = shares.budget_key


@receiver(run_status_changed, dispatch_uid="playground.quotas.release")
def _on_run_status_changed(sender, run_id: str, status: str, run: dict | None = None, **kwargs) -> None:
    if status not in ev.TERMINAL_STATUSES:
        return
    from .actions.runs import run_facts

    run = run or run_facts(run_id) or {}
    release(run_id, wall_ms=run.get("wall_ms"), device=run.get("device"))
