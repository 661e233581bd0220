"""The base of every recorder task (the web side's Celery tasks, on queue "record"): the apps'
``tasks`` modules define theirs with ``recorder_task``."""

from __future__ import annotations

from functools import wraps

from executor import logs

from .celery import app


def recorder_task(name: str, **options):
    """Every recorder task: an explicit name, the record queue, no result, a bounded retry on
    database hiccups (recording is idempotent, so a retry is safe); one whose first argument is
    ``run_id`` logs with the run."""

    def decorate(fn):
        settings = {"ignore_result": True, "autoretry_for": (Exception,),
                    "retry_backoff": 1, "retry_backoff_max": 30, "max_retries": 5, **options}

        @app.task(name=name, **settings)
        @wraps(fn)
        def task(*args, **kwargs):
            # Every line logged meanwhile names the run it is about, if any (executor/logs.py).
            with logs.run_context(logs.run_argument(fn, args, kwargs)):
                return fn(*args, **kwargs)

        return task

    return decorate
