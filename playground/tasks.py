"""Recorder tasks: the web side's Celery tasks, on queue "record". Each takes plain JSON, calls
one action and returns; the executor sends them by name and never imports this module."""

from __future__ import annotations

from executor import submit
from web.tasks import recorder_task

from .actions.runs import do_reap_lost_runs, do_record_events
from .metrics import observe_recorded


@recorder_task(submit.RECORD_TASK)
def record_events(run_id: str, events: list[dict]) -> None:
    do_record_events(run_id, events)
    observe_recorded(events)


@recorder_task("recorder.reap_lost_runs", max_retries=0)
def reap_lost_runs() -> None:
    do_reap_lost_runs()
