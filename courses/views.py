"""The course pages: one's courses, the join link (and signing up through it: ``accounts``' form,
counted against the course's bound), a course, an assignment (the editor) and a course's live
dashboard. A page checks access (``courses.access``) and renders; what changes something goes
through the JSON API from the page's script.

Signed out, every course page but the checks guide, the join link and its sign-up and sign-in
sends to the sign-in page and back: it says nothing about whether the course exists (the join
link names its course; codes that name none count against the address, as joining counts
against an account). Signed in, a
course one is not a member of is "not found" (404), and so is a dashboard to a student. An
assignment's hidden checks are never rendered into any page: an instructor's page asks the API
for them.
"""

from __future__ import annotations

import redis.exceptions
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.db.models import Count, F
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.actions import check_sign_up
from accounts.forms import SignUpForm, sentence
from accounts.views import LoginView
from playground import devices, runtimes
from snippets import markdown
from web.clients import request_client_key
from web.errors import ActionError

from .access import access_assignment_for_user, access_course_for_user, courses_for_user
from .actions.members import (
    check_answer_invitation, check_join_link, check_join_rate, check_lift_ban, check_not_banned, course_of_join_link,
    normalize_join_code, pending_invitations, sign_up_bucket,
)
from .models import GRADED, INSTRUCTOR, JOIN_CODE_ALPHABET, STUDENT, Assignment, Ban, Course, Membership, Submission


def page(view):
    """A course page: GET only, never cached, the CSRF cookie set (its script posts to the API),
    and the sign-in page first for anyone signed out."""

    @never_cache
    @require_GET
    @ensure_csrf_cookie
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    wrapper.__name__ = view.__name__
    wrapper.__doc__ = view.__doc__
    return wrapper


def _membership_or_404(request, course_id) -> Membership:
    membership = access_course_for_user(course_id, request.user)
    if membership is None:
        raise Http404(_("no such course"))
    return membership


def _unsandboxed(device: str) -> bool:
    try:
        return devices.unsandboxed([devices.describe(device)])
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return False  # Redis away: the page still opens; a run will say what is wrong


def _device_choices(current: str) -> list[str]:
    try:
        return devices.choices(current)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return [*settings.RUN_DEVICE_KINDS, *([current] if current not in settings.RUN_DEVICE_KINDS else [])]


# /courses/ ---------------------------------------------------------------------------------------

@page
def courses_page(request):
    """The person's courses (teaching and taking), a form to create one and one to join one."""
    courses = list(courses_for_user(request.user))
    ids = [c.pk for c in courses]
    roles = dict(Membership.objects.filter(user=request.user, course_id__in=ids).values_list("course_id", "role"))
    students = dict(Membership.objects.filter(course_id__in=ids, role=STUDENT).values("course_id")
                    .annotate(n=Count("id")).values_list("course_id", "n"))
    assignments = dict(Assignment.objects.filter(course_id__in=ids).values("course_id")
                       .annotate(n=Count("id")).values_list("course_id", "n"))
    rows = [{"course": c, "role": roles.get(c.pk, STUDENT), "students": students.get(c.pk, 0),
             "assignments": assignments.get(c.pk, 0)} for c in courses]
    rows.sort(key=lambda r: r["course"].archived)  # stable: newest first within active, then archived
    return render(request, "courses/courses.html", {"nav": "courses", "rows": rows,
                                                    "invitations": list(pending_invitations(request.user))})


# /courses/invitations/<id>/accept, /decline, /courses/<id>/removed/<user>/readmit ---------------

def form_post(view):
    """A button's form on a course page (works without the page's script): POST only, CSRF
    checked by the middleware, signed in; an ActionError comes back as a message."""

    @require_POST
    @login_required
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except ActionError as exc:
            if exc.status == 404:
                raise Http404(exc.message) from None
            messages.error(request, sentence(exc.message))
            return redirect("courses")

    wrapper.__name__ = view.__name__
    wrapper.__doc__ = view.__doc__
    return wrapper


