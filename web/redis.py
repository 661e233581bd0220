"""The web side's Redis client for synchronous code: one connection pool per process, shared by
every app (async code, the websockets, uses its event loop's clients: ``playground.streams``)."""

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
