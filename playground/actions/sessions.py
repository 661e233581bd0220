"""Notebook sessions: made, their cells admitted and routed, ended. A session is a row (whose it is,
what it runs on) and a live state in Redis (``executor.sessionstate``) that its node writes too;
a cell is a run with its session, admitted as any run is, sent to the node that holds the
session's runner (its own Redis stream) once one does, else to its kind's queue like a run.

``check_*`` validates and raises ``ActionError``; ``do_*`` changes state without validating."""

from __future__ import annotations

import logging
import time
import uuid

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from executor import registry, sessionstate
from web.clients import Client
from web.errors import ActionError
from web.ratelimit import check_rate_in_room
from web.redis import exclusive

from .. import devices, runtimes
from ..models import Run, Session
from ..redis import get_redis
from .runs import check_code, check_options, check_start_run

log = logging.getLogger("playground")

# Why a session stopped, as stored (shared by every page that shows it: English, put into the
# reader's language where a refusal quotes it).
FORGOTTEN = gettext_noop("the playground restarted and forgot it (its state is lost; restore the notebook to run its "
                         "cells again)")
NODE_LOST = gettext_noop("its node stopped answering (its state is lost; restore the notebook to run its cells again)")
ENDED = gettext_noop("it was ended")
ENDED_BY_OWNER = gettext_noop("it was ended by its owner")
NEW_SESSIONS = gettext_lazy("new sessions")
# How long the sessions' lock may be held (a few reads of Redis and the table, one insert).
CREATE_HOLD_S = 10


def check_create_session(payload, *, client: Client, owner=None) -> Session:
    """A new session on a device and runtime (the defaults unless asked), for ``client``'s person;
    refused past SESSION_MAX_PER_CLIENT live ones (SESSION_MAX_PER_ROOM for everyone signed out at
    the address), SESSION_RATE_LIMIT_PER_HOUR new ones, or when the kind's nodes have no room for
    one more (503).

    The caps are counted and the session made under one lock (``web.redis.exclusive``): counted
    apart from the insert, ten requests at once each saw none live and were all made, past the
    person's cap and the node's whole EXECUTOR_MAX_SESSIONS. Sessions are made a few an hour, so
    one lock for all of them costs nothing a person sees."""
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise ActionError(_('the request body must be a JSON object: {"runtime"?, "device"?}'))
    unknown = sorted(set(payload) - {"runtime", "device"})
    if unknown:
        raise ActionError(_('unknown field %(name)s: a session takes "runtime" and "device"')
                          % {"name": repr(unknown[0][:40])})
    device = devices.check_device(payload.get("device", settings.RUN_DEFAULT_DEVICE))
    runtime, _note = runtimes.check_runtime(payload.get("runtime"))
    devices.check_online(device, runtime)
    who = client.person
    with exclusive("sessions", hold_s=CREATE_HOLD_S):
        live = _live(Session.objects.filter(client=who))
        if len(live) >= settings.SESSION_MAX_PER_CLIENT:
            raise ActionError(
                _("you hold %(count)s live sessions, the most one person may (%(limit)s); end one (DELETE "
                  "/api/sessions/<id>, or Restart on its page) first")
                % {"count": len(live), "limit": settings.SESSION_MAX_PER_CLIENT}, status=429,
                data={"limit": "sessions", "sessions": [str(s.id) for s in live]})
        room_live = _live(Session.objects.filter(room=client.room)) if client.room is not None else []
        if len(room_live) >= settings.SESSION_MAX_PER_ROOM:
            raise ActionError(
                _("everyone signed out at your address together holds %(limit)s live sessions, the most they may; "
                  "sign in for sessions of your own, or end one first") % {"limit": settings.SESSION_MAX_PER_ROOM},
                status=429, data={"limit": "room_sessions"})
        check_room(device, runtime)
        check_rate_in_room("sessions", who, client.room, settings.SESSION_RATE_LIMIT_PER_HOUR, 3600, NEW_SESSIONS)
        return do_create_session(device=device, runtime=runtimes.current(runtime), client=who,
                                 room=client.room or "",
                                 owner=owner if owner is not None and owner.is_authenticated else None)


