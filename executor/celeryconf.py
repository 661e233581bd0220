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
