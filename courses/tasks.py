"""Recorder tasks of courses (queue "record", like playground.tasks): the grade of a graded run,
sent by the executor by name, and the settling of a grading whose run ended without one."""

from __future__ import annotations

from executor import submit
from web.tasks import recorder_task

from .grading import do_record_grade, do_settle_grading, do_settle_stale_gradings


@recorder_task(submit.GRADE_TASK)
def record_grade(run_id: str, result: dict) -> None:
    do_record_grade(run_id, result)


@recorder_task("recorder.settle_grading")
def settle_grading(grading_id: int) -> None:
    do_settle_grading(grading_id)


@recorder_task("recorder.settle_stale_gradings", max_retries=0)
def settle_stale_gradings() -> None:
    """A sweep for the beat: gradings whose settle task was lost (a broker that restarted)."""
    do_settle_stale_gradings()