def _live(sessions) -> list[Session]:
    """Those not yet ended (each looked at: one whose node went is ended now)."""
    return [s for s in sessions.filter(ended_at__isnull=True) if session_state(s)["state"] != sessionstate.STOPPED]


def check_room(device: str, runtime: str) -> None:
    """The kind's nodes have room for one more session: the slots their heartbeats offer
    (EXECUTOR_MAX_SESSIONS each) against the sessions of the kind still live in the table, those
    whose runner has not started yet with them (a heartbeat counts only the runners it holds, and
    a burst of new sessions had none yet). Called under the sessions' lock."""
    workers = devices.online_workers(f"{device}@{runtime}")
    slots = sum(max(0, int(w.get("session_slots", 0))) for w in workers)
    held = len(_live(Session.objects.filter(device=device, runtime=runtimes.current(runtime))))
    if held >= slots:
        raise ActionError(_("no %(device)s executor has room for another session right now (each holds at most its "
                            "EXECUTOR_MAX_SESSIONS); try again in a minute") % {"device": device}, status=503,
                          headers={"Retry-After": "60"}, data={"limit": "node_sessions"})


def do_create_session(*, device: str, runtime: str, client: str, room: str = "", owner=None) -> Session:
    """Its live state first, then its row: a row is never seen without its state (a reader in
    between took such a session for one Redis forgot, and stopped it). A row that could not be
    made takes its state with it."""
    session_id = uuid.uuid4()
    redis = get_redis()
    sessionstate.create(redis, str(session_id), idle_s=settings.SESSION_IDLE_TIMEOUT_S)
    try:
        return Session.objects.create(id=session_id, device=device, runtime=runtime, client=client, room=room,
                                      owner=owner, idle_timeout_s=settings.SESSION_IDLE_TIMEOUT_S)
    except BaseException:
        sessionstate.forget(redis, str(session_id))
        raise


def session_state(session: Session, *, held: bool = False) -> dict:
    """Its live state (``sessionstate.read``), with what the web side learns itself: a session
    Redis forgot, or whose node stopped beating, is stopped, and its row says so from then on.
    ``held``: ``session`` was read a while ago (its socket holds it): its row, which only a stop
    changes, is read again only when the live state is not a running session's."""
    state, beats = None, False
    if held or session.ended_at is None:
        state, beats = sessionstate.read_live(get_redis(), str(session.id), registry.executors_key(session.device),
                                              settings.EXECUTOR_ONLINE_WINDOW_S)
    if held:
        # Not when its end was asked for (a DELETE from another tab) or its row says it ended.
        if state is not None and state["state"] != sessionstate.STOPPED and not state["stop"] \
                and session.ended_at is None and (not state["node"] or beats):
            return state
        session.refresh_from_db(fields=["ended_at", "stopped_reason"])
    if session.ended_at is not None:
        return {**_stopped(session.stopped_reason or ENDED)}
    if state is None:
        reason = FORGOTTEN
        do_end_session(session, reason, request=False)
        return _stopped(reason)
    if state["state"] != sessionstate.STOPPED and state["node"] and not beats:
        reason = NODE_LOST
        do_end_session(session, reason, request=False)
        return {**state, **_stopped(reason)}
    if state["state"] == sessionstate.STOPPED:
        if Session.objects.filter(pk=session.pk, ended_at__isnull=True).update(
                ended_at=timezone.now(), stopped_reason=state["stopped_reason"] or ""):
            _cancel_queued(session)
    return state


def _cancel_queued(session: Session) -> None:
    """A cell still queued for a session that stopped would wait for a runner that is gone (on
    its node's own stream, for a node that may be gone too): it is cancelled, never run elsewhere."""
    from .runs import do_cancel_run

    for run in Run.objects.filter(session=session, status="queued"):
        try:
            do_cancel_run(run)
        except Exception:  # the watchdog ends it in time
            log.exception("cancelling cell %s of stopped session %s", run.id, session.id)


def _stopped(reason: str) -> dict:
    return {"state": sessionstate.STOPPED, "stopped_reason": reason, "started": False, "busy": None,
            "cells_run": 0, "names": {}, "memory_bytes": None, "last_used": None, "node": None, "stop": False}


