"""Fair shares of the executors, per person: admission in front of Celery's queues.

    person    ``web.clients``: a signed-in account ("user:<id>") and only it, else a browser's
              signed identity ("anon:<id>"), else its address; an IPv6 address counts per /64
              (one host holds a whole /64: rotating through it must not buy more runs)
    room      everyone signed out at one address ("room:ip:…"): a signed-out person's runs count
              against their own share and their room's, which is ROOM_SIZE people's (one run at
              once each, RUN_MAX_ACTIVE_PER_ROOM; ROOM_SIZE times a person's run rate and
              executor seconds), so thirty people behind a workshop's Wi-Fi each have their own
              while one script minting identities has no more than the room. An account counts
              nowhere but against itself
    active    runs queued or running at once, at most RUN_MAX_ACTIVE_PER_CLIENT: one person
              submitting 100 runs has a few in the queue, so everyone else's wait behind at most
              that many of theirs. Requests with no identity (scripts, curl) share their
              address's RUN_MAX_ACTIVE_PER_ADDRESS (twice a person's by default). A refusal of
              someone signed out says what is shared and with whom
    order     a run goes into the queue at the priority of how many the person already has
              queued or running: a person's first run is taken before anyone's second, its
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
"retry_after"}``, with a Retry-After, on every endpoint. A run's slots are given back and its
seconds counted when the recorder stores its end (``run_status_changed``), whatever the end was;
a slot whose end never came (a database restored from a backup, say) expires after
RUN_QUEUE_TIMEOUT_S + the wall clock.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager

from django.conf import settings
from django.dispatch import receiver
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from executor import events as ev
from executor import registry, shares

from web.clients import client_key, is_address_key
from web.errors import ActionError
from web.ratelimit import count_in, from_your_address, refuse_over

from .models import run_facts
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

# Admission, atomically, in every set the run counts in (the person's, and signed out their
# room's): drop slots that expired, count, and take one in each if every one has room.
# KEYS: the active sets; ARGV: now, expiry cutoff, run id, ttl, then each set's cap. Returns 0 and
# the first set's count before, or the number of the set that is full, its count and its oldest
# slot's time (when one frees at the latest).
_ADMIT = """
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[2])
  local n = redis.call('ZCARD', key)
  if n >= tonumber(ARGV[4 + i]) then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return {i, n, oldest[2] or ARGV[1]}
  end
