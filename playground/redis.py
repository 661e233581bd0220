"""The runs' event log over the web side's Redis client (``web.redis``, re-exported here for the
apps' modules that read runs' keys directly)."""

from functools import lru_cache

from executor.events import EventLog
from web.redis import get_redis

__all__ = ["get_event_log", "get_redis"]


@lru_cache(maxsize=1)
def get_event_log() -> EventLog:
    return EventLog(get_redis())
