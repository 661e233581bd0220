"""The web side's Redis client for synchronous code: one connection pool per process, shared by
every app (async code, the websockets, uses its event loop's clients: ``playground.streams``)."""

from contextlib import contextmanager
from functools import lru_cache

import redis
from django.conf import settings

# Connections one process keeps to Redis for synchronous code. A burst of requests (a class
# submitting at once) waits up to POOL_WAIT_S for one rather than failing: redis-py's own pool
# refuses at once past 100.
POOL_CONNECTIONS = 64
POOL_WAIT_S = 20


@lru_cache(maxsize=1)
def get_redis() -> redis.Redis:
    return redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url(
        settings.REDIS_URL, max_connections=POOL_CONNECTIONS, timeout=POOL_WAIT_S))


@contextmanager
def exclusive(name: str, *, hold_s: float = 10, wait_s: float = 10):
    """One holder at a time, across every web process, of the lock ``name``: for a check and the
    change it allows (count a person's rows, then add one) that must not interleave with another
    request's. Held at most ``hold_s`` (a holder that died lets go); waited for ``wait_s`` at most,
    then a 503 that says to try again."""
    from django.utils.translation import gettext as _

    from .errors import ActionError

    lock = get_redis().lock(f"lock:{name}", timeout=hold_s, blocking_timeout=wait_s)
    if not lock.acquire():
        raise ActionError(_("too many requests like this one at once; try again in a few seconds"), status=503,
                          headers={"Retry-After": "2"})
    try:
        yield
    finally:
        try:
            lock.release()
        except redis.exceptions.LockError:  # held past hold_s: it lapsed already
            pass
