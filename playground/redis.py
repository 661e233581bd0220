"""Redis clients of the web side. One connection pool per process for synchronous code; async
code (websockets) shares the clients of its event loop's hub (``streams.Hub``)."""

from functools import lru_cache

import redis
from django.conf import settings

from executor.events import EventLog


# Connections one process keeps to Redis for synchronous code. A burst of requests (a class
# submitting at once) waits up to POOL_WAIT_S for one rather than failing: redis-py's own pool
# refuses at once past 100.
POOL_CONNECTIONS = 64
POOL_WAIT_S = 20


@lru_cache(maxsize=1)
def get_redis() -> redis.Redis:
    return redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url(
        settings.REDIS_URL, max_connections=POOL_CONNECTIONS, timeout=POOL_WAIT_S))


@lru_cache(maxsize=1)
def get_event_log() -> EventLog:
    return EventLog(get_redis())