@form_post
def invitation_accept(request, invitation_id):
    membership = check_answer_invitation(invitation_id, request.user, accept=True)
    messages.success(request, _("You joined %(title)s.") % {"title": membership.course.title})
    return redirect(membership.course.get_absolute_url())


@form_post
def invitation_decline(request, invitation_id):
    check_answer_invitation(invitation_id, request.user, accept=False)
    messages.success(request, _("Invitation declined."))
    return redirect("courses")


@form_post
def readmit(request, course_id, user_id):
    """An instructor lets someone they removed join again."""
    membership = _membership_or_404(request, course_id)
    if membership.role != INSTRUCTOR:
        raise Http404(_("no such course"))
    check_lift_ban(membership.course, user_id)
    messages.success(request, _("They may join again with the code or the link."))
    return redirect(membership.course.get_absolute_url())


# /courses/checks ---------------------------------------------------------------------------------

# The guide's twin in another language, beside it in docs/.
CHECKS_GUIDES = {"zh-hans": "CHECKS.zh-CN.md"}


@never_cache
@require_GET
def checks_guide(request):
    """docs/CHECKS.md, what hidden checks can rely on, as the page the authoring screen links to
    (no raw HTML passes; its tables render); its twin in the page's language when there is one,
    else the English, marked as such. Public: someone deciding whether to teach with the site,
    or a TA without an account yet, reads how grading works before signing in."""
    from markdown_it import MarkdownIt

    docs = settings.BASE_DIR / "docs"
    twin = CHECKS_GUIDES.get(translation.get_language())
    path = docs / twin if twin is not None and (docs / twin).is_file() else docs / "CHECKS.md"
    guide = MarkdownIt("commonmark", {"html": False}).enable("table").render(path.read_text(encoding="utf-8"))
    return render(request, "courses/checks.html", {
        "nav": "courses", "guide_html": guide, "guide_in_english": twin is not None and path.name == "CHECKS.md",
    })


# /courses/join/<code> ----------------------------------------------------------------------------

@never_cache
@require_GET
@ensure_csrf_cookie
def join_page(request, code):
    """The link a course's instructor hands out: the course's name and one button. Signed in,
    looking a code up counts against the same hourly limit as joining, so codes cannot be tried
    in bulk here. Signed out, the page names the course too, with the ways to sign in (or up) and
    come back: a student who follows the link knows what they are signing in for. A whole room
    behind one address opens the link signed out, so there only codes that name no course count
    (``check_join_link``)."""
    code = normalize_join_code(code)
    context = {"nav": "courses", "code": code, "course": None, "error": None,
               "signed_out": not request.user.is_authenticated}
    if not code or len(code) > 16 or any(c not in JOIN_CODE_ALPHABET for c in code):
        raise Http404(_("no course has this join code"))
    try:
        if request.user.is_authenticated:
            check_join_rate(request.user)
            course = Course.objects.filter(join_code=code).first()
        else:
            course = check_join_link(code, client=request_client_key(request))
    except ActionError as exc:
        context["error"] = sentence(exc.message)
        return render(request, "courses/join.html", context, status=exc.status)
    if course is None:
        raise Http404(_("no course has this join code"))
    if access_course_for_user(course.pk, request.user) is not None:
        return redirect(course.get_absolute_url())
    context["course"] = course
    if not request.user.is_authenticated:
        return render(request, "courses/join.html", context)
    try:
        check_not_banned(course, request.user)
    except ActionError as exc:
        context["error"] = sentence(exc.message)
        context["removed"] = True
        return render(request, "courses/join.html", context, status=exc.status)
    return render(request, "courses/join.html", context)


# /courses/join/<code>/signup ---------------------------------------------------------------------

