"""The web side's Celery app: sends executor.run to exec.<kind> queues and runs the recorder
(queue RECORD_QUEUE, "record" by default, and the executors' event batches on the stream beside
it: playground/batches.py) and its watchdog (beat)."""

import os

from celery import Celery, signals

from executor import logs
from executor.celeryconf import COMMON, share_redis_clients

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")

share_redis_clients()
app = Celery("web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(COMMON)


def _route(name, args, kwargs, options, task=None, **_):
    """Every recorder task (web.tasks.recorder_task), however it is sent (a retry, a settle after
    the grace), goes to the record queue (RECORD_QUEUE): routed here, since a task's own queue
    attribute is deprecated in Celery 5. The settings are read when a task is sent, not here."""
    from django.conf import settings

    return {"queue": settings.RECORD_QUEUE} if name.startswith("recorder.") else None


app.conf.task_routes = (_route,)
# The recorder takes its tasks in batches: they are small, idempotent and order-free (a run's
# status only moves forward), so a recorder that read one at a time, as an executor must (its
# runs wait in Redis by priority, executor/celeryconf.py), only waited between them: with prefetch
# off, a busy worker's consumer looks at the queue again a second later, and a burst of 600 runs'
# batches drained at six a second.
app.conf.worker_disable_prefetch = False
app.conf.worker_prefetch_multiplier = 32
app.autodiscover_tasks(["playground", "courses"])


@app.on_after_finalize.connect
def _schedule(sender, **_):
    from django.conf import settings

    sender.conf.beat_schedule = {
        "reap-lost-runs": {
            "task": "recorder.reap_lost_runs",
            "schedule": float(settings.WATCHDOG_EVERY_S),
            "options": {"queue": settings.RECORD_QUEUE, "expires": float(settings.WATCHDOG_EVERY_S)},
        },
        # A graded run that ended without a grade is settled after a grace; this sweep settles
        # those whose settling task was lost with a broker that restarted.
        "settle-stale-gradings": {
            "task": "recorder.settle_stale_gradings",
            "schedule": 60.0,
            "options": {"queue": settings.RECORD_QUEUE, "expires": 60.0},
        },
    }


logs.name_runs_in_task_logs()


@signals.setup_logging.connect
def _setup_logging(loglevel=None, **_):
    """Celery leaves logging to web/settings.py's LOGGING (JSON lines, or text with LOG_FORMAT,
    with the run they concern), at the worker's -l level."""
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)
