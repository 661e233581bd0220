"""The web side's stamps of a run's path (executor/stages.py), when RUN_STAGE_TIMES is set."""

from __future__ import annotations

from django.conf import settings

from executor import stages

from .redis import get_redis


def stamp(run_id, stage: str, at: str | None = None) -> None:
    if settings.RUN_STAGE_TIMES:
        stages.record(get_redis(), str(run_id), stage, at)


def now() -> str | None:
    """A stamp to give ``stamp`` later (the run's id not known yet), or None when off."""
    return stages.now() if settings.RUN_STAGE_TIMES else None