end
local before = redis.call('ZCARD', KEYS[1])
local last = redis.call('ZCARD', KEYS[#KEYS])
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, ARGV[1], ARGV[3])
  redis.call('EXPIRE', key, ARGV[4])
end
return {0, before, ARGV[1], last}
"""

# A place in a queue, taken at admission for a run about to be queued, so that runs admitted
# together count against RUN_QUEUE_MAX before any is pushed: the queue's lists and the places
# taken and not yet pushed, against the cap, and a place for this run if there is room. The run's
# push gives its place back in the same round trip (``_enqueue``); one never pushed (its web
# process died between) lapses after PLACE_HOLD_S. KEYS: the places (a sorted set), the queue's
# lists; ARGV: the cap, now, the lapse cutoff, the run id. Returns {0 or 1 (full), the length}.
_PLACE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local waiting = redis.call('ZCARD', KEYS[1])
for i = 2, #KEYS do waiting = waiting + redis.call('LLEN', KEYS[i]) end
if waiting >= tonumber(ARGV[1]) then return {1, waiting} end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], 3600)
return {0, waiting}
"""
PLACE_HOLD_S = 30.0

# What a refusal adds for someone signed out: what they share, and with whom.
ADDRESS_SHARED = gettext_lazy(
    "Signed out and without the cookie this site's pages give each browser (a script, say), you share this limit "
    "with everyone at your address who has none: run from the playground's page, or sign in, to have a share of "
    "your own")
ROOM_SHARED = gettext_lazy("Each browser has a share of its own, within this one that everyone signed out at your "
                           "address shares: sign in to have a share apart from it")
RUNS = gettext_lazy("runs")


def _kind(device: str) -> str:
    """The kind of a device string or route: budgets are per kind, whatever the runtime."""
    return registry.parse_device(device)[0]


def _limits(kind: str) -> dict:
    return settings.RUN_QUOTAS.get(kind) or settings.RUN_QUOTAS["cpu"]


def refuse(message: str, limit: str, retry_s: float, status: int = 429) -> ActionError:
    retry = max(1, math.ceil(retry_s))
    return ActionError(_("%(message)s; try again in %(retry)s s") % {"message": message, "retry": retry}, status=status,
                       headers={"Retry-After": str(retry)}, data={"limit": limit, "retry_after": retry})


def check_admit_run(who: str, device: str, run_id: str, room: str | None = None, *, queued: bool = True,
                    seen: dict | None = None) -> int:
    """Admit a run a person starts (``who``: their person key; ``room``: signed out, their room)
    on ``device``, or refuse: the run rate, the device's queue, the hourly and daily budget, then
    one of their active slots, each the person's and the room's, and a place in the queue
    (``queued``: the run goes to the device's queue; a cell of a session a node holds does not).
    Returns the priority step to queue it at. The caller releases the slots (``release``) and the
    place (``unplace``) if the run is not made after all. ``seen``: told what admission read of
    the device's queue (``"waiting"``: the runs in its lists, regrades aside), for the run's
    position in it."""
    kind, now = _kind(device), time.time()
    limits = _limits(kind)
    # What admission reads and counts, in one round trip: the run rate (the person's, then the
    # room's), the queue's length and the budgets used; then checked in this order.
    per_minute = settings.RUN_RATE_LIMIT_PER_MINUTE
    pipe = get_redis().pipeline(transaction=False)
    counted = count_in(pipe, "runs", who, room, per_minute, 60, now)
    queues = registry.queue_lists(device)[:-1]
    for key in queues:
        pipe.llen(key)
    budgets = [(who, limits["per_hour_s"], limits["per_day_s"], False)]
    if room is not None:
        budgets.append((room, limits["per_hour_s"] * settings.ROOM_SIZE, limits["per_day_s"] * settings.ROOM_SIZE,
                        True))
    pipe.mget([_budget_key(client, kind, window, now) for client, *_ in budgets for window in (3600, 86400)])
    answers = pipe.execute()
    if counted:
        mine, rooms = answers.pop(0)
        with _explained(who):
            refuse_over(int(mine), per_minute, 60, RUNS, now)
        if room is not None:
            with _explained(who, room=True):
                refuse_over(int(rooms), per_minute * settings.ROOM_SIZE, 60, from_your_address(RUNS), now)
    waiting = sum(answers[:len(queues)])
    if seen is not None:
        seen["waiting"] = waiting
    check_queue_length(device, waiting)
    used = answers[len(queues)]
    for n, (_who, per_hour_s, per_day_s, whole_room) in enumerate(budgets):
        with _explained(who, room=whole_room):
            _check_used(kind, used[2 * n:2 * n + 2], per_hour_s, per_day_s, whole_room, now)
    return admit(who, device, run_id, room, queue_max=limits["queue_max"] if queued else 0)


@contextmanager
def _explained(who: str, room: bool = False):
    """A 429 of someone signed out says what they share, and with whom: their room's limits are
    everyone's signed out at the address; an address's own share is everyone's there without an
    identity. A browser's own share, or an account's, is theirs alone and needs no word."""
    try:
        yield
    except ActionError as exc:
        shared = ROOM_SHARED if room else ADDRESS_SHARED if is_address_key(who) else None
        if exc.status != 429 or shared is None:
            raise
        raise ActionError(_("%(message)s. %(shared)s") % {"message": exc.message, "shared": shared},
                          status=exc.status, headers=exc.headers, data=exc.data) from None


def check_admit_regrade(who: str, device: str, runs: int) -> None:
    """A regrade of ``runs`` submissions by the instructor ``who``: refused while the instructor's
    budget of the kind is used up, or when the regrade's runs would not fit in the queue."""
    check_budget(who, device)
    cap = _limits(_kind(device))["queue_max"]
    waiting = regrade_queue_depth(device)
    if cap and waiting + runs > cap:
        raise refuse(_("the %(device)s queue has %(waiting)s regrade runs waiting; %(runs)s more would pass its "
                       "%(cap)s") % {"device": device, "waiting": waiting, "runs": runs, "cap": cap},
                     "queue_length", settings.RUN_LIMITS["wall_s"], status=503)


def admit_regrade(who: str, run_id: str) -> int:
    """A regrade's run: its seconds count against the instructor ``who`` when it ends; it takes no
    active slot. Returns the regrade step."""
    get_redis().set(_client_of(run_id), who, ex=KEY_TTL_S)
    return REGRADE_STEP


def regrade_queue_depth(device: str) -> int:
    return get_redis().llen(registry.queue_lists(device)[-1])


def check_queue_length(device: str, queue_length: int) -> None:
    cap = _limits(_kind(device))["queue_max"]
    if cap and queue_length >= cap:
        raise queue_full(device, queue_length)


def queue_full(device: str, waiting: int) -> ActionError:
    return refuse(_("the %(device)s queue is full (%(waiting)s runs waiting)") % {"device": device, "waiting": waiting},
                  "queue_length", settings.RUN_LIMITS["wall_s"], status=503)


def check_budget(client: str, device: str, *, per_hour_s: float | None = None, per_day_s: float | None = None,
                 whole_room: bool = False) -> None:
    """Refuse when the client has used its executor seconds of this kind this hour or day (the
    kind's budget, or ``per_hour_s`` and ``per_day_s``: a room's, said as everyone's at the
    address with ``whole_room``)."""
    kind, now = _kind(device), time.time()
    limits = _limits(kind)
    used = get_redis().mget([_budget_key(client, kind, window, now) for window in (3600, 86400)])
    _check_used(kind, used, limits["per_hour_s"] if per_hour_s is None else per_hour_s,
                limits["per_day_s"] if per_day_s is None else per_day_s, whole_room, now)


def _check_used(kind: str, used: list, per_hour_s: float, per_day_s: float, whole_room: bool, now: float) -> None:
    """``check_budget``'s refusal, from the seconds used this hour and this day (``used``, as
    Redis answers their keys)."""
    for window, per, name, seconds in ((3600, per_hour_s, "hourly_budget", used[0]),
                                       (86400, per_day_s, "daily_budget", used[1])):
        if per and float(seconds or 0) >= per:
            raise refuse(_budget_used(window, whole_room) % {"seconds": f"{per:g}", "kind": kind}, name,
                         window - now % window)


def _budget_used(window: int, whole_room: bool) -> str:
    if whole_room:
        return (_("everyone signed out at your address has used this hour's %(seconds)s s of %(kind)s executor time")
                if window == 3600 else
                _("everyone signed out at your address has used this day's %(seconds)s s of %(kind)s executor time"))
    return (_("you have used this hour's %(seconds)s s of %(kind)s executor time") if window == 3600 else
            _("you have used this day's %(seconds)s s of %(kind)s executor time"))


def place_key(device: str) -> str:
    """The places taken in ``device``'s queue (a route: ``registry.route``) by runs admitted and
    not yet pushed."""
    return f"quota:queue-places:{device}"


def unplace(device: str, run_id: str, redis=None) -> None:
    """Give back the run's place in ``device``'s queue (on ``redis``: a client, or a pipeline the
    caller sends)."""
    (redis or get_redis()).zrem(place_key(device), run_id)


def admit(client: str, device: str, run_id: str, room: str | None = None, *, queue_max: int = 0) -> int:
    """Take one of the client's active slots for ``run_id``, and one of its room's, or refuse
    (429); with ``queue_max``, a place in ``device``'s queue too, or refuse (503). Returns the
    run's priority step: 0 for a client with nothing queued or running, later steps for more."""
    limits = _limits(_kind(device))
    cap = limits["address_active"] if is_address_key(client) else limits["active"]
    room_cap = limits.get("room_active", 0) if room is not None else 0
    now = time.time()
    redis = get_redis()
    # Whose run it is, then a slot in each set it counts in: one round trip.
    pipe = redis.pipeline(transaction=False)
    pipe.set(_client_of(run_id), client, ex=KEY_TTL_S)
    if room is not None:
        pipe.set(_room_of(run_id), room, ex=KEY_TTL_S)  # its seconds count in the room's budget
    counted = [(key, c) for key, c in ((client, cap), (room, room_cap)) if key is not None and c]
    if counted:
        expire_s = settings.RUN_QUEUE_TIMEOUT_S + settings.RUN_LIMITS["wall_s"] + 60
        pipe.eval(_ADMIT, len(counted), *[_active_key(key) for key, _ in counted], now, now - expire_s, run_id,
                  KEY_TTL_S, *[c for _, c in counted])
    if queue_max:
        lists = registry.queue_lists(device)[:-1]
        pipe.eval(_PLACE, 1 + len(lists), place_key(device), *lists, queue_max, now, now - PLACE_HOLD_S, run_id)
    answers = pipe.execute()
    if queue_max:
        placed, waiting = answers.pop()
        if int(placed):  # full: the slots just taken are given back
            shares.release(redis, run_id)
            raise queue_full(device, int(waiting))
    if not counted:
        return 0
    full, count, oldest, *rest = answers[-1]
    if int(full):
        pipe = redis.pipeline(transaction=False)
        pipe.delete(_client_of(run_id), _room_of(run_id))
        if queue_max:
            unplace(device, run_id, pipe)
        pipe.execute()
        key, at_most = counted[int(full) - 1]
        # A slot frees when one of these runs ends, which for most runs is within a second or
        # two (the wall clock bounds it): asking again soon costs a request, asking late a wait.
        retry = min(ACTIVE_RETRY_S, max(1.0, float(oldest) + settings.RUN_LIMITS["wall_s"] - now))
        if key == room:
            with _explained(client, room=True):
                raise refuse(_("everyone signed out at your address has %(count)s runs queued or running between "
                               "them (at most %(at_most)s at once)") % {"count": int(count), "at_most": at_most},
                             "active_runs", retry)
        if is_address_key(client):
            message = _("your address already has %(count)s runs queued or running (at most %(at_most)s at once)")
        else:
            message = _("you already have %(count)s runs queued or running (at most %(at_most)s at once)")
        with _explained(client):
            raise refuse(message % {"count": int(count), "at_most": at_most}, "active_runs", retry)
    # The person's count before this run; a person whose own cap is off is always at the first step.
    step = priority(int(count)) if counted[0][0] == client else 0
    if room is not None and counted[-1][0] == room and rest:
        # A room's runs past an address's share wait behind everyone else's first runs: a script
        # minting identities queues 40 runs, and a person elsewhere must not wait behind them all.
        step = max(step, priority(int(rest[0]) // max(1, limits["address_active"])))
    return step


def priority(active_before: int) -> int:
    """The priority step of a client's next run, from how many it already has (0 first); never
    the regrade's step."""
    return INTERACTIVE_STEPS[min(active_before, len(INTERACTIVE_STEPS) - 1)]


def release(run_id: str, *, wall_ms: float | None = None, device: str | None = None) -> None:
    """The run ended: its slot is free and its seconds are counted (once, whoever releases first:
    the executor at the run's end, or this, the recorder's backstop; executor/shares.py)."""
    shares.release(get_redis(), run_id, wall_ms=wall_ms, kind=_kind(device) if device else None)


def client_of(run_id: str) -> str | None:
    """The person key a queued or running run was admitted for (None once it ended)."""
    client = get_redis().get(_client_of(run_id))
    return client.decode() if client is not None else None


_active_key = shares.active_key
_client_of = shares.client_key
_room_of = shares.room_key
_budget_key = shares.budget_key


@receiver(run_status_changed, dispatch_uid="playground.quotas.release")
def _on_run_status_changed(sender, run_id: str, status: str, run: dict | None = None, **kwargs) -> None:
    if status not in ev.TERMINAL_STATUSES:
        return
    run = run or run_facts(run_id) or {}
    release(run_id, wall_ms=run.get("wall_ms"), device=run.get("device"))
