"""State changes of runs. ``check_*`` validates and raises ``ActionError``; ``do_*`` changes state
without validating. Queue messages and log appends happen on commit, never before."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from datetime import datetime, UTC

from django.conf import settings
from django.db import transaction
from django.db.models import ProtectedError
from django.utils.translation import gettext as _

from executor import events as ev
from executor import registry, sessionstate, submit
from executor.runner import protocol
from web.api import plain_text
from web.clients import Client
from web.errors import ActionError

from ..models import Run, RunEvent, RunProfile, insert_new, run_facts
from ..signals import run_cancelling, run_started, run_status_changed
from .. import devices, metrics, quotas, runtimes, stages
from ..redis import get_event_log, get_redis

log = logging.getLogger("playground")

# What a snippet's slug can be (snippets.models: at most 32 characters, letters, digits, - and _).
SLUG = re.compile(r"[A-Za-z0-9_-]{1,32}")

# Starting ----------------------------------------------------------------------------------------

# A run's standard input, at most: with the largest code, JSON-escaped as a browser sends it (a
# newline is two bytes), it stays within MAX_REQUEST_BYTES and daphne's 1 MiB websocket message, so
# that a larger one is refused here, in words, rather than by the server as a body or message.
RUN_MAX_STDIN_BYTES = 256 * 1024

# What a run may ask of its runner: {"compile_cache": false} compiles everything afresh;
# {"profile": true} runs it under jax's profiler (its trace: RunProfile); {"chips": 4}, on a node of
# exclusive chips (a TPU's: executor/chips.py), holds all of them for pmap or shard_map (1 or all).
RUN_OPTIONS = {"compile_cache": bool, "profile": bool, "chips": int}
# The most chips a run may ask for (a TPU host has 4 or 8; the node says whether it has them).
RUN_MAX_CHIPS = 64


def check_options(options) -> dict:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ActionError(_("'options' must be an object: %(options)s") % {"options": ", ".join(RUN_OPTIONS)})
    for name, value in options.items():
        if name not in RUN_OPTIONS:
            raise ActionError(_("unknown option %(name)s: the options are %(options)s")
                              % {"name": repr(str(name)[:40]), "options": ", ".join(RUN_OPTIONS)})
        if RUN_OPTIONS[name] is int:
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= RUN_MAX_CHIPS:
                raise ActionError(_("option %(name)s must be a number of chips from 1 to %(most)s")
                                  % {"name": repr(name), "most": RUN_MAX_CHIPS})
        elif not isinstance(value, RUN_OPTIONS[name]):
            raise ActionError(_("option %(name)s must be true or false") % {"name": repr(name)})
    return dict(options)


def check_start_run(payload, *, client: Client, owner=None, run_id: uuid.UUID | None = None,
                    session=None, node: str | None = None) -> Run:
    """``client``: who starts it (``web.clients.request_client``, ``scope_client``), for ``owner``
    (the account signed in, if any): the run counts against the person and, signed out, their
    room. ``run_id``: the new run's id, when the caller needs it before the run exists (a run
    socket waits for its stream while the run is admitted); a new one by default. ``session``: a
    notebook session's cell (actions/sessions.py has taken the session for it), and ``node``, the
    node holding its runner, found online (None before its first cell has started it)."""
    parsed = stages.now()
    if not isinstance(payload, dict):
        raise ActionError(_("the request body must be a JSON object"))
    code = check_code(payload.get("code"))
    stdin = check_stdin(payload.get("stdin"))
    device = devices.check_device(payload.get("device", settings.RUN_DEFAULT_DEVICE))
    runtime, note = runtimes.check_runtime(payload.get("runtime"))
    if node is None:  # a cell's node was found online with the session's state
        devices.check_online(device, runtime)
    snippet = payload.get("snippet")
    if snippet is not None and not (isinstance(snippet, str) and SLUG.fullmatch(snippet)):
        # Checked before admission: a run admitted and queued must not fail on it afterwards.
        raise ActionError(_("'%(name)s' must be a snippet's slug") % {"name": "snippet"})
    options = check_options(payload.get("options"))
    who = client.person
    run_id = run_id or uuid.uuid4()
    route = registry.route(device, runtime)
    seen: dict = {}
    priority = quotas.check_admit_run(who, route, str(run_id), room=client.room, queued=node is None, seen=seen)
    admitted = stages.now()
    if parsed is not None:
        stages.stamp(run_id, "parsed", parsed)
        stages.stamp(run_id, "admitted", admitted)
    try:
        run = do_start_run(code, device, owner=owner if owner is not None and owner.is_authenticated else None,
                           run_id=run_id, priority=priority, runtime=runtime, options=options, session=session,
                           stdin=stdin, node=node, ahead=seen.get("waiting"))
    except BaseException:
        quotas.release(str(run_id))
        quotas.unplace(route, str(run_id))
        raise
    run_started.send(sender=Run, run=run, payload=payload, who=who)
    run.runtime_note = note  # a retired id: the answer says where it runs instead
    return run


def check_code(code) -> str:
    """The code of a run, a snippet or a submission: a string within RUN_MAX_CODE_BYTES."""
    if code is None:
        raise ActionError(_("'%(name)s' is required") % {"name": "code"})
    if not isinstance(code, str):
        raise ActionError(_("'%(name)s' must be a string") % {"name": "code"})
    size = len(code.encode("utf-8", errors="surrogatepass"))
    if size <= settings.RUN_MAX_CODE_BYTES:
        plain_text(code, "code")
    if size > settings.RUN_MAX_CODE_BYTES:
        raise ActionError(
            _("the code is %(size)s bytes; the limit is %(limit)s bytes (%(kib)s KiB)")
            % {"size": size, "limit": settings.RUN_MAX_CODE_BYTES, "kib": settings.RUN_MAX_CODE_BYTES // 1024}
        )
    return code


def check_stdin(stdin) -> str:
    """A run's standard input, a snippet's or a comparison side's: text within RUN_MAX_STDIN_BYTES
    (absent or null: none, ""). Read by the snippet as UTF-8 bytes, exactly these; a NUL is
    refused as in code (PostgreSQL stores no NUL in text)."""
    if stdin is None:
        return ""
    if not isinstance(stdin, str):
        raise ActionError(_("'%(name)s' must be a string") % {"name": "stdin"})
    size = len(stdin.encode("utf-8", errors="surrogatepass"))
    if size > RUN_MAX_STDIN_BYTES:
        raise ActionError(
            _("the input is %(size)s bytes; the limit is %(limit)s bytes (%(kib)s KiB)")
            % {"size": size, "limit": RUN_MAX_STDIN_BYTES, "kib": RUN_MAX_STDIN_BYTES // 1024}
        )
    return plain_text(stdin, "stdin")


def do_start_run(code: str, device: str, *, owner=None, options: dict | None = None,
                 limits: dict | None = None, grade: dict | None = None, run_id: uuid.UUID | None = None,
                 priority: int = 0, runtime: str | None = None, session=None, stdin: str = "",
                 node: str | None = None, ahead: int | None = None) -> Run:
    """``limits`` narrows RUN_LIMITS for this run (an assignment's); ``grade`` makes it a graded
    run: ``{"checks": source}``, hidden checks the executor sends into the sandbox once the code
    has ended. They travel only in the task message, never in the run's row or events.
    ``run_id``: the id its admission took (``quotas``; None: a new one). ``priority``: the
    queue's priority step its admission gave (quotas.priority; 0, the first, by default).
    ``runtime``: a checked runtime id (None: the default); it goes to that runtime's queue.
    ``session``: a notebook session's cell, which goes to the node holding the session's runner.
    ``stdin``: what the snippet reads as its standard input (checked: ``check_stdin``). ``node``: the
    node holding a session's runner, when the caller read it (else it is read at the queueing).
    ``ahead``: the runs waiting in its queue, as its admission read them a moment ago (else read
    here); a regrade's, queued last, are never ahead of it."""
    # A new run's log is empty, so its "queued" event is seq 1: stored with the run in one
    # transaction, appended to the log (where it gets that same seq) once committed.
    runtime = runtimes.current(runtime)  # a retired id (an assignment's, say) runs on its successor
    # A cell for a node's session waits behind nothing (a session runs one at a time): not the kind's queue.
    if node:
        ahead = 0
    elif ahead is None:
        ahead = registry.queue_depth(get_redis(), registry.route(device, runtime))
    queued = ev.make_event(ev.QUEUED, position=ahead + 1)
    queued["seq"] = 1
    run = Run(id=run_id or uuid.uuid4(), code=code, device=device, runtime=runtime, owner=owner,
              options=options or {}, session=session, stdin=stdin)
    with transaction.atomic():
        insert_new(run, RunEvent(run=run, seq=1, type=ev.QUEUED, data=queued))
        transaction.on_commit(lambda: _enqueue(run, queued, limits, grade, priority, node))
    return run


def run_limits(asked: dict | None, device: str | None = None) -> dict:
    """The device kind's limits (RUN_LIMITS_BY_KIND, else RUN_LIMITS), narrowed (never widened)
    by what is asked."""
    kind = registry.parse_device(device)[0] if device else None
    limits = dict(settings.RUN_LIMITS_BY_KIND.get(kind) or settings.RUN_LIMITS)
    for key, value in (asked or {}).items():
        if key in limits and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            limits[key] = min(limits[key], value)
    return limits


def _enqueue(run: Run, queued: dict, limits: dict | None = None, grade: dict | None = None,
             priority: int = 0, node: str | None = None) -> None:
    stages.stamp(run.id, "stored")
    route = registry.route(run.device, run.runtime)
    node, cell = None, None
    if run.session_id is not None:
        # A session's cell goes to the node that holds its runner, once one does (its first cell
        # starts it on whichever node of the kind takes it, through its kind's queue).
        node = node or (sessionstate.read(get_redis(), str(run.session_id)) or {}).get("node")
        cell = {"id": str(run.session_id), "idle_s": run.session.idle_timeout_s}
    message = submit.run_message(str(run.id), run.code, run.options, run_limits(limits, run.device), grade, cell,
                                 stdin=run.stdin)
    # The log's "queued" and the message, in this order, in one round trip: an executor that
    # takes the run at once appends after the event already there.
    pipe = get_redis().pipeline(transaction=False)
    get_event_log().append_in(pipe, str(run.id), queued)
    if node:
        # Straight to the node's stream (executor/cellstream.py): one append, where Celery's
        # publish cost a cell about 7 ms; the node's reader takes it at once.
        sessionstate.send_cell_in(pipe, node, message)
    else:
        submit.send_run(pipe, route, message, priority)
    quotas.unplace(route, str(run.id), pipe)  # pushed: counted in the queue's list now, not apart
    logged = ev.EventLog.appended(pipe.execute()[0])
    assert logged is not None and logged["seq"] == 1, logged
    stages.stamp(run.id, "queued")
    metrics.count_started(run)


# Recording ---------------------------------------------------------------------------------------

def _when(event: dict) -> datetime:
    return datetime.fromtimestamp(event.get("ts") or time.time(), tz=UTC)


def do_record_events(run_id: str, events: list[dict]) -> None:
    """Persist events (idempotent: a seq already stored is skipped) and move the run's status
    forward. Status only moves forward, so batches recorded out of order are harmless. What
    arrives is cleaned first (finite numbers, no NUL): one bad value must not fail the batch,
    whose retries would hold the run's row and the watchdog up."""
    moved: list[str] = []
    events = [protocol.clean_json(e) for e in events
              if isinstance(e, dict) and isinstance(e.get("seq"), int) and e["seq"] > 0
              and isinstance(e.get("type"), str)]
    if not events:
        return
    with transaction.atomic():
        # Lock the run's row first, then write its events: the same order as PostgreSQL's
        # TRUNCATE of both tables (and any other writer), so the two can wait but not deadlock.
        # (An insert's foreign-key check would otherwise lock the run only after the event.)
        # The status read under the lock decides where the batch moves it: the row is then
        # written once, however many of started and finished the batch has (a run of a few
        # milliseconds is one batch: one read, one insert, one update).
        locked = Run.objects.select_for_update(no_key=True).filter(id=run_id)
        found = list(locked.values_list("status", "started_at")[:1])
        status, started_at = found[0] if found else (None, None)
        if status is None:
            # A task queued against another database (a reset development database, say):
            # there is nothing to record it on, and retrying will not change that.
            log.warning("dropping %d events of run %s, which this database does not have", len(events), run_id)
            return
        RunEvent.objects.bulk_create(
            [RunEvent(run_id=run_id, seq=e["seq"], type=e["type"][:16], data=e) for e in events],
            ignore_conflicts=True,
        )
        row: dict = {}
        for e in events:
            if e["type"] == ev.PROFILE and e.get("url"):
                _store_profile(run_id)
            if e["type"] == ev.STARTED:
                # Where and when it ran are kept even when its end was recorded first (batches
                # recorded by two recorder processes can commit in either order), and only the
                # first start is: the row read under its lock says whether one was recorded (plain
                # values rather than conditional expressions, which Django built and compiled
                # anew for every batch, a third of recording one). The status only moves forward.
                if started_at is None and "started_at" not in row:
                    row.update(started_at=_when(e), worker=str(e.get("worker") or "")[:200],
                               ran_on=str(e.get("device") or "")[:40],
                               device_kind=str(e.get("device_kind") or "")[:100])
                if status == ev.STATUS_QUEUED:
                    status = row["status"] = ev.STATUS_RUNNING
                    moved.append(ev.STATUS_RUNNING)
            elif (e["type"] == ev.FINISHED and e.get("status") in ev.TERMINAL_STATUSES
                  and status not in ev.TERMINAL_STATUSES):
                status = e["status"]
                row.update(status=status, finished_at=_when(e), message=str(e.get("message") or ""),
                           wall_ms=_number(e.get("wall_ms")), cpu_ms=_number(e.get("cpu_ms")),
                           peak_memory_kb=_number(e.get("peak_memory_kb"), int))
                moved.append(status)
        if row:
            Run.objects.filter(id=run_id).update(**row)
        # Robust: the recorder commits many runs' batches at once (playground/batches.py), and one
        # run's hook that fails must not keep the next runs' from running.
        if moved:
            transaction.on_commit(lambda: _announce(run_id, moved), robust=True)
            if moved[-1] in ev.TERMINAL_STATUSES:
                transaction.on_commit(lambda: stages.stamp(run_id, "recorded"), robust=True)


def _store_profile(run_id: str) -> None:
    """A profiled run's trace, from Redis (where the executor put it) to the database; Redis's
    copy goes once the database's is committed. A trace Redis no longer has (a restart) stays
    unavailable, and its URL says so."""
    redis = get_redis()
    data = redis.get(ev.profile_key(run_id))
    if data is None or RunProfile.objects.filter(run_id=run_id).exists():
        return
    RunProfile.objects.create(run_id=run_id, data=data)
    transaction.on_commit(lambda: redis.delete(ev.profile_key(run_id)), robust=True)


def do_store_profile(run_id: str) -> None:
    """A trace built after its run's end (executor/profiles.py), from Redis to the database."""
    with transaction.atomic():
        if Run.objects.filter(id=run_id).exists():
            _store_profile(run_id)


def profile_building(run: Run) -> dict | None:
    """Why a profiled run's trace is not there (yet): {"building": true} while the executor
    builds it after the run's end, {"error", "error_parts"?} when it could not; None otherwise."""
    state = profile_state(str(run.id))
    return None if state is None or state.get("ready") else state


def profile_state(run_id: str) -> dict | None:
    """A trace built after its run's end: {"building": true}, {"ready": true, "info": {events,
    lanes, devices, summary, cut, bytes, raw_bytes}}, {"error", ...}; None for another run (or
    once Redis has forgotten it)."""
    state = get_redis().get(ev.profile_state_key(run_id))
    if state == b"building":
        return {"building": True}
    if state and state.startswith(b"{"):
        try:
            return json.loads(state)
        except ValueError:
            return None
    return None


def profile_of(run: Run) -> bytes | None:
    """A run's trace (gzipped): Redis's while the recorder has not stored it, else the database's.
    In that order: the recorder deletes Redis's copy once the database's is committed, so a trace
    missing from Redis is in the database (asked the other way round, a trace stored and deleted
    between the two reads was in neither)."""
    waiting = get_redis().get(ev.profile_key(str(run.id)))
    if waiting is not None:
        return waiting
    stored = list(RunProfile.objects.filter(run_id=run.id).values_list("data", flat=True)[:1])
    return bytes(stored[0]) if stored else None


def _announce(run_id: str, statuses: list[str]) -> None:
    """Each status the batch moved the run to, in order, with the run's facts read once (every
    listener asked for its own columns: three queries a status)."""
    try:
        run = run_facts(run_id)
    except Exception:  # the listeners read it themselves
        log.exception("reading run %s for its status's listeners failed", run_id)
        run = None
    for status in statuses:
        try:
            run_status_changed.send(sender=Run, run_id=run_id, status=status, run=run)
        except Exception:  # a listener's fault must not fail the recording, which is done
            log.exception("a listener of run %s's status failed", run_id)


def _number(value, kind=float):
    return kind(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# Cancelling --------------------------------------------------------------------------------------

def check_cancel_run(run: Run, *, who: str) -> str:
    """``who``: the person key of whoever asks (``web.clients``; a receiver of ``run_cancelling``
    may refuse them)."""
    run_cancelling.send(sender=Run, run=run, who=who)
    if run.session_id is not None and run.session.client != who:
        # A cell's interrupt is its session's maker's: whoever else sees the run's id (a shared
        # notebook's reader) must not cut a cell short in someone's session.
        raise ActionError(_("this run is a cell of someone's notebook session: only they may interrupt it"),
                          status=403)
    if run.is_finished:
        raise ActionError(_("the run already finished (%(status)s)") % {"status": run.status}, status=409)
    return do_cancel_run(run)


def do_cancel_run(run: Run) -> str:
    """Cancel a queued or running run; return the status it has now or will have shortly."""
    redis = get_redis()
    run_id = str(run.id)
    redis.set(ev.cancel_key(run_id), 1, ex=ev.EVENT_LOG_TTL_S)
    # Whoever sets the claim first decides: if we do, no executor will ever start it. A run that
    # has started (a Redis that restarted may have forgotten its claim) is its executor's to end.
    if run.status == ev.STATUS_RUNNING or redis.exists(ev.alive_key(run_id)):
        return run.status
    if redis.set(ev.claim_key(run_id), "cancelled", nx=True, ex=ev.EVENT_LOG_TTL_S):
        submit.unqueue(redis, run_id)  # its message counts towards a full queue no longer
        finished = get_event_log().append(run_id, ev.finished_event(
            ev.CANCELLED, ev.ended("cancelled_before_start"), wall_ms=0), after=_last_seq(run_id))
        do_record_events(run_id, [finished])
        return ev.CANCELLED
    # An executor has it: it sees the flag within a tick and ends the run as cancelled.
    return run.status


def _last_seq(run_id: str) -> int:
    """The last seq the database has of a run (its log may be younger: a Redis that restarted)."""
    return RunEvent.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True).first() or 0


# Deleting ---------------------------------------------------------------------------------------

def check_delete_run(run: Run) -> None:
    """Delete one's own run, unless something still shows it: a snippet's link (its saved output),
    or the run itself, still queued or running (its executor would go on reporting to no one)."""
    if not run.is_finished:
        raise ActionError(_("this run has not finished yet; cancel it or wait for it to end, then delete it"),
                          status=409)
    slug = run.snippets.values_list("slug", flat=True).first()
    if slug is not None:
        raise ActionError(_("this run is kept: it is the saved output of the shared snippet /s/%(slug)s, whose link "
                            "shows it") % {"slug": slug}, status=409)
    do_delete_run(run)


def do_delete_run(run: Run) -> None:
    """The row and its events go; its Redis log expires on its own within a day, and no one can
    read it meanwhile (the API and the websocket look a run up in the database first)."""
    try:
        with transaction.atomic():
            Run.objects.filter(pk=run.pk).delete()
    except ProtectedError as exc:  # a link keeps it: a comparison's side, or a snippet's output shared just now
        keeper = next(iter(exc.protected_objects), None)
        if hasattr(keeper, "get_absolute_url"):
            message = _("this run is kept: %(url)s shows it") % {"url": keeper.get_absolute_url()}
        else:
            message = _("this run is kept: a link shows it")
        raise ActionError(message, status=409) from None


# The watchdog ------------------------------------------------------------------------------------

def do_reap_lost_runs() -> list[str]:
    """Give every run whose executor died a terminal state.

    A run is in an executor's hands once its claim key names a worker; the executor refreshes the
    run's alive key every few seconds while it has it. A run without an alive key whose log has
    no ``finished`` lost its executor if it was claimed or started (a Redis that restarted
    forgets the claim, not the database the ``started`` event), or if it has waited in the queue
    longer than ``RUN_QUEUE_TIMEOUT_S`` (its task was lost with the broker's queue). A run whose
    log finished but whose row did not (the recorder's batch was lost) is completed from the
    log. Each run is looked at on its own: one that fails is logged and the pass goes on.
    """
    reaped = []
    now = time.time()
    cutoff = datetime.fromtimestamp(now - ev.ALIVE_TTL_S, tz=UTC)
    candidates = Run.objects.filter(
        status__in=(ev.STATUS_QUEUED, ev.STATUS_RUNNING), created_at__lt=cutoff
    ).values_list("id", "status", "created_at")
    for run_uuid, status, created_at in list(candidates.iterator()):
        run_id = str(run_uuid)
        try:
            if _reap(run_id, status, now - created_at.timestamp()):
                reaped.append(run_id)
        except Exception:
            log.exception("the watchdog could not settle run %s; it tries again next pass", run_id)
    return reaped


def _reap(run_id: str, status: str, age_s: float) -> bool:
    redis = get_redis()
    event_log = get_event_log()
    if event_log.is_finished(run_id):
        do_record_events(run_id, ev.decode_entries(redis.xrange(ev.log_key(run_id))))
        return False
    claim = redis.get(ev.claim_key(run_id))
    if claim == b"cancelled" or redis.exists(ev.alive_key(run_id)):
        redis.delete(ev.suspect_key(run_id))
        return False  # being cancelled, or alive
    if claim is not None or status == ev.STATUS_RUNNING:
        # No pulse: lost once that has lasted ALIVE_TTL_S more (a Redis that restarted forgets
        # every alive key, and the executors beat again within ALIVE_EVERY_S).
        redis.set(ev.suspect_key(run_id), time.time(), nx=True, ex=6 * ev.ALIVE_TTL_S)
        since = float(redis.get(ev.suspect_key(run_id)) or time.time())
        if time.time() - since < ev.ALIVE_TTL_S:
            return False
        message = ev.ended("stopped_responding")
    elif age_s > settings.RUN_QUEUE_TIMEOUT_S:
        message = ev.ended("not_taken", seconds=settings.RUN_QUEUE_TIMEOUT_S)
        submit.unqueue(redis, run_id)  # if its message is still there, no node takes it now
    else:
        return False  # still queued
    finished = event_log.append(run_id, ev.finished_event(ev.LOST, message), after=_last_seq(run_id))
    # The whole log, not only its new end: the events the executor appended but had not yet
    # batched to the recorder when it vanished (up to RECORD_EVERY_S of them) are stored too, or
    # the database would keep a hole in the run once the log expires.
    do_record_events(run_id, ev.decode_entries(redis.xrange(ev.log_key(run_id))))
    if finished is None:  # it finished just now after all
        return False
    log.warning("run %s lost: %s (executor %s)", run_id, message, (claim or b"none").decode())
    return True