@never_cache
@require_http_methods(["GET", "POST"])
def join_signup(request, code):
    """Sign up through a course's join link (its page's "Create an account"): the page names the
    course, the new person is signed in and back on the join link, one click from joining, and
    the sign-up counts against the course's bound, not the address's (``sign_up_bucket``: a
    class signs up together, often behind one address). A code that names no course (looked up
    as the join page does, ``course_of_join_link``), or an archived course's, is a sign-up like
    any other, counted against the address, and comes back to the link all the same."""
    if request.user.is_authenticated:
        return redirect("account")
    join_url = reverse("course-join", args=[code])
    client = request_client_key(request)
    course = course_of_join_link(code, client=client)
    form = SignUpForm(request.POST if request.method == "POST" else None)
    context = {"form": form, "next": join_url, "course": course,
               "action": reverse("course-join-signup", args=[code])}
    if form.is_bound and form.is_valid():
        try:
            user = check_sign_up(form, client=client, bucket=sign_up_bucket(course) if course is not None else None)
        except ActionError as exc:
            form.add_error(None, sentence(exc.message))
            response = render(request, "courses/join_signup.html", context, status=exc.status)
            for name, value in exc.headers.items():
                response[name] = value
            return response
        login(request, user)
        return redirect(join_url)
    return render(request, "courses/join_signup.html", context)


# /courses/join/<code>/signin ---------------------------------------------------------------------

class JoinSignInView(LoginView):
    """Sign in through a course's join link (its page's "Sign in", or the sign-in page that a join
    link sent someone to): the page names the course and offers an account first, since most who
    follow a join link have none yet, then the sign-in form; either way back to the join link. The
    course is looked up as the sign-up looks it up (``course_of_join_link``): a code that names no
    course gets the plain sign-in, still on its way back to the link."""

    template_name = "courses/join_signin.html"
    sends_to_own_sign_in = False

    def get_redirect_url(self, request=None):
        return reverse("course-join", args=[self.kwargs["code"]])

    def get_context_data(self, **kwargs):
        code = self.kwargs["code"]
        context = super().get_context_data(**kwargs)
        context.update({
            "nav": "courses", "code": code, "next": reverse("course-join", args=[code]),
            "course": course_of_join_link(code, client=request_client_key(self.request)),
            "action": reverse("course-join-signin", args=[code]),
        })
        return context


join_signin = never_cache(JoinSignInView.as_view())


# /courses/<id>/ ----------------------------------------------------------------------------------

def _student_row(assignment: Assignment, latest: Submission | None, count: int, now) -> dict:
    row = {"assignment": assignment, "past_due": assignment.is_past_due(now), "submissions": count,
           "latest": latest, "state": "none", "score": None, "max_score": None, "tone": ""}
    if latest is None:
        return row
    row["late"] = latest.late
    if latest.status != GRADED:
        row["state"] = "grading"
    elif assignment.results_hidden_from_students(now):
        row["state"] = "hidden"
    else:
        row["state"] = "graded"
        row["score"], row["max_score"] = latest.score, latest.max_score
        row["provisional"] = latest.needs_regrade
        if latest.needs_regrade:
            row["tone"] = "provisional"  # a check crashed: not a score to judge by until the regrade
        elif latest.score is not None and latest.max_score is not None:
            full = latest.max_score <= 0 or latest.score >= latest.max_score - 1e-9
            row["tone"] = "ok" if full else ("part" if latest.score > 0 else "bad")
    return row


