"""Recorder tasks: the web side's Celery tasks, on queue "record". Each takes plain JSON, calls
one action and returns; the executor sends them by name and never imports this module."""

from __future__ import annotations

from functools import wraps

from executor import logs, submit
from web.celery import app

from .actions.runs import do_reap_lost_runs, do_record_events


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


@recorder_task(submit.RECORD_TASK)
def record_events(run_id: str, events: list[dict]) -> None:
    do_record_events(run_id, events)


@recorder_task("recorder.reap_lost_runs", max_retries=0)
def reap_lost_runs() -> None:
    do_reap_lost_runs()
