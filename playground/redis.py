"""Redis clients of the web side. One connection pool per process for synchronous code; async
code (websockets) opens a client per connection, since an asyncio pool belongs to one loop."""

from functools import lru_cache

import redis
import redis.asyncio
from django.conf import settings

from executor.events import EventLog


@lru_cache(maxsize=1)
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


@lru_cache(maxsize=1)
def get_event_log() -> EventLog:
    return EventLog(get_redis())


def async_redis(block_s: float = 0) -> redis.asyncio.Redis:
    """``block_s``: the longest blocking command it will send (XREAD BLOCK); the socket's read
    timeout leaves room above it, so a loaded host does not turn a quiet stream into an error."""
    return redis.asyncio.Redis.from_url(settings.REDIS_URL, socket_timeout=block_s + 10)
