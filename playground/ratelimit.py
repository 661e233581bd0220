"""Fixed-window rate limits in Redis, shared by every web process: runs, snippets, sign-ups."""

from __future__ import annotations

import time

from .actions.errors import ActionError
from .redis import get_redis


def check_rate(bucket: str, who: str, limit: int, window_s: int, what: str) -> None:
    """Count one more ``what`` for ``who`` in the current window; over ``limit``, a 429 whose
    message and Retry-After say when to come back. A limit of 0 is no limit."""
    if not limit:
        return
    now = time.time()
    window = int(now // window_s)
    key = f"ratelimit:{bucket}:{who}:{window}"
    pipe = get_redis().pipeline()
    pipe.incr(key)
    pipe.expire(key, window_s + 1)
    count, _ = pipe.execute()
    if count > limit:
        retry = max(1, int(window_s - now % window_s))
        per = "a minute" if window_s == 60 else ("an hour" if window_s == 3600 else f"per {window_s} s")
        raise ActionError(f"too many {what}: at most {limit} {per}; try again in {retry} s",
                          status=429, headers={"Retry-After": str(retry)}, data={"limit": "rate", "retry_after": retry})
