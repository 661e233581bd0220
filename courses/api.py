"""The courses API. Each view: who is asking (``web.api.api``: a token or the session),
what they may see (``courses.access``: None is a 404, for strangers and for what a role may not
use alike), one action, the response."""

from __future__ import annotations

import csv
import io

from django.http import Http404, HttpResponse, JsonResponse
from django.utils.translation import gettext as _

from playground.serializers import run_summary
from web.api import api, parse_json, query_int
from web.clients import request_client_key
from web.errors import ActionError

from .actions.assignments import check_create_assignment, check_update_assignment
from .actions.courses import check_archive_course, check_create_course
from .actions.members import (
    check_add_member, check_answer_invitation, check_join_course, check_lift_ban, check_remove_member,
    pending_invitations,
)
from .actions.submissions import check_regrade, check_start_course_run, check_submit
from .access import (
    access_assignment_for_user, access_course_for_user, access_submission_for_user, courses_for_user,
)
from .dashboard import check_snapshot_rate, snapshot
from .models import GRADED, INSTRUCTOR, STUDENT, Membership, Submission
from .serializers import (
    assignment_detail, course_created, course_detail, course_summary, invitation_summary, submission_detail,
    submission_summary,
)

SUBMISSIONS_PAGE = 100
NEEDS_REGRADE = object()  # a grades.csv cell whose score is not final


def _signed_in(request):
    if not request.user.is_authenticated:
        raise ActionError(_("sign in (a session, or Authorization: Bearer <token>) to use courses"), status=401)
    return request.user


def _course(request, course_id, *, instructor: bool = False) -> Membership:
    membership = access_course_for_user(course_id, request.user)
    if membership is None or (instructor and membership.role != INSTRUCTOR):
        raise Http404(_("no such course"))
    return membership


def _assignment(request, assignment_id, *, instructor: bool = False):
    found = access_assignment_for_user(assignment_id, request.user)
    if found is None or (instructor and found[1] != INSTRUCTOR):
        raise Http404(_("no such assignment"))
    return found


# Courses ------------------------------------------------------------------------------------------

@api("GET", "POST")
def api_courses(request):
    user = _signed_in(request)
    if request.method == "POST":
        course = check_create_course(parse_json(request), user=user)
        return JsonResponse(course_created(course), status=201)
    roles = dict(Membership.objects.filter(user=user).values_list("course_id", "role"))
    return JsonResponse({"courses": [course_summary(c, roles[c.pk]) for c in courses_for_user(user)]})


@api("POST")
def api_course_join(request):
    user = _signed_in(request)
    membership = check_join_course(parse_json(request), user=user)
    return JsonResponse(course_summary(membership.course, membership.role))


@api("GET")
def api_course(request, course_id):
    return JsonResponse(course_detail(_course(request, course_id)))


@api("POST")
def api_course_members(request, course_id):
    """202 and an invitation, the same whether or not anyone has the username; 200 when a member's
    role changed at once."""
    membership = _course(request, course_id, instructor=True)
    answer = check_add_member(membership, parse_json(request))
    return JsonResponse(answer, status=202 if answer["status"] == "invited" else 200)


@api("DELETE")
def api_course_ban(request, course_id, user_id):
    check_lift_ban(_course(request, course_id, instructor=True).course, user_id)
    return HttpResponse(status=204)


@api("GET")
def api_me_invitations(request):
    user = _signed_in(request)
    return JsonResponse({"invitations": [invitation_summary(i) for i in pending_invitations(user)]})


@api("POST")
def api_invitation_accept(request, invitation_id):
    membership = check_answer_invitation(invitation_id, _signed_in(request), accept=True)
    return JsonResponse(course_summary(membership.course, membership.role))


@api("POST")
def api_invitation_decline(request, invitation_id):
    check_answer_invitation(invitation_id, _signed_in(request), accept=False)
    return HttpResponse(status=204)


@api("DELETE")
def api_course_member(request, course_id, user_id):
    check_remove_member(_course(request, course_id), user_id)
    return HttpResponse(status=204)


@api("POST")
def api_course_archive(request, course_id):
    membership = _course(request, course_id, instructor=True)
    course = check_archive_course(membership.course, parse_json(request))
    return JsonResponse(course_summary(course, membership.role))


@api("POST")
def api_course_assignments(request, course_id):
    membership = _course(request, course_id, instructor=True)
    assignment = check_create_assignment(membership.course, parse_json(request), user=request.user)
    return JsonResponse(assignment_detail(assignment, INSTRUCTOR), status=201)


@api("GET")
def api_course_dashboard(request, course_id):
    course = _course(request, course_id, instructor=True).course
    check_snapshot_rate(request_client_key(request))
    return JsonResponse(snapshot(course))


