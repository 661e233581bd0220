"""JSON shapes of courses in the public API. What a student may see is decided here, by role:
an assignment's ``checks``, ``reference_solution`` and ``validation`` and a submission's
``error`` and ``log`` (which may quote the checks) appear only in the instructor's shapes, and a
student's results are withheld until the due date when the assignment says so. A grade's
messages are stored in English and shown in the reader's language (``courses.feedback``)."""

from __future__ import annotations

from django.utils import timezone

from snippets import markdown

from .dashboard import assignment_check_errors, regrade_progress
from .feedback import shown
from .models import (
    GRADED, INSTRUCTOR, REFERENCE, VALIDATION_KINDS, Assignment, Course, Grading, Invitation, Membership, Submission,
)

RESULTS_SHOWN = "shown"
RESULTS_AFTER_DUE = "after_due"


def _iso(dt):
    return dt.isoformat() if dt else None


def course_summary(course: Course, role: str) -> dict:
    return {"id": course.pk, "title": course.title, "role": role, "archived": course.archived,
            "url": course.get_absolute_url()}


def course_created(course: Course) -> dict:
    return {**course_summary(course, INSTRUCTOR), "join_code": course.join_code, "join_url": course.join_url}


def course_detail(membership: Membership) -> dict:
    course, role = membership.course, membership.role
    assignments = list(course.assignments.order_by("due_at", "created_at"))
    latest = {}
    for s in Submission.objects.filter(assignment__in=assignments, student_id=membership.user_id).order_by("id"):
        latest[s.assignment_id] = s  # the last one wins
    detail = {
        **course_summary(course, role),
        "created_at": _iso(course.created_at),
        "archived_at": _iso(course.archived_at),
        "assignments": [assignment_summary(a, role, latest.get(a.pk)) for a in assignments],
    }
    if role == INSTRUCTOR:
        detail["join_code"] = course.join_code
        detail["join_url"] = course.join_url
        detail["members"] = [{"id": m.user_id, "username": m.user.username, "role": m.role}
                             for m in course.memberships.select_related("user").order_by("role", "user__username")]
        # Pending: the same for a name no one has (courses.models.Invitation).
        detail["invitations"] = [{"username": i.username, "role": i.role, "expires_at": _iso(i.expires_at)}
                                 for i in course.invitations.filter(expires_at__gt=timezone.now())
                                 .order_by("username")]
        detail["removed"] = [{"id": b.user_id, "username": b.user.username, "at": _iso(b.created_at)}
                             for b in course.bans.select_related("user").order_by("user__username")]
    return detail


def invitation_summary(invitation: Invitation) -> dict:
    """An invitation as its invitee sees it."""
    return {"id": invitation.pk, "course": {"id": invitation.course_id, "title": invitation.course.title},
            "role": invitation.role, "invited_by": invitation.invited_by.username if invitation.invited_by else None,
            "created_at": _iso(invitation.created_at), "expires_at": _iso(invitation.expires_at),
            "accept": f"/api/invitations/{invitation.pk}/accept",
            "decline": f"/api/invitations/{invitation.pk}/decline"}


def assignment_summary(assignment: Assignment, role: str, mine: Submission | None = None) -> dict:
    """An assignment in its course's list; ``mine``: the viewer's latest submission."""
    return {
        "id": assignment.pk,
        "title": assignment.title,
        "url": assignment.get_absolute_url(),
        "device": assignment.device,
        "runtime": assignment.runtime,
        "due": _iso(assignment.due_at),
        "late": assignment.is_past_due(),
        "results_before_due": assignment.results_before_due,
        "max_score": assignment.max_score,
        "mine": submission_summary(mine, role) if mine is not None else None,
    }


def assignment_detail(assignment: Assignment, role: str) -> dict:
    detail = {
        "id": assignment.pk,
        "course": assignment.course_id,
        "course_title": assignment.course.title,
        "archived": assignment.course.archived,
        "role": role,
        "title": assignment.title,
        "url": assignment.get_absolute_url(),
        "description": assignment.description,
        "description_html": markdown.render(assignment.description),
        "starter_code": assignment.starter_code,
        "device": assignment.device,
        "runtime": assignment.runtime,
        "limits": assignment.limits,
        "due": _iso(assignment.due_at),
        "results_before_due": assignment.results_before_due,
        "late": assignment.is_past_due(),
        "max_score": assignment.max_score,
        "created_at": _iso(assignment.created_at),
        "updated_at": _iso(assignment.updated_at),
    }
    if role == INSTRUCTOR:
        detail["checks"] = assignment.checks
        detail["reference_solution"] = assignment.reference_solution
        detail["checks_version"] = assignment.checks_version
        detail["regrade"] = regrade_progress(assignment)
        detail["validation"] = validation_summary(assignment)
        detail["check_errors"] = assignment_check_errors(assignment)
        # Whether a regrade would have anything to grade (the page offers one only then).
        detail["submissions"] = assignment.submissions.count()
    return detail


