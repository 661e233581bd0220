"""JSON shapes of courses in the public API. What a student may see is decided here, by role:
an assignment's ``checks`` and a submission's ``error`` and ``log`` (which may quote the checks)
appear only in the instructor's shapes, and a student's results are withheld until the due date
when the assignment says so."""

from __future__ import annotations

from django.utils import timezone

from snippets import markdown

from .dashboard import regrade_progress
from .models import INSTRUCTOR, Assignment, Course, Invitation, Membership, Submission

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
        detail["checks_version"] = assignment.checks_version
        detail["regrade"] = regrade_progress(assignment)
    return detail


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
        "checks": None if hidden else [
            {k: c.get(k) for k in ("name", "passed", "points", "message")} for c in submission.checks],
        "message": None if hidden else submission.message,
    }
    if role == INSTRUCTOR:
        detail["error"] = submission.error
        detail["log"] = submission.log
        detail["checks_version"] = submission.grading.checks_version if submission.grading_id else None
        detail["gradings"] = [
            {"id": g.pk, "run": str(g.run_id), "status": g.status, "score": g.score, "max_score": g.max_score,
             "checks_version": g.checks_version, "regrade": g.regrade, "reported": g.reported,
             "created_at": _iso(g.created_at), "finished_at": _iso(g.finished_at)}
            for g in submission.gradings.order_by("id")]
    return detail