def check_run_cell(session: Session, payload, *, client: Client, owner=None, run_id: uuid.UUID | None = None,
                   held: bool = False) -> Run:
    """A cell of the session: a run admitted as any (the person's shares) that runs in the
    session's runner. One at a time: 409 while another is queued or running; 410 once stopped.
    ``run_id``: the new run's id, when the caller waits for its events before it exists (the
    session's socket); a new one by default. ``held``: the session was read a while ago (its
    socket's: ``session_state``)."""
    if not isinstance(payload, dict):
        raise ActionError(_('the request body must be a JSON object: {"code", "options"?}'))
    unknown = sorted(set(payload) - {"code", "options"})
    if unknown:
        raise ActionError(_('unknown field %(name)s: a cell takes "code" and "options"')
                          % {"name": repr(unknown[0][:40])})
    code = check_code(payload.get("code"))
    check_options(payload.get("options"))
    run_id = run_id or uuid.uuid4()
    # Most often the session is plainly free: read and taken in one round trip. Otherwise (it
    # stopped, is busy, was forgotten, its node is silent) step by step, each said as it is.
    state = None
    if session.ended_at is None:
        state = sessionstate.take_live(get_redis(), str(session.id), str(run_id),
                                       registry.executors_key(session.device), settings.EXECUTOR_ONLINE_WINDOW_S)
    if state is None:
        state = session_state(session, held=held)
        if state["state"] == sessionstate.STOPPED:
            raise _gone(state)
        taken = _take(session, str(run_id))
        if taken == "stopped":
            raise _gone(session_state(session))
    try:
        return check_start_run({"code": code, "options": payload.get("options"), "device": session.device,
                                "runtime": session.runtime}, client=client, owner=owner, run_id=run_id,
                               session=session, node=state.get("node"))
    except BaseException:
        sessionstate.give_back(get_redis(), str(session.id), str(run_id))
        raise


# How long a session is held for a cell whose run was never stored (its admission failed between
# taking the session and storing the run: the web process died, say) before the next cell lets it
# go. Taking and storing are milliseconds apart; a run stored meanwhile is not let go.
UNSTORED_CELL_S = 30.0


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _take(session: Session, run_id: str) -> str:
    """The session for this cell: "ok" or "stopped"; 409 while another cell is in flight (one
    whose run ended without telling, a cancel before it started say, or whose run was never
    stored, is let go first)."""
    redis = get_redis()
    for _attempt in range(2):
        taken = sessionstate.take(redis, str(session.id), run_id)
        if not taken.startswith("busy:"):
            return "stopped" if taken in ("stopped", "missing") else taken
        other, _sep, since = taken.removeprefix("busy:").partition(":")
        status = Run.objects.filter(id=other).values_list("status", flat=True).first()
        unstored = status is None and time.time() - _seconds(since) > UNSTORED_CELL_S
        if status in ("queued", "running") or (status is None and not unstored):
            raise ActionError(_("a cell of this session is still running (run %(run)s); a session runs one cell at a "
                                "time: wait for it to finish, or cancel it") % {"run": other}, status=409,
                              data={"running": other})
        sessionstate.give_back(redis, str(session.id), other)
    raise ActionError(_("this session is busy; try again"), status=409)


def _gone(state: dict) -> ActionError:
    """410: the session stopped, and why (the stored reason, in the reader's language where it is
    one of those the catalogue knows; a node's own otherwise, in English)."""
    reason = _(state.get("stopped_reason") or ENDED)
    return ActionError(_("this session was stopped: %(reason)s; start a new session (POST /api/sessions) and run its "
                         "cells again") % {"reason": reason}, status=410,
                       data={"state": "stopped", "stopped_reason": state.get("stopped_reason")})


def check_end_session(session: Session) -> None:
    do_end_session(session, ENDED_BY_OWNER, request=True)


def do_end_session(session: Session, reason: str, *, request: bool) -> None:
    """Stopped, with why; ``request``: its node is asked to end its runner (a cell in flight
    ends with it)."""
    sessionstate.stop(get_redis(), str(session.id), reason, request=request)
    if Session.objects.filter(pk=session.pk, ended_at__isnull=True).update(ended_at=timezone.now(),
                                                                         stopped_reason=reason):
        _cancel_queued(session)
    session.ended_at = session.ended_at or timezone.now()
    session.stopped_reason = session.stopped_reason or reason
