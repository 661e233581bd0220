"""Recorder tasks: the web side's Celery tasks, on queue "record", and the thread that reads the
executors' event batches beside it (playground/batches.py). Each takes plain JSON, calls
one action and returns; the executor sends them by name and never imports this module."""

from __future__ import annotations

from celery import signals

from executor import submit
from web.tasks import recorder_task

from .actions.runs import do_reap_lost_runs, do_record_events, do_store_profile
from .batches import BatchReader
from .metrics import observe_recorded

# The reader of the executors' event batches (playground/batches.py): a thread of the worker that
# consumes the record queue, and of no other.
_batch_reader: BatchReader | None = None


@recorder_task(submit.RECORD_TASK)
def record_events(run_id: str, events: list[dict]) -> None:
    do_record_events(run_id, events)
    observe_recorded(events)


@recorder_task(submit.PROFILE_TASK)
def store_profile(run_id: str) -> None:
    do_store_profile(run_id)


@recorder_task("recorder.reap_lost_runs", max_retries=0)
def reap_lost_runs() -> None:
    do_reap_lost_runs()


@signals.worker_ready.connect
def _read_batches(sender, **_):
    global _batch_reader
    from django.conf import settings

    from web.redis import get_redis

    if settings.RECORD_QUEUE in sender.app.amqp.queues.consume_from:
        _batch_reader = BatchReader(get_redis(), settings.RECORD_QUEUE, sender.hostname).start()


@signals.worker_shutting_down.connect
def _stop_reading_batches(**_):
    if _batch_reader is not None:
        _batch_reader.stop()