@page
def course_page(request, course_id):
    """A course's assignments (with one's own status and score); for instructors also its
    members, the join code and link, and the buttons that change it."""
    membership = _membership_or_404(request, course_id)
    course = membership.course
    instructor = membership.role == INSTRUCTOR
    now = timezone.now()
    assignments = list(Assignment.objects.filter(course=course)
                       .order_by(F("due_at").asc(nulls_last=True), "created_at", "id"))
    context = {"nav": "courses", "course": course, "membership": membership, "instructor": instructor}
    if instructor:
        members = list(Membership.objects.filter(course=course).select_related("user")
                       .order_by("role", "user__username"))
        student_ids = [m.user_id for m in members if m.role == STUDENT]
        submitted = dict(Submission.objects.filter(assignment__course=course, student_id__in=student_ids)
                         .values("assignment_id").annotate(n=Count("student", distinct=True))
                         .values_list("assignment_id", "n"))
        context |= {
            "rows": [{"assignment": a, "past_due": a.is_past_due(now), "submitted": submitted.get(a.pk, 0)}
                     for a in assignments],
            "members": members,
            "creator_id": course.created_by_id,
            "invitations": list(course.invitations.filter(expires_at__gt=now).order_by("username")),
            "removed": list(Ban.objects.filter(course=course).select_related("user").order_by("user__username")),
            "students_count": len(student_ids),
            "instructors_count": len(members) - len(student_ids),
            "join_url": request.build_absolute_uri(course.join_url),
        }
    else:
        latest: dict[int, Submission] = {}
        counts: dict[int, int] = {}
        mine = Submission.objects.filter(assignment__course=course, student=request.user)
        for s in mine.order_by("-created_at", "-id"):
            latest.setdefault(s.assignment_id, s)
            counts[s.assignment_id] = counts.get(s.assignment_id, 0) + 1
        context["rows"] = [_student_row(a, latest.get(a.pk), counts.get(a.pk, 0), now) for a in assignments]
    return render(request, "courses/course.html", context)


# /courses/<id>/dashboard -------------------------------------------------------------------------

@page
def dashboard_page(request, course_id):
    """The live dashboard (instructors): its script takes the snapshot and the updates from the
    course's websocket."""
    membership = _membership_or_404(request, course_id)
    if membership.role != INSTRUCTOR:
        raise Http404(_("no such course"))
    course = membership.course
    return render(request, "courses/dashboard.html", {
        "nav": "courses", "course": course,
        "dashboard_data": {"course": course.pk, "title": course.title, "ws": f"/ws/courses/{course.pk}/",
                           "csv": f"/api/courses/{course.pk}/grades.csv", "archived": course.archived},
    })


# /assignments/<id>/ ------------------------------------------------------------------------------

@page
def assignment_page(request, assignment_id):
    """The editor with the starter code (or one's draft), Run, Submit and the submissions; for
    instructors the assignment's settings and checks (which the page asks the API for)."""
    found = access_assignment_for_user(assignment_id, request.user)
    if found is None:
        raise Http404(_("no such assignment"))
    assignment, role = found
    course = assignment.course
    now = timezone.now()
    choices = _device_choices(assignment.device) if role == INSTRUCTOR else [assignment.device]
    wall_s = assignment.limits.get("wall_s") if isinstance(assignment.limits, dict) else None
    data = {
        "id": assignment.pk,
        "title": assignment.title,
        "course": {"id": course.pk, "title": course.title, "archived": course.archived},
        "role": role,
        "username": request.user.get_username(),
        "starter_code": assignment.starter_code,
        "device": assignment.device,
        "runtime": runtimes.current(assignment.runtime),
        "devices": choices,
        "due": assignment.due_at.isoformat() if assignment.due_at else None,
        "past_due": assignment.is_past_due(now),
        "results_before_due": assignment.results_before_due,
        "max_score": assignment.max_score,
        "wall_s": wall_s,
    }
    return render(request, "courses/assignment.html", {
        "course": course, "assignment": assignment, "role": role, "instructor": role == INSTRUCTOR,
        "past_due": data["past_due"], "results_hidden": assignment.results_hidden_from_students(now),
        "description_html": markdown.render(assignment.description),
        "assignment_data": data, "devices": choices, "wall_s": wall_s,
        "runtimes": runtimes.choices(), "assignment_jax": runtimes.jax_of(assignment.runtime),
        "max_wall_s": settings.RUN_LIMITS["wall_s"], "unsandboxed": _unsandboxed(assignment.device),
    })
