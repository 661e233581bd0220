"""JSON shapes of the public API."""

from __future__ import annotations

from .models import Run


def _iso(dt):
    return dt.isoformat() if dt else None


def run_summary(run: Run) -> dict:
    return {
        "id": str(run.id),
        "status": run.status,
        "device": run.device,
        "ws": f"/ws/runs/{run.id}/",
    }


def run_detail(run: Run) -> dict:
    return {
        **run_summary(run),
        "message": run.message,
        "worker": run.worker,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "wall_ms": run.wall_ms,
        "cpu_ms": run.cpu_ms,
        "peak_memory_kb": run.peak_memory_kb,
        "code": run.code,
        "events": [e.data for e in run.events.all()],
    }
