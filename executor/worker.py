"""The executor worker: a Celery app that consumes ``exec.<kind>`` and needs only the broker URL.

    celery -A executor.worker worker -Q exec.cpu -P threads -c 2
      ├─ heartbeat thread      executors:<kind> in Redis, every HEARTBEAT_S
      ├─ runner pool thread    keeps POOL_SIZE warm runners
      └─ task threads          executor.run: take a runner, supervise it, relay events

The threads pool, not prefork: a task mostly waits on its runner's pipes, and all task threads
share one warm pool (a prefork child would each need its own, 200 MiB a runner).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading

import redis
from celery import Celery, signals

from . import settings
from .celeryconf import COMMON
from .execution import Executor, build_launcher

log = logging.getLogger("executor")

# Checked at import, so that `celery worker` stops at once with the reason (no bubblewrap, no
# cgroups, EXECUTOR_SANDBOX=none without EXECUTOR_ALLOW_UNSANDBOXED) instead of taking runs it
# cannot execute safely.
LAUNCHER = build_launcher()

# A run's thread mostly waits on its runner's pipes and wakes for a few lines of work; the
# default switch interval (5 ms) would let a busy thread (the pool's refill, Celery's consumer)
# hold the GIL that long before a woken run's thread gets it.
sys.setswitchinterval(0.001)

app = Celery("executor", broker=settings.REDIS_URL)
app.conf.update(COMMON, task_default_queue=settings.QUEUE)

_executor: Executor | None = None
_executor_lock = threading.Lock()


def get_executor(hostname: str | None = None) -> Executor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = Executor(
                app=app,
                redis=redis.Redis.from_url(settings.REDIS_URL),
                name=hostname or f"{settings.KIND}@{socket.gethostname()}",
                launcher=LAUNCHER,
            )
            _executor.start()
        return _executor


@signals.worker_ready.connect
def _on_worker_ready(sender=None, **_):
    get_executor(getattr(sender, "hostname", None))


@signals.worker_shutting_down.connect
def _on_shutdown(**_):
    if _executor is not None:
        _executor.stop()


@app.task(name="executor.run", ignore_result=True)
def run(run_id: str, code: str, options: dict | None = None, limits: dict | None = None,
        grade: dict | None = None) -> None:
    get_executor().execute(run_id, code, options or {}, limits or {}, grade)