@api("GET")
def api_course_grades(request, course_id):
    """One row per student (username, name and email, for a roster), one column per assignment:
    the score of the student's latest graded submission (empty: none graded; "needs regrade": its
    checks crashed, so it has no final score yet), then the total of the final ones. The first
    three columns' names are field names, as a script reads them; the others, and "needs regrade",
    are in the language of whoever downloads it."""
    course = _course(request, course_id, instructor=True).course
    assignments = list(course.assignments.order_by("due_at", "created_at"))
    students = list(Membership.objects.filter(course=course, role=STUDENT).select_related("user")
                    .order_by("user__username"))
    scores: dict[tuple[int, int], object] = {}
    for student_id, assignment_id, score, needs_regrade in (Submission.objects.filter(
            assignment__course=course, status=GRADED).order_by("id")
            .values_list("student_id", "assignment_id", "score", "needs_regrade")):
        # ids grow with time: the last is the latest
        scores[(student_id, assignment_id)] = NEEDS_REGRADE if needs_regrade else score
    out = io.StringIO()
    writer = csv.writer(out)
    needs_regrade = _("needs regrade")
    writer.writerow(["username", "name", "email",
                     *[_cell(_("%(title)s (latest graded, of %(points)s)")
                             % {"title": a.title, "points": _number(a.max_score)}) for a in assignments],
                     _("total (of %(points)s)") % {"points": _number(sum(a.max_score for a in assignments))}])
    for m in students:
        row = [scores.get((m.user_id, a.pk)) for a in assignments]
        final = [s for s in row if s is not None and s is not NEEDS_REGRADE]
        writer.writerow([_cell(m.user.username), _cell(m.user.get_full_name()), _cell(m.user.email),
                         *["" if s is None else needs_regrade if s is NEEDS_REGRADE else _number(s) for s in row],
                         _number(sum(final))])
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="course-{course.pk}-grades.csv"'
    return response


def _number(value: float) -> str:
    return f"{value:g}"


def _cell(text: str) -> str:
    """A spreadsheet takes a cell that starts with = + - @ for a formula: quote it as text."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


# Assignments --------------------------------------------------------------------------------------

@api("GET", "PATCH")
def api_assignment(request, assignment_id):
    if request.method == "PATCH":
        assignment, role = _assignment(request, assignment_id, instructor=True)
        assignment = check_update_assignment(assignment, parse_json(request), user=request.user)
        return JsonResponse(assignment_detail(assignment, role))
    assignment, role = _assignment(request, assignment_id)
    return JsonResponse(assignment_detail(assignment, role))


@api("POST")
def api_assignment_runs(request, assignment_id):
    assignment, _role = _assignment(request, assignment_id)
    run = check_start_course_run(assignment, parse_json(request), user=request.user)
    return JsonResponse(run_summary(run), status=201)


@api("GET", "POST")
def api_assignment_submissions(request, assignment_id):
    assignment, role = _assignment(request, assignment_id)
    if request.method == "POST":
        submission = check_submit(assignment, parse_json(request), user=request.user)
        return JsonResponse({"id": submission.pk, "run": str(submission.run_id),
                             "ws": f"/ws/runs/{submission.run_id}/", "status": submission.status,
                             "late": submission.late}, status=201)
    submissions = Submission.objects.filter(assignment=assignment).select_related("student", "assignment")
    if role != INSTRUCTOR:
        submissions = submissions.filter(student=request.user)
    elif request.GET.get("student"):
        submissions = submissions.filter(student_id=query_int(request, "student", 0, minimum=1))
    page = query_int(request, "page", 1, minimum=1)
    start = (page - 1) * SUBMISSIONS_PAGE
    found = list(submissions.order_by("-created_at", "-id")[start:start + SUBMISSIONS_PAGE + 1])
    return JsonResponse({
        "submissions": [submission_summary(s, role) for s in found[:SUBMISSIONS_PAGE]],
        "next_page": page + 1 if len(found) > SUBMISSIONS_PAGE else None,
    })


@api("POST")
def api_assignment_regrade(request, assignment_id):
    assignment, _role = _assignment(request, assignment_id, instructor=True)
    queued = check_regrade(assignment, user=request.user)
    assignment.refresh_from_db(fields=["regrades"])
    return JsonResponse({"queued": queued, "regrade": assignment.regrades}, status=202)


# Submissions --------------------------------------------------------------------------------------

@api("GET")
def api_submission(request, submission_id):
    found = access_submission_for_user(submission_id, request.user)
    if found is None:
        raise Http404(_("no such submission"))
    submission, role = found
    return JsonResponse(submission_detail(submission, role))