def check_results(checks) -> list[dict]:
    """A grade's checks as the API shows them: ``crashed``, the check's own code raised."""
    return [{"name": c.get("name"), "passed": c.get("passed"), "points": c.get("points"),
             "message": shown(c.get("message")), "crashed": c.get("crashed") is True}
            for c in checks if isinstance(c, dict)]


def validation_summary(assignment: Assignment) -> dict | None:
    """The checks on the reference solution and on the starter code (instructors only): the
    newest validation, or, when the last one was not queued, why (``skipped``); None when there
    has been none. A graded run is ``ok`` when it went as it should: the reference with full
    marks, the starter code without."""
    runs = {g.kind: g for g in Grading.objects.filter(assignment=assignment).order_by("id")}
    if not runs and not assignment.validation_skipped:
        return None
    return {**{kind: _validation_run(runs.get(kind), kind) for kind in VALIDATION_KINDS},
            "skipped": assignment.validation_skipped or None}


def _validation_run(grading: Grading | None, kind: str) -> dict | None:
    if grading is None:
        return None
    graded = grading.status == GRADED
    full = graded and not grading.needs_regrade and grading.score is not None and grading.max_score is not None \
        and grading.score >= grading.max_score - 1e-9
    return {
        "status": grading.status, "score": grading.score if graded else None,
        "max_score": grading.max_score if graded else None, "full_marks": full if graded else None,
        # A check that crashed wants the instructor's eye on either, whatever the score.
        "ok": None if not graded else (not grading.needs_regrade and (full if kind == REFERENCE else not full)),
        "needs_regrade": grading.needs_regrade, "checks": check_results(grading.checks),
        "message": shown(grading.message), "error": grading.error, "log": grading.log,
        "checks_version": grading.checks_version,
        "run": str(grading.run_id), "created_at": _iso(grading.created_at), "finished_at": _iso(grading.finished_at),
    }


def _results_hidden(submission: Submission, role: str) -> bool:
    return role != INSTRUCTOR and submission.assignment.results_hidden_from_students()


def submission_summary(submission: Submission, role: str) -> dict:
    hidden = _results_hidden(submission, role)
    return {
        "id": submission.pk,
        "assignment": submission.assignment_id,
        "student": {"id": submission.student_id, "username": submission.student.username},
        "status": submission.status,
        "score": None if hidden else submission.score,
        "max_score": None if hidden else submission.max_score,
        "results": RESULTS_AFTER_DUE if hidden else RESULTS_SHOWN,
        "late": submission.late,
        "regrading": submission.regrading,
        # A check crashed (the checks' fault): the score is provisional until a regrade.
        "needs_regrade": None if hidden else submission.needs_regrade,
        "run": str(submission.run_id) if submission.run_id else None,
        "ws": f"/ws/runs/{submission.run_id}/" if submission.run_id else None,
        "created_at": _iso(submission.created_at),
        "graded_at": _iso(submission.graded_at),
    }


def submission_detail(submission: Submission, role: str) -> dict:
    hidden = _results_hidden(submission, role)
    detail = {
        **submission_summary(submission, role),
        "code": submission.code,
        "checks": None if hidden else check_results(submission.checks),
        "message": None if hidden else shown(submission.message),
    }
    if role == INSTRUCTOR:
        detail["error"] = submission.error
        detail["log"] = submission.log
        detail["checks_version"] = submission.grading.checks_version if submission.grading_id else None
        detail["gradings"] = [
            {"id": g.pk, "run": str(g.run_id), "status": g.status, "score": g.score, "max_score": g.max_score,
             "needs_regrade": g.needs_regrade, "checks_version": g.checks_version, "regrade": g.regrade,
             "reported": g.reported,
             "created_at": _iso(g.created_at), "finished_at": _iso(g.finished_at)}
            for g in submission.gradings.order_by("id")]
    return detail
