"""Rate limits in Redis (fixed windows; sliding ones for failures: ``reserve``), shared by every
web process: runs, snippets, sign-ups, sign-ins, drafts, dashboards, the editor's requests.
``who`` is a client or person key
(``web.clients``: which counts for which limit is said there) or, for sign-in failures, an
account's name; a person signed out is also counted in their room (``check_rate_in_room``).
Every refusal is the same 429: ``{"error", "limit": "rate", "retry_after"}`` and a Retry-After.
``what`` names what is counted in the refusal a person reads: a lazy text (``gettext_lazy``), so
that it is said in the language of whoever is refused."""

from __future__ import annotations

import secrets
import time

from django.conf import settings
from django.utils.translation import gettext as _

from .errors import ActionError
from .redis import get_redis


def _key(bucket: str, who: str, window_s: int, now: float) -> str:
    return f"ratelimit:{bucket}:{who}:{int(now // window_s)}"


def _refuse(what: str, limit: int, window_s: int, now: float) -> ActionError:
    return _refused(what, limit, window_s, max(1, int(window_s - now % window_s)))


def _refused(what: str, limit: int, window_s: int, retry: int) -> ActionError:
    values = {"what": what, "limit": limit, "retry": retry, "window": window_s}
    if window_s == 60:
        message = _("too many %(what)s: at most %(limit)s a minute; try again in %(retry)s s") % values
    elif window_s == 900:
        message = _("too many %(what)s: at most %(limit)s in 15 minutes; try again in %(retry)s s") % values
    elif window_s == 3600:
        message = _("too many %(what)s: at most %(limit)s an hour; try again in %(retry)s s") % values
    else:
        message = _("too many %(what)s: at most %(limit)s per %(window)s s; try again in %(retry)s s") % values
    return ActionError(message, status=429, headers={"Retry-After": str(retry)},
                       data={"limit": "rate", "retry_after": retry})


def check_rate(bucket: str, who: str, limit: int, window_s: int, what: str, *, redis=None) -> None:
    """Count one more ``what`` for ``who`` in the current window; over ``limit``, a 429 whose
    message and Retry-After say when to come back. A limit of 0 is no limit. ``redis``: a client
    of the caller's own (the readiness check's, with short timeouts)."""
    if not limit:
        return
    now = time.time()
    key = _key(bucket, who, window_s, now)
    pipe = (redis or get_redis()).pipeline()
    pipe.incr(key)
    pipe.expire(key, window_s + 1)
    count, _expiry = pipe.execute()
    if count > limit:
        raise _refuse(what, limit, window_s, now)


# check_rate_in_room's counting in one call: the person's count, then, only while it is within its
# limit (a refused attempt is not the room's), the room's. KEYS: the person's, the room's (or
# none); ARGV: the person's limit, the window's ttl. Returns {person's count, room's or 0}.
_COUNT_IN_ROOM = """
local n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
if #KEYS < 2 or n > tonumber(ARGV[1]) then return {n, 0} end
local r = redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return {n, r}
"""


def count_in(pipe, bucket: str, who: str, room: str | None, limit: int, window_s: int, now: float) -> bool:
    """``check_rate_in_room``'s counting, queued on ``pipe`` (its answer goes in the caller's round
    trip with the rest, for ``refuse_over`` to read); False, with nothing queued, for no limit."""
    if not limit:
        return False
    keys = [_key(bucket, who, window_s, now), *([_key(bucket, room, window_s, now)] if room is not None else [])]
    pipe.eval(_COUNT_IN_ROOM, len(keys), *keys, limit, window_s + 1)
    return True


def refuse_over(count: int, limit: int, window_s: int, what: str, now: float) -> None:
    """``check_rate``'s refusal, for a ``count`` taken with ``count_in``."""
    if limit and count > limit:
        raise _refuse(what, limit, window_s, now)


def check_rate_in_room(bucket: str, who: str, room: str | None, limit: int, window_s: int, what: str) -> None:
    """``check_rate`` for a person (``who``, a person key) and, signed out, for their room
    (``room``: everyone signed out at their address), which may have ROOM_SIZE times as many:
    both counted in one script (``count_in``), the person's refusal first."""
    now = time.time()
    pipe = get_redis().pipeline(transaction=False)
    if not count_in(pipe, bucket, who, room, limit, window_s, now):
        return
    mine, rooms = pipe.execute()[0]
    refuse_over(mine, limit, window_s, what, now)
    if room is not None:
        refuse_over(rooms, limit * settings.ROOM_SIZE, window_s, from_your_address(what), now)


def from_your_address(what: str) -> str:
    """``what``, counted for everyone signed out at the person's address together."""
    return _("%(what)s from everyone signed out at your address") % {"what": what}


# Reserve one more attempt in each of several sliding windows, atomically: all of them, or (one
# is at its limit) none. Each is a log of its attempts' times (a sorted set), so that no window_s
# long stretch holds more than the limit: fixed windows let a burst astride their boundary have
# the limit twice. KEYS: the logs; ARGV: now, the window's seconds, this attempt's member, then
# each log's limit. Returns {0} or {i, oldest}: the number of the full log and its oldest time.
_RESERVE = """
local now, window, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  if redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return {i, oldest[2]}
  end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, member)
  redis.call('EXPIRE', key, math.ceil(window) + 1)
end
return {0}
"""


def _log_key(bucket: str, who: str) -> str:
    return f"ratelimit:log:{bucket}:{who}"


def reserve(counted: list[tuple[str, str, int, str]], window_s: int) -> list[str]:
    """Count one more attempt, before it is made, in each of ``counted``'s ``(bucket, who, limit,
    what)`` over the last ``window_s`` seconds, or (one is at its limit) in none and refuse with
    the same 429: for limits on failures (a wrong password, a join code that names nothing),
    which a burst of requests in flight together must not multiply, nor one timed astride a
    window's turn. An attempt that did not fail gives its reservation back (``give_back``, with
    what this returns). A limit of 0 is none."""
    counted = [c for c in counted if c[2]]
    if not counted:
        return []
    now = time.time()
    keys = [_log_key(bucket, who) for bucket, who, _limit, _what in counted]
    member = f"{now:.6f}:{secrets.token_hex(6)}"
    answer = get_redis().eval(_RESERVE, len(keys), *keys, now, window_s, member, *[c[2] for c in counted])
    full = int(answer[0])
    if full:
        _bucket, _who, limit, what = counted[full - 1]
        retry = max(1, int(float(answer[1]) + window_s - now + 0.999))
        raise _refused(what, limit, window_s, retry)
    return [f"{key}\n{member}" for key in keys]


def give_back(reservation: str) -> None:
    """An attempt reserved with ``reserve`` did not fail: it no longer counts."""
    key, _, member = reservation.partition("\n")
    get_redis().zrem(key, member)


def forget(bucket: str, who: str, window_s: int) -> None:
    get_redis().delete(_key(bucket, who, window_s, time.time()), _log_key(bucket, who))
