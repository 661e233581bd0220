"""Fixed-window rate limits in Redis, shared by every web process: runs, snippets, sign-ups,
sign-ins, drafts, dashboards, the editor's requests. ``who`` is a client or person key
(``web.clients``: which counts for which limit is said there) or, for sign-in failures, an
account's name; a person signed out is also counted in their room (``check_rate_in_room``).
Every refusal is the same 429: ``{"error", "limit": "rate", "retry_after"}`` and a Retry-After.
``what`` names what is counted in the refusal a person reads: a lazy text (``gettext_lazy``), so
that it is said in the language of whoever is refused."""

from __future__ import annotations

import time

from django.conf import settings
from django.utils.translation import gettext as _

from .errors import ActionError
from .redis import get_redis


def _key(bucket: str, who: str, window_s: int, now: float) -> str:
    return f"ratelimit:{bucket}:{who}:{int(now // window_s)}"


def _refuse(what: str, limit: int, window_s: int, now: float) -> ActionError:
    retry = max(1, int(window_s - now % window_s))
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


def check_rate_in_room(bucket: str, who: str, room: str | None, limit: int, window_s: int, what: str) -> None:
    """``check_rate`` for a person (``who``, a person key) and, signed out, for their room
    (``room``: everyone signed out at their address), which may have ROOM_SIZE times as many."""
    check_rate(bucket, who, limit, window_s, what)
    if room is not None and limit:
        check_rate(bucket, room, limit * settings.ROOM_SIZE, window_s, from_your_address(what))


def from_your_address(what: str) -> str:
    """``what``, counted for everyone signed out at the person's address together."""
    return _("%(what)s from everyone signed out at your address") % {"what": what}


def check_count(bucket: str, who: str, limit: int, window_s: int, what: str) -> None:
    """Refuse (the same 429) when ``who`` already has ``limit`` counted (``count_one``) in the
    current window, without counting this one: for limits on failures, which are counted only
    once they happened."""
    if not limit:
        return
    now = time.time()
    count = int(get_redis().get(_key(bucket, who, window_s, now)) or 0)
    if count >= limit:
        raise _refuse(what, limit, window_s, now)


def count_one(bucket: str, who: str, window_s: int) -> None:
    key = _key(bucket, who, window_s, time.time())
    pipe = get_redis().pipeline()
    pipe.incr(key)
    pipe.expire(key, window_s + 1)
    pipe.execute()


def forget(bucket: str, who: str, window_s: int) -> None:
    get_redis().delete(_key(bucket, who, window_s, time.time()))
