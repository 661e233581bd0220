"""JSON shapes of the public API."""

from __future__ import annotations

from .models import Run


def _iso(dt):
    return dt.isoformat() if dt else None


def run_summary(run: Run) -> dict:
    summary = {
        "id": str(run.id),
        "status": run.status,
        "device": run.device,
        "runtime": run.runtime,
        "ws": f"/ws/runs/{run.id}/",
    }
    if getattr(run, "runtime_note", None):
        summary["note"] = run.runtime_note
    if run.session_id is not None:
        summary["session"] = str(run.session_id)
    return summary


def run_detail(run: Run, *, after: int = 0, limit: int = 1000) -> dict:
    """The run and one page of its events: those after seq ``after``, at most ``limit``.
    ``events_next`` is the ``after`` of the next page, or null on the last."""
    page = [e.data for e in run.events.filter(seq__gt=after).order_by("seq")[: limit + 1]]
    more = len(page) > limit
    page = page[:limit]
    return {
        **run_summary(run),
        "message": run.message,
        "worker": run.worker,
        "ran_on": run.ran_on,
        "device_kind": run.device_kind,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "wall_ms": run.wall_ms,
        "cpu_ms": run.cpu_ms,
        "peak_memory_kb": run.peak_memory_kb,
        "code": run.code,
        "stdin": run.stdin,
        "events": page,
        "events_next": page[-1]["seq"] if more else None,
    }


def session_detail(session, state: dict) -> dict:
    """A session as the API and its socket say it: its row and its live state
    (``actions.sessions.session_state``)."""
    return {
        "id": str(session.id),
        "url": f"/api/sessions/{session.id}",
        "ws": f"/ws/sessions/{session.id}/",
        "state": state["state"],
        "started": bool(state.get("started")),
        "running": state.get("busy"),
        "stopped_reason": state.get("stopped_reason"),
        "runtime": session.runtime,
        "device": session.device,
        "idle_timeout_s": session.idle_timeout_s,
        "cells_run": state.get("cells_run") or 0,
        "names": state.get("names") or {},
        "memory_bytes": state.get("memory_bytes"),
        # On an exclusive chip (a TPU's): the chip it holds, until when if it stays idle, and how
        # many wait for one; null elsewhere, and before its first cell.
        "lease": {"chips": state["chips"], "until": _epoch_iso(state.get("lease_until")),
                  "waiting": state.get("chip_waiting") or 0}
        if state.get("chips") and state["state"] != "stopped" else None,
        "last_used_at": _epoch_iso(state.get("last_used")),
        "created_at": _iso(session.created_at),
    }


def _epoch_iso(ts) -> str | None:
    from datetime import datetime, UTC

    return datetime.fromtimestamp(ts, tz=UTC).isoformat() if isinstance(ts, (int, float)) else None
