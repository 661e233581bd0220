"""Redis clients of the web side. One connection pool per process for synchronous code; async
code (websockets) shares the clients of its event loop's hub (``streams.Hub``)."""

from functools import lru_cache

import redis
from django.conf import settings

from executor.events import EventLog


@lru_cache(maxsize=1)
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


@lru_cache(maxsize=1)
def get_event_log() -> EventLog:
    return EventLog(get_redis())
