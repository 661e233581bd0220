"""A submission's grading: the statuses it goes through, and its result landing.

    do_submit / do_regrade ─▶ Grading(queued) + a graded Run, queued on commit (courses.actions)
    the run starts (run_status_changed "running") ─▶ grading, and the submission if it has no grade yet
    recorder.record_grade(run_id, result)          ─▶ graded: on the grading, and on the submission
                                                      unless a newer grading of it landed first
    the run ends and no result came within COURSES_GRADE_GRACE_S (cancelled before it started,
    lost by the watchdog: nothing in the executor sent one) ─▶ graded with score 0 and a message
    saying why (recorder.settle_grading); a real result that still arrives replaces it.

So a submission always ends "graded". Its score is the sum of the points of the checks that
passed, out of the points of every check reported or declared by the checks' source
(``courses.checks.declared_checks``): a check the code never reached counts as failed.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from executor import events as ev
from playground.actions.runs import do_start_run

from . import checks as checks_source
from .dashboard import broadcast_on_commit, regrade_item, submission_item
from .models import GRADED, GRADING, QUEUED, Assignment, Grading, Submission

log = logging.getLogger("courses")

# What a result may hold (it comes from the sandbox's side of the executor).
RESULT_CHECKS_MAX = 500
CHECK_NAME_MAX = 200
CHECK_MESSAGE_MAX = 2000
ERROR_MAX = 20_000
LOG_MAX = 64 * 1024


def grade_grace_s() -> float:
    """How long after a graded run ended its result may still be on its way (the executor sends it
    before the run's last events, but the recorder may take them in either order)."""
    return float(settings.COURSES_GRADE_GRACE_S)


def queue_grading(submission: Submission, assignment: Assignment, regrade: int = 0) -> Grading:
    """A graded run of the submission's code with the assignment's checks as they are now. The
    checks go to the executor in the task's message only (``do_start_run(grade=...)``)."""
    run = do_start_run(submission.code, assignment.device, owner=None, limits=assignment.limits,
                       grade={"checks": assignment.checks})
    return Grading.objects.create(submission=submission, run=run, checks_version=assignment.checks_version,
                                  regrade=regrade, declared=checks_source.declared_checks(assignment.checks))


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


def _finite(value, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return float(value)


def _string(value, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    value = value.replace("\x00", "")
    return value if len(value) <= limit else value[: limit - 1] + "…"


# How a student's code ended, in words ("Your code ...").
ENDED = {ev.FAILED: "raised an exception", ev.TIMED_OUT: "ran out of time", ev.LIMIT_EXCEEDED: "went over a limit",
         ev.CANCELLED: "was cancelled", ev.LOST: "was lost (its executor stopped responding)"}


def _status_words(status: str) -> str:
    return ENDED.get(status, f"ended {status.replace('_', ' ')}")


def grade_from_result(result, declared: list[dict]) -> dict:
    """The grade a result gives: its reported checks, then each declared check it did not report
    (the code ended before it ran) as failed; the score is the sum of the passed checks' points,
    out of all of theirs. ``message`` is for the student; ``error`` and ``log`` for instructors."""
    result = result if isinstance(result, dict) else {}
    checks = []
    for c in (result.get("checks") if isinstance(result.get("checks"), list) else [])[:RESULT_CHECKS_MAX]:
        if not isinstance(c, dict):
            continue
        checks.append({
            "name": _string(c.get("name"), CHECK_NAME_MAX) or "(unnamed)",
            "passed": c.get("passed") is True,
            "points": max(_finite(c.get("points"), 1.0), 0.0),
            "message": _string(c.get("message"), CHECK_MESSAGE_MAX),
        })
    student_status = result.get("student_status") if isinstance(result.get("student_status"), str) else None
    reported = {c["name"] for c in checks}
    missing = [d for d in declared if d["name"] not in reported]
    ended = student_status not in (None, ev.SUCCEEDED)
    for d in missing:
        why = f"not reached: your code {_status_words(student_status)}" if ended else "not reached"
        checks.append({"name": d["name"], "passed": False, "points": float(d["points"]), "message": why})
    message = ""
    if ended:
        message = f"Your code {_status_words(student_status)}" + (
            "; the checks it did not reach count as failed" if missing else "")
    elif missing and checks and len(missing) == len(checks):
        message = "The checks did not run"
    score = sum(c["points"] for c in checks if c["passed"])
    max_score = sum(c["points"] for c in checks)
    return {"score": round(score, 6), "max_score": round(max_score, 6), "checks": checks, "message": message,
            "error": _string(result.get("error"), ERROR_MAX), "log": _string(result.get("log"), LOG_MAX)}


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
        grade = grade_from_result({"checks": [], "student_status": run.status}, grading.declared)
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


def _land(grading: Grading, grade: dict, *, reported: bool) -> None:
    """Write a grade on its grading, and on its submission when no newer grading landed there
    first. Inside the caller's transaction, with the grading's row locked."""
    now = timezone.now()
    for name in ("score", "max_score", "checks", "message", "error", "log"):
        setattr(grading, name, grade[name])
    grading.status, grading.reported, grading.finished_at = GRADED, reported, now
    grading.save(update_fields=["score", "max_score", "checks", "message", "error", "log", "status", "reported",
                                "finished_at"])
    # Only the submission's row is locked: its assignment is read, and every grade of the assignment
    # would otherwise wait for every other (and for each new submission's insert).
    submission = Submission.objects.select_for_update(of=("self",)).select_related("assignment").get(
        pk=grading.submission_id)
    if submission.grading_id is None or grading.pk >= submission.grading_id:
        for name in ("score", "max_score", "checks", "message", "error", "log"):
            setattr(submission, name, grade[name])
        submission.status, submission.graded_at, submission.grading_id = GRADED, now, grading.pk
    submission.regrading = Grading.objects.filter(submission_id=submission.pk, pk__gt=submission.grading_id).exclude(
        status=GRADED).exists()
    submission.save(update_fields=["score", "max_score", "checks", "message", "error", "log", "status", "graded_at",
                                   "grading", "regrading"])
    assignment = submission.assignment
    items = [lambda: submission_item(submission)]
    if grading.regrade and grading.regrade == assignment.regrades:
        items.append(lambda: regrade_item(assignment))
    broadcast_on_commit(assignment.course_id, *items)


def do_grading_run_ended(grading: Grading) -> None:
    """The grading's run ended: its result is on its way (the executor sends it first) or will
    never come. Settle it after the grace unless it lands meanwhile."""
    if grading.status == GRADED:
        return
    grace = grade_grace_s()
    if grace <= 0:
        do_settle_grading(grading.pk)
        return
    from .tasks import settle_grading

    settle_grading.apply_async(args=[grading.pk], countdown=grace)
