"""A submission's grading: the statuses it goes through, and its result landing.

    do_submit / do_regrade ─▶ Grading(queued) + a graded Run, queued on commit
                              (courses.actions.submissions)
    the run starts (run_status_changed "running") ─▶ grading, and the submission if it has no grade yet
    recorder.record_grade(run_id, result)          ─▶ graded: on the grading, and on the submission
                                                      unless a newer grading of it landed first
    the run ends and no result came within COURSES_GRADE_GRACE_S (cancelled before it started,
    lost by the watchdog: nothing in the executor sent one) ─▶ graded with score 0 and a message
    saying why (recorder.settle_grading, which courses.receivers schedules at the run's end); a
    real result that still arrives replaces it.

So a submission always ends "graded". Its score is the sum of the points of the checks that
passed, out of the points of every check reported or declared by the checks' source
(``courses.checks.declared_checks``): a check the code never reached counts as failed. A grade in
which a check crashed (the checks' own fault) ``needs_regrade``: its score is provisional, and the
course's dashboards get a "check_error" item with the traceback at once.

A validation is a grading of the assignment's reference solution or starter code
(``queue_validation``, ``courses.actions.assignments.check_validate_assignment``): the same
states and the same landing, on the grading alone (no submission), which the instructor's
assignment page reads.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from executor import events as ev
from executor.runner import grades
from playground.actions.runs import do_start_run

from . import checks as checks_source
from .dashboard import broadcast_on_commit, check_error_item, regrade_item, submission_item
from .models import GRADED, GRADING, QUEUED, Assignment, Grading, Submission

log = logging.getLogger("courses")

def grade_grace_s() -> float:
    """How long after a graded run ended its result may still be on its way (the executor sends it
    before the run's last events, but the recorder may take them in either order)."""
    return float(settings.COURSES_GRADE_GRACE_S)


def queue_grading(submission: Submission, assignment: Assignment, *, run_id: uuid.UUID | None, priority: int,
                  regrade: int = 0) -> Grading:
    """A graded run of the submission's code with the assignment's checks as they are now. The
    checks go to the executor in the task's message only (``do_start_run(grade=...)``). ``run_id``
    and ``priority``: what its admission took and gave (``courses.actions.submissions``; None: a new id)."""
    run = do_start_run(submission.code, assignment.device, owner=None, limits=assignment.limits,
                       grade={"checks": assignment.checks}, runtime=assignment.runtime, run_id=run_id,
                       priority=priority)
    return Grading.objects.create(submission=submission, run=run, checks_version=assignment.checks_version,
                                  regrade=regrade, declared=checks_source.declared_checks(assignment.checks))


def queue_validation(assignment: Assignment, kind: str, code: str, *, run_id: uuid.UUID | None,
                     priority: int) -> Grading:
    """A graded run of the assignment's reference solution or starter code (``kind``) with its
    checks as they are now: a grading of no submission. ``run_id`` and ``priority`` as
    ``queue_grading``'s."""
    run = do_start_run(code, assignment.device, owner=None, limits=assignment.limits,
                       grade={"checks": assignment.checks}, runtime=assignment.runtime, run_id=run_id,
                       priority=priority)
    return Grading.objects.create(kind=kind, assignment=assignment, run=run, checks_version=assignment.checks_version,
                                  declared=checks_source.declared_checks(assignment.checks))


def do_grading_started(run_id: str) -> Grading | None:
    """The grading's run started: it is grading, and so is its submission while it has no grade
    (a submission being regraded keeps showing its earlier grade)."""
    grading = Grading.objects.filter(run_id=run_id).select_related("submission__assignment").first()
    if grading is None:
        return None
    if Grading.objects.filter(pk=grading.pk, status=QUEUED).update(status=GRADING):
        moved = Submission.objects.filter(pk=grading.submission_id, status=QUEUED, grading__isnull=True).update(
            status=GRADING)
        if moved:
            submission = Submission.objects.get(pk=grading.submission_id)
            broadcast_on_commit(submission.assignment.course_id, lambda: submission_item(submission))
    return grading


def grade_from_result(result, declared: list[dict]) -> dict:
    """The grade an executor's result gives (``protocol.grade_fields``): the one rule of
    ``executor.runner.grades.grade``, which ``executor.local`` uses too. A result that is not a
    dict is a garbled one: no score."""
    result = result if isinstance(result, dict) else {}
    outcome = result.get("outcome") if isinstance(result.get("outcome"), str) else grades.OUTCOME_INTERFERED
    status = result.get("student_status") if isinstance(result.get("student_status"), str) else None
    return grades.grade(result.get("checks"), declared, outcome=outcome, student_status=status,
                        error=result.get("error"), log=result.get("log") or "")


def do_record_grade(run_id: str, result) -> Grading | None:
    """The executor's result of a graded run (``recorder.record_grade``). Idempotent: a result
    already recorded is not recorded again."""
    with transaction.atomic():
        grading = Grading.objects.select_for_update().filter(run_id=run_id).first()
        if grading is None:
            log.warning("a grade for run %s, which no grading has; dropped", run_id)
            return None
        if grading.reported:
            return grading
        _land(grading, grade_from_result(result, grading.declared), reported=True)
    return grading


def do_settle_grading(grading_id: int) -> Grading | None:
    """The grading's run ended and no result came: graded with score 0, saying why. Nothing to do
    when a result landed, or while the run has not ended (its end settles it again)."""
    with transaction.atomic():
        grading = Grading.objects.select_for_update(of=("self",)).select_related("run").filter(pk=grading_id).first()
        if grading is None or grading.status == GRADED or not grading.run.is_finished:
            return grading
        run = grading.run
        grade = grade_from_result({"checks": [], "outcome": grades.OUTCOME_NOT_RUN, "student_status": run.status},
                                  grading.declared)
        grade["message"] = f"No result: the grading run ended {run.status.replace('_', ' ')}" + (
            f" ({run.message})" if run.message else "") + "; submit again"
        grade["error"] = (f"no grading result came back: the run ended {run.status}"
                          + (f": {run.message}" if run.message else ""))
        _land(grading, grade, reported=False)
    return grading


def do_settle_stale_gradings(older_than_s: float | None = None) -> list[int]:
    """Settle every grading whose run ended longer than the grace ago without a result (a settle
    task lost with a broker that restarted): a sweep for the watchdog's beat."""
    grace = grade_grace_s() if older_than_s is None else older_than_s
    cutoff = datetime.fromtimestamp(timezone.now().timestamp() - grace, tz=UTC)
    stale = Grading.objects.exclude(status=GRADED).filter(
        run__status__in=ev.TERMINAL_STATUSES, run__finished_at__lt=cutoff).values_list("pk", flat=True)
    settled = []
    for pk in list(stale[:1000]):
        do_settle_grading(pk)
        settled.append(pk)
    return settled


GRADE_FIELDS = ("score", "max_score", "checks", "message", "error", "log", "needs_regrade")


def _land(grading: Grading, grade: dict, *, reported: bool) -> None:
    """Write a grade on its grading, and on its submission when no newer grading landed there
    first. Inside the caller's transaction, with the grading's row locked."""
    now = timezone.now()
    for name in GRADE_FIELDS:
        setattr(grading, name, grade[name])
    grading.status, grading.reported, grading.finished_at = GRADED, reported, now
    grading.save(update_fields=[*GRADE_FIELDS, "status", "reported", "finished_at"])
    if grading.submission_id is None:
        return  # a validation: the instructor's assignment page reads it
    # Only the submission's row is locked: its assignment is read, and every grade of the assignment
    # would otherwise wait for every other (and for each new submission's insert).
    submission = Submission.objects.select_for_update(of=("self",)).select_related("assignment").get(
        pk=grading.submission_id)
    if submission.grading_id is None or grading.pk >= submission.grading_id:
        for name in GRADE_FIELDS:
            setattr(submission, name, grade[name])
        submission.status, submission.graded_at, submission.grading_id = GRADED, now, grading.pk
    submission.regrading = Grading.objects.filter(submission_id=submission.pk, pk__gt=submission.grading_id).exclude(
        status=GRADED).exists()
    submission.save(update_fields=[*GRADE_FIELDS, "status", "graded_at", "grading", "regrading"])
    assignment = submission.assignment
    items = [lambda: submission_item(submission)]
    if submission.grading_id == grading.pk and grading.needs_regrade:
        # The checks crashed: their traceback on every dashboard now, not at the next look.
        items.append(lambda: check_error_item(submission))
    if grading.regrade and grading.regrade == assignment.regrades:
        items.append(lambda: regrade_item(assignment))
    broadcast_on_commit(assignment.course_id, *items)

