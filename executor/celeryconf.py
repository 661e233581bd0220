"""Celery settings both Celery apps share (the web side's and the executor's): JSON only, no
result backend (nothing reads task results), and a task is taken off the queue when it starts, so
a worker that dies mid-run never makes the broker hand the snippet to another worker: a snippet
is never re-run automatically.

A worker takes a task only when it has a free slot (``worker_disable_prefetch``): a run waits in
Redis, where its priority counts (a client's first run before another's fourth: see
playground/quotas.py) and where any node that frees first can take it, rather than in the
buffer of a worker whose slots are all busy (executor/worker.py wakes its consumer when a slot
frees)."""

# The recorder's queue, unless RECORD_QUEUE says otherwise (both settings files read it).
RECORD_QUEUE = "record"

COMMON = {
    "task_serializer": "json",
    "accept_content": ["json"],
    "result_serializer": "json",
    "result_backend": None,
    "task_ignore_result": True,
    "task_acks_late": False,
    "worker_prefetch_multiplier": 1,
    "worker_disable_prefetch": True,
    "broker_connection_retry_on_startup": True,
    "worker_hijack_root_logger": False,
    "task_default_queue": RECORD_QUEUE,
}


def broker_url(redis_url: str) -> str:
    """Celery's name for a Redis URL: redis-py's ``unix:///path?db=N`` (a Redis listening on a
    socket file, as on a host that allows no TCP) is kombu's ``redis+socket:///path?virtual_host=N``;
    any other is the same."""
    if not redis_url.startswith("unix://"):
        return redis_url
    path, _, query = redis_url.removeprefix("unix://").partition("?")
    params = dict(p.partition("=")[::2] for p in query.split("&") if p)
    db = params.pop("db", "")
    rest = "&".join(f"{k}={v}" for k, v in params.items())
    query = "&".join(q for q in (f"virtual_host={db}" if db else "", rest) if q)
    return f"redis+socket://{path}" + (f"?{query}" if query else "")


def share_redis_clients() -> None:
    """Make kombu's Redis transport keep one client per channel instead of building one for
    every publish, ack and queue check. Building a ``redis.Redis`` copies its few hundred
    response callbacks into a new dict: three of them a run in the executor and two in the
    recorder came to about a tenth of each process's CPU in a burst of ``print(1)``. A client
    is a thread-safe handle on its channel's connection pool, so one serves every caller; a
    new pool (after a reconnection) gets a new client. A kombu without this method is left as
    it is."""
    from contextlib import contextmanager

    from kombu.transport import redis as transport

    channel = transport.Channel
    if getattr(channel, "shares_its_client", False) or not hasattr(channel, "conn_or_acquire"):
        return

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client:
            yield client
            return
        shared = self.__dict__.get("_shared_client")
        if shared is None or shared.connection_pool is not self.pool:
            shared = self.__dict__["_shared_client"] = self._create_client()
        yield shared

    channel.conn_or_acquire = conn_or_acquire
    channel.shares_its_client = True
