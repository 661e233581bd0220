"""State changes of runs. ``check_*`` validates and raises ``ActionError``; ``do_*`` changes state
without validating. Queue messages and log appends happen on commit, never before."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone

from django.conf import settings
from django.db import transaction

from executor import events as ev
from executor import registry

from ..models import Run, RunEvent
from ..redis import get_event_log, get_redis

log = logging.getLogger("playground")

RUN_TASK = "executor.run"


class ActionError(Exception):
    """A request the playground refuses, with the HTTP status that says why."""

    def __init__(self, message: str, status: int = 400, headers: dict | None = None):
        super().__init__(message)
        self.message, self.status, self.headers = message, status, headers or {}


# Starting ----------------------------------------------------------------------------------------

def check_start_run(payload, *, client: str) -> Run:
    if not isinstance(payload, dict):
        raise ActionError("the request body must be a JSON object")
    code = payload.get("code")
    if code is None:
        raise ActionError("'code' is required")
    if not isinstance(code, str):
        raise ActionError("'code' must be a string")
    size = len(code.encode("utf-8", errors="surrogatepass"))
    if size > settings.RUN_MAX_CODE_BYTES:
        raise ActionError(
            f"the code is {size} bytes; the limit is {settings.RUN_MAX_CODE_BYTES} bytes "
            f"({settings.RUN_MAX_CODE_BYTES // 1024} KiB)"
        )
    device = payload.get("device", settings.RUN_DEFAULT_DEVICE)
    if not isinstance(device, str) or device not in settings.RUN_DEVICE_KINDS:
        raise ActionError(
            f"unknown device {device!r}; choose one of {', '.join(settings.RUN_DEVICE_KINDS)}"
        )
    redis = get_redis()
    if not registry.online_workers(redis, device):
        raise ActionError(f"no {device} executor is online right now; try again shortly", status=503)
    check_rate_limit(client)
    return do_start_run(code, device)


def check_rate_limit(client: str) -> None:
    limit = settings.RUN_RATE_LIMIT_PER_MINUTE
    if not limit:
        return
    window = int(time.time() // 60)
    key = f"ratelimit:runs:{client}:{window}"
    pipe = get_redis().pipeline()
    pipe.incr(key)
    pipe.expire(key, 61)
    count, _ = pipe.execute()
    if count > limit:
        retry = 60 - int(time.time()) % 60
        raise ActionError(
            f"too many runs: at most {limit} a minute; try again in {retry} s",
            status=429, headers={"Retry-After": str(retry)},
        )


def do_start_run(code: str, device: str, *, owner=None, options: dict | None = None) -> Run:
    queue = registry.queue_name(device)
    # A new run's log is empty, so its "queued" event is seq 1: stored with the run in one
    # transaction, appended to the log (where it gets that same seq) once committed.
    queued = ev.make_event(ev.QUEUED, position=get_redis().llen(queue) + 1)
    queued["seq"] = 1
    with transaction.atomic():
        run = Run.objects.create(code=code, device=device, owner=owner, options=options or {})
        RunEvent.objects.create(run=run, seq=1, type=ev.QUEUED, data=queued)
        transaction.on_commit(lambda: _enqueue(run, queued))
    return run


def _enqueue(run: Run, queued: dict) -> None:
    from web.celery import app

    logged = get_event_log().append(str(run.id), queued)
    assert logged is not None and logged["seq"] == 1, logged
    queue = registry.queue_name(run.device)
    app.send_task(
        RUN_TASK,
        kwargs={"run_id": str(run.id), "code": run.code, "options": run.options,
                "limits": settings.RUN_LIMITS},
        queue=queue,
    )


# Recording ---------------------------------------------------------------------------------------

def _when(event: dict) -> datetime:
    return datetime.fromtimestamp(event.get("ts") or time.time(), tz=timezone.utc)


def do_record_events(run_id: str, events: list[dict]) -> None:
    """Persist events (idempotent: a seq already stored is skipped) and move the run's status
    forward. Status only moves forward, so batches recorded out of order are harmless."""
    events = [e for e in events if e]
    if not events:
        return
    with transaction.atomic():
        # Lock the run's row first, then write its events: the same order as PostgreSQL's
        # TRUNCATE of both tables (and any other writer), so the two can wait but not deadlock.
        # (An insert's foreign-key check would otherwise lock the run only after the event.)
        if not Run.objects.select_for_update(no_key=True).filter(id=run_id).exists():
            # A task queued against another database (a reset development database, say):
            # there is nothing to record it on, and retrying will not change that.
            log.warning("dropping %d events of run %s, which this database does not have", len(events), run_id)
            return
        RunEvent.objects.bulk_create(
            [RunEvent(run_id=run_id, seq=e["seq"], type=e["type"], data=e) for e in events],
            ignore_conflicts=True,
        )
        for e in events:
            if e["type"] == ev.STARTED:
                Run.objects.filter(id=run_id, status=ev.STATUS_QUEUED).update(
                    status=ev.STATUS_RUNNING, started_at=_when(e), worker=e.get("worker") or ""
                )
            elif e["type"] == ev.FINISHED:
                Run.objects.filter(id=run_id).exclude(status__in=ev.TERMINAL_STATUSES).update(
                    status=e["status"],
                    finished_at=_when(e),
                    message=e.get("message") or "",
                    wall_ms=e.get("wall_ms"),
                    cpu_ms=e.get("cpu_ms"),
                    peak_memory_kb=e.get("peak_memory_kb"),
                )


# Cancelling --------------------------------------------------------------------------------------

def check_cancel_run(run: Run) -> str:
    if run.is_finished:
        raise ActionError(f"the run already finished ({run.status})", status=409)
    return do_cancel_run(run)


def do_cancel_run(run: Run) -> str:
    """Cancel a queued or running run; return the status it has now or will have shortly."""
    redis = get_redis()
    run_id = str(run.id)
    redis.set(ev.cancel_key(run_id), 1, ex=ev.EVENT_LOG_TTL_S)
    # Whoever sets the claim first decides: if we do, no executor will ever start it.
    if redis.set(ev.claim_key(run_id), "cancelled", nx=True, ex=ev.EVENT_LOG_TTL_S):
        finished = get_event_log().append(run_id, ev.make_event(
            ev.FINISHED, status=ev.CANCELLED, message="cancelled before it started",
            wall_ms=0, cpu_ms=None, peak_memory_kb=None, truncated=False,
        ))
        do_record_events(run_id, [finished])
        return ev.CANCELLED
    # An executor has it: it sees the flag within a tick and ends the run as cancelled.
    return run.status


# The watchdog ------------------------------------------------------------------------------------

def do_reap_lost_runs() -> list[str]:
    """Give every run whose executor died a terminal state.

    A run is in an executor's hands once its claim key names a worker; the executor refreshes the
    run's alive key every few seconds while it has it. A claimed run without an alive key, whose
    log has no ``finished``, lost its executor. A run whose log finished but whose row did not
    (the recorder's batch was lost) is completed from the log.
    """
    redis = get_redis()
    event_log = get_event_log()
    reaped = []
    cutoff = datetime.fromtimestamp(time.time() - ev.ALIVE_TTL_S, tz=timezone.utc)
    candidates = Run.objects.filter(
        status__in=(ev.STATUS_QUEUED, ev.STATUS_RUNNING), created_at__lt=cutoff
    ).values_list("id", flat=True)
    for run_uuid in candidates.iterator():
        run_id = str(run_uuid)
        if event_log.is_finished(run_id):
            do_record_events(run_id, ev.decode_entries(redis.xrange(ev.log_key(run_id))))
            continue
        claim = redis.get(ev.claim_key(run_id))
        if claim is None or claim == b"cancelled" or redis.exists(ev.alive_key(run_id)):
            continue  # still queued, or alive
        finished = event_log.append(run_id, ev.make_event(
            ev.FINISHED, status=ev.LOST,
            message="the executor running this snippet stopped responding; it was not re-run",
            wall_ms=None, cpu_ms=None, peak_memory_kb=None, truncated=False,
        ))
        if finished is None:  # it finished just now after all
            do_record_events(run_id, ev.decode_entries(redis.xrange(ev.log_key(run_id))))
            continue
        do_record_events(run_id, [finished])
        log.warning("run %s lost: its executor %s stopped responding", run_id, claim.decode())
        reaped.append(run_id)
    return reaped
