"""An instructor's live view of a course: what GET /api/courses/<id>/dashboard answers and what
the websocket /ws/courses/<id>/ sends first, then the updates sent to the course's group.

    snapshot(course) = {
      "students":    [{id, username}],                       the course's students, by username
      "assignments": [{id, title, max_score, due}],
      "cells":       {"<student>:<assignment>": {status, score, max_score, late, submission,
                                                 needs_regrade, run, run_status, at}},
      "feed":        [the last 50 items, newest first],
      "errors":      [{exc_type, line, assignment, count, students, message}],   most common first
      "check_errors": [{assignment, submissions, checks, error, submission, student, at}],
      "histograms":  {"<assignment>": [10 counts of score/max_score: 0-10 %, ..., 90-100 %]},
    }

A cell is a student's latest activity on an assignment: ``status``/``score``/``late``/
``submission`` of their latest submission (status null when they have not submitted), ``run``
and ``run_status`` of their latest run (a free run or a submission's). Histograms count each
student's latest graded submission. Errors group the ``error`` events of the class's runs (free
runs and submissions' first runs) by assignment, exception type and line; ``count`` is the
runs that raised it, ``students`` how many students did. Check errors are the instructor's own:
per assignment whose checks crashed on a student's latest grade, how many such grades need a
regrade, and the newest one's crashed checks and traceback. Those grades are provisional: the
histograms leave them out.

Items (the feed, and the ``update`` messages of the websocket):

    {"kind": "run", run, student, assignment, submission (null for a free run), status,
     exc_type?, line?, at}
    {"kind": "submission", submission, student, assignment, status, score, max_score, late,
     regrading, needs_regrade, run, at}
    {"kind": "check_error", submission, student, assignment, checks, error, at}
                                                   a grade whose checks crashed (error: the traceback)
    {"kind": "regrade", assignment, regrade, queued, done, at}
    {"kind": "member", user, username, role, at}   joined, added, role changed; role null: removed
                                                   (an instructor who is one no more: socket closed)

Items go to instructors only: they carry scores whatever the assignment shows its students.

A snapshot's cost grows with the class (students × assignments), never with its history: cells
and histograms take each pair's latest row by the index (assignment, student, -created_at), one
lookup per pair; the feed reads the last FEED_LENGTH rows, and the common errors the errors of the
last RUNS_SCANNED free runs and submissions. Snapshots are limited per client
(DASHBOARD_RATE_LIMIT_PER_MINUTE: the API's and each socket's first message).
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.db.models import Max, OuterRef, Subquery
from django.utils import timezone
from django.utils.translation import gettext_lazy

from executor import events as ev
from playground.models import Run, RunEvent
from web.ratelimit import check_rate

from .models import GRADED, STUDENT, Assignment, Course, CourseRun, Grading, Membership, Submission

log = logging.getLogger("courses")

FEED_LENGTH = 50
ERRORS_LISTED = 20
# The most recent error events looked at for the common errors (a class's worth, many times over).
ERROR_EVENTS_SCANNED = 5000
# The latest free runs, and the latest submissions, whose errors are counted: a term's worth of a
# large class, not every run the course ever had.
RUNS_SCANNED = 2000
HISTOGRAM_BINS = 10
# Of a crashed check's traceback, what a dashboard item carries (the submission has all of it).
CHECK_ERROR_CHARS = 8000
SNAPSHOTS = gettext_lazy("dashboard snapshots")


def check_snapshot_rate(who: str) -> None:
    """A snapshot reads the whole class: a client (``web.clients.client_key``) may take
    DASHBOARD_RATE_LIMIT_PER_MINUTE a minute (a page open on it takes one, then updates)."""
    check_rate("dashboard", who, settings.DASHBOARD_RATE_LIMIT_PER_MINUTE, 60, SNAPSHOTS)


def group_name(course_id: int) -> str:
    return f"course-{course_id}"


def broadcast(course_id: int, item: dict) -> None:
    """Send an item to the course's dashboards. A channel layer that is away loses the update
    (the page's next snapshot has it), never the change that caused it."""
    try:
        async_to_sync(get_channel_layer().group_send)(group_name(course_id), {"type": "course.update", "item": item})
    except Exception:  # a dashboard update must not fail a recorded grade
        log.exception("could not send an update to course %s's dashboards", course_id)


def broadcast_on_commit(course_id: int, *items) -> None:
    """``broadcast`` each item (or what each callable returns then) once the transaction commits."""

    def send():
        for item in items:
            broadcast(course_id, item() if callable(item) else item)

    transaction.on_commit(send)


def _iso(dt):
    return dt.isoformat() if dt else None


def _error_fields(data: dict | None) -> dict:
    if not data:
        return {}
    fields = {"exc_type": str(data.get("exc_type") or "")[:200]}
    if isinstance(data.get("line"), int):
        fields["line"] = data["line"]
    return fields


def _last_errors(run_ids) -> dict[str, dict]:
    """The last error event of each run: {run id: data}."""
    found: dict[str, dict] = {}
    for run_id, data in RunEvent.objects.filter(run_id__in=list(run_ids), type=ev.ERROR).order_by(
            "run_id", "seq").values_list("run_id", "data"):
        found[str(run_id)] = data
    return found


def run_item(run: Run, student_id: int, assignment_id: int, submission_id: int | None = None,
             error: dict | None = None) -> dict:
    if error is None and run.status == ev.FAILED:
        error = _last_errors([run.pk]).get(str(run.pk))
    return {"kind": "run", "run": str(run.pk), "student": student_id, "assignment": assignment_id,
            "submission": submission_id, "status": run.status, **_error_fields(error),
            "at": _iso(run.finished_at or run.started_at or run.created_at)}


def submission_item(submission: Submission) -> dict:
    return {"kind": "submission", "submission": submission.pk, "student": submission.student_id,
            "assignment": submission.assignment_id, "status": submission.status, "score": submission.score,
            "max_score": submission.max_score, "late": submission.late, "regrading": submission.regrading,
            "needs_regrade": submission.needs_regrade, "run": str(submission.run_id) if submission.run_id else None,
            "at": _iso(submission.graded_at or submission.created_at)}


def check_error_item(submission: Submission) -> dict:
    """A grade whose checks crashed: which checks could not run and the traceback, for the
    instructor to fix the checks and regrade."""
    return {"kind": "check_error", "submission": submission.pk, "student": submission.student_id,
            "assignment": submission.assignment_id,
            "checks": [c.get("name") for c in submission.checks if isinstance(c, dict) and c.get("crashed")],
            "error": submission.error[:CHECK_ERROR_CHARS], "at": _iso(submission.graded_at or submission.created_at)}


def regrade_progress(assignment: Assignment) -> dict | None:
    """The last regrade's gradings: how many it queued, how many have landed."""
    if not assignment.regrades:
        return None
    gradings = Grading.objects.filter(submission__assignment=assignment, regrade=assignment.regrades)
    return {"regrade": assignment.regrades, "queued": gradings.count(),
            "done": gradings.filter(status=GRADED).count()}


def regrade_item(assignment: Assignment) -> dict:
    progress = regrade_progress(assignment) or {"regrade": 0, "queued": 0, "done": 0}
    return {"kind": "regrade", "assignment": assignment.pk, **progress, "at": timezone.now().isoformat()}


def _latest_per_pair(model, students, assignments, *related: str, **filters) -> list:
    """The newest row of ``model`` (Submission or CourseRun, with ``filters``) of each (student,
    assignment) pair: one query per assignment, each a lookup per student on the index
    (assignment, student, -created_at), so the cost is the class's size, not its history."""
    ids: list[int] = []
    for assignment in assignments:
        newest = (model.objects.filter(assignment_id=assignment.pk, student_id=OuterRef("user_id"), **filters)
                  .order_by("-created_at", "-id").values("id")[:1])
        ids += [pk for pk in students.annotate(latest=Subquery(newest)).values_list("latest", flat=True) if pk]
    rows = model.objects.filter(pk__in=ids)
    return list(rows.select_related(*related) if related else rows)


def snapshot(course: Course) -> dict:
    student_rows = Membership.objects.filter(course=course, role=STUDENT)
    students = list(student_rows.select_related("user").order_by("user__username"))
    student_ids = [m.user_id for m in students]
    assignments = list(course.assignments.order_by("due_at", "created_at"))
    submissions = Submission.objects.filter(assignment__course=course, student_id__in=student_ids)
    course_runs = CourseRun.objects.filter(assignment__course=course, student_id__in=student_ids)

    latest_submissions = _latest_per_pair(Submission, student_rows, assignments)
    latest_runs = {(r.student_id, r.assignment_id): r
                   for r in _latest_per_pair(CourseRun, student_rows, assignments, "run")}
    run_ids = [s.run_id for s in latest_submissions if s.run_id]
    submission_runs = {str(r.pk): r for r in Run.objects.filter(pk__in=run_ids)}

    cells: dict[str, dict] = {}
    for s in latest_submissions:
        run = submission_runs.get(str(s.run_id))
        cells[f"{s.student_id}:{s.assignment_id}"] = {
            "status": s.status, "score": s.score, "max_score": s.max_score, "late": s.late, "submission": s.pk,
            "regrading": s.regrading, "needs_regrade": s.needs_regrade, "run": str(s.run_id) if s.run_id else None,
            "run_status": run.status if run else None, "at": _iso(s.graded_at or s.created_at)}
    for (student_id, assignment_id), course_run in latest_runs.items():
        key = f"{student_id}:{assignment_id}"
        cell = cells.setdefault(key, {"status": None, "score": None, "max_score": None, "late": False,
                                      "submission": None, "regrading": False, "needs_regrade": False, "run": None,
                                      "run_status": None, "at": None})
        run_at = course_run.run.created_at
        submission_run = submission_runs.get(cell["run"]) if cell["run"] else None
        if submission_run is None or run_at > submission_run.created_at:
            cell["run"], cell["run_status"] = str(course_run.run_id), course_run.run.status
            at = course_run.run.finished_at or course_run.run.started_at or run_at
            if cell["at"] is None or at.isoformat() > cell["at"]:
                cell["at"] = at.isoformat()

    return {
        "course": {"id": course.pk, "title": course.title, "archived": course.archived},
        "students": [{"id": m.user_id, "username": m.user.username} for m in students],
        "assignments": [{"id": a.pk, "title": a.title, "max_score": a.max_score, "due": _iso(a.due_at)}
                        for a in assignments],
        "cells": cells,
        "feed": _feed(submissions, course_runs, student_rows),
        "errors": _common_errors(submissions, course_runs),
        "check_errors": check_errors(latest_submissions),
        "histograms": _histograms(student_rows, assignments),
    }


def assignment_check_errors(assignment: Assignment) -> dict | None:
    """``check_errors``' entry of one assignment, over its members' latest submissions (the
    instructor's assignment page), or None."""
    members = Membership.objects.filter(course_id=assignment.course_id).values_list("user_id", flat=True)
    latest = (Submission.objects.filter(assignment=assignment, student_id__in=members).values("student_id")
              .annotate(latest=Max("id")).values_list("latest", flat=True))
    found = check_errors(Submission.objects.filter(pk__in=list(latest), needs_regrade=True))
    return found[0] if found else None


def check_errors(latest_submissions) -> list[dict]:
    """Per assignment whose checks crashed on some of these (each student's latest) submissions:
    how many need a regrade, and the newest one's ``check_error_item``."""
    crashed: dict[int, list[Submission]] = defaultdict(list)
    for s in latest_submissions:
        if s.needs_regrade:
            crashed[s.assignment_id].append(s)
    found = []
    for group in crashed.values():
        newest = max(group, key=lambda s: (s.graded_at or s.created_at, s.pk))
        found.append({**check_error_item(newest), "submissions": len(group)})
    return sorted(found, key=lambda e: e["at"] or "", reverse=True)


def _feed(submissions, course_runs, student_rows) -> list[dict]:
    """The feed as the page would have seen it live, rebuilt from what is stored: each submission
    ("submitted: 3 / 4") with its run ("submission ran: failed"), each free run, and each student's
    joining; the newest FEED_LENGTH, newest first."""
    items = []
    latest = list(submissions.select_related("run").order_by("-id")[:FEED_LENGTH])
    runs = list(course_runs.select_related("run").order_by("-id")[:FEED_LENGTH])
    errors = _last_errors([r.run_id for r in runs if r.run.status == ev.FAILED]
                          + [s.run_id for s in latest if s.run_id and s.run.status == ev.FAILED])
    for s in latest:
        at = s.graded_at or s.created_at
        items.append((at, 1, submission_item(s)))
        if s.run_id:
            # Just below its submission, whenever it ended: the executor sends the grade before it
            # logs the run's end, so the run's end may be stored a moment after the grade and carry
            # a later time; the page saw the grade as the news either way.
            items.append((at, 0, run_item(s.run, s.student_id, s.assignment_id, s.pk,
                                          error=errors.get(str(s.run_id), {}))))
    for r in runs:
        items.append((r.run.finished_at or r.run.started_at or r.run.created_at, 0,
                      run_item(r.run, r.student_id, r.assignment_id, error=errors.get(str(r.run_id), {}))))
    for m in student_rows.select_related("user").order_by("-joined_at")[:FEED_LENGTH]:
        items.append((m.joined_at, 0, {"kind": "member", "user": m.user_id, "username": m.user.username,
                                       "role": m.role, "at": _iso(m.joined_at)}))
    # Newest first; at one instant a submission's grade above the run it came from.
    items.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [item for _, _, item in items[:FEED_LENGTH]]


def _common_errors(submissions, course_runs) -> list[dict]:
    """Over the last RUNS_SCANNED free runs and submissions of the class."""
    owners: dict[str, tuple[int, int]] = {}
    for run_id, student_id, assignment_id in course_runs.order_by("-id").values_list(
            "run_id", "student_id", "assignment_id")[:RUNS_SCANNED]:
        owners[str(run_id)] = (student_id, assignment_id)
    for run_id, student_id, assignment_id in submissions.filter(run__isnull=False).order_by("-id").values_list(
            "run_id", "student_id", "assignment_id")[:RUNS_SCANNED]:
        owners[str(run_id)] = (student_id, assignment_id)
    if not owners:
        return []
    counts: Counter = Counter()
    students: dict[tuple, set] = defaultdict(set)
    example: dict[tuple, str] = {}
    seen_runs: set[tuple] = set()
    events = (RunEvent.objects.filter(run_id__in=list(owners), type=ev.ERROR).order_by("-id")
              .values_list("run_id", "data")[:ERROR_EVENTS_SCANNED])
    for run_id, data in events:
        student_id, assignment_id = owners[str(run_id)]
        line = data.get("line") if isinstance(data.get("line"), int) else None
        key = (assignment_id, str(data.get("exc_type") or "")[:200], line)
        if (key, run_id) in seen_runs:
            continue
        seen_runs.add((key, run_id))
        counts[key] += 1
        students[key].add(student_id)
        example.setdefault(key, str(data.get("message") or "")[:300])
    return [{"assignment": k[0], "exc_type": k[1], "line": k[2], "count": n, "students": len(students[k]),
             "message": example[k]} for k, n in counts.most_common(ERRORS_LISTED)]


def _histograms(students, assignments) -> dict[str, list[int]]:
    histograms = {str(a.pk): [0] * HISTOGRAM_BINS for a in assignments}
    for s in _latest_per_pair(Submission, students, assignments, status=GRADED):
        if not s.max_score or s.score is None or s.needs_regrade:
            continue
        ratio = min(max(s.score / s.max_score, 0.0), 1.0)
        histograms.setdefault(str(s.assignment_id), [0] * HISTOGRAM_BINS)[
            min(int(ratio * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
    return histograms
