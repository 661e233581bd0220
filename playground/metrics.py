"""What runs do, for /metrics (web/metrics.py), counted in the process where it happens:

    playground_runs_started_total{kind, runtime}        a run sent to its queue, on commit (every
                                                        run: the playground's, a course's, a grading's)
    playground_runs_ended_total{kind, runtime, status}  its end stored (the recorder, the watchdog, a
                                                        cancel before it started: run_status_changed)
    playground_run_latency_seconds{kind, status}        end to end: queued (the run's row) to finished
                                                        (the executor's ``finished`` event)
    playground_recorder_lag_seconds                     a batch's oldest event (its time on the
                                                        executor) to the recorder's commit of it

The ends and the lag are counted by the recorder, a process of its own: PROMETHEUS_MULTIPROC_DIR
shared with the web processes of its host is what puts them in their /metrics. Times from an
executor's clock compared with this host's assume the clocks agree (NTP); a difference below
zero counts as zero.
"""

from __future__ import annotations

import logging
import time

from django.dispatch import receiver
from prometheus_client import Counter, Histogram

from executor import events as ev
from executor import registry
from web import metrics as _process_metrics  # noqa: F401 - its directory is ready before anything counts

from .models import Run, run_facts
from .signals import run_status_changed

log = logging.getLogger("playground")

RUNS_STARTED = Counter("playground_runs_started", "Runs sent to an executor queue", ["kind", "runtime"])
RUNS_ENDED = Counter("playground_runs_ended", "Runs whose end was stored, by how they ended",
                     ["kind", "runtime", "status"])
RUN_LATENCY = Histogram("playground_run_latency_seconds", "Runs from queued to finished, end to end",
                        ["kind", "status"],
                        buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800))
RECORDER_LAG = Histogram("playground_recorder_lag_seconds",
                         "From a batch's oldest event on the executor to the recorder's store of it",
                         buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))


def count_started(run: Run) -> None:
    RUNS_STARTED.labels(registry.parse_device(run.device)[0], run.runtime).inc()


def observe_recorded(events: list) -> None:
    """A batch the recorder has just stored: how long after its oldest event."""
    times = [e["ts"] for e in events if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))]
    if times:
        RECORDER_LAG.observe(max(0.0, time.time() - min(times)))


@receiver(run_status_changed, dispatch_uid="playground.metrics")
def on_run_status_changed(sender, run_id: str, status: str, run: dict | None = None, **kwargs) -> None:
    try:
        _count_status(run_id, status, run)
    except Exception:  # a count must not keep the other listeners (the courses') from hearing
        log.exception("counting run %s's status for /metrics failed", run_id)


def _count_status(run_id: str, status: str, run: dict | None) -> None:
    if status not in ev.TERMINAL_STATUSES:
        return  # only ends are counted here
    run = run or run_facts(run_id)
    if run is None:
        return
    device, runtime, created_at, finished_at = run["device"], run["runtime"], run["created_at"], run["finished_at"]
    kind = registry.parse_device(device)[0]
    RUNS_ENDED.labels(kind, runtime, status).inc()
    if finished_at is not None:
        RUN_LATENCY.labels(kind, status).observe(max(0.0, (finished_at - created_at).total_seconds()))
