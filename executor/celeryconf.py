"""Celery settings both Celery apps share (the web side's and the executor's): JSON only, no
result backend (nothing reads task results), and a task is taken off the queue when it starts, so
a worker that dies mid-run never makes the broker hand the snippet to another worker: a snippet
is never re-run automatically."""

COMMON = {
    "task_serializer": "json",
    "accept_content": ["json"],
    "result_serializer": "json",
    "result_backend": None,
    "task_ignore_result": True,
    "task_acks_late": False,
    "worker_prefetch_multiplier": 1,
    "broker_connection_retry_on_startup": True,
    "worker_hijack_root_logger": False,
    "task_default_queue": "record",
}
