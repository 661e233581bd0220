"""State changes of courses. ``check_*`` validates and raises ``ActionError``; ``do_*`` changes
state without validating. Callers have already checked access (``courses.access``): a check
that needs a role takes what the role gives (an instructor's course, a member's assignment).
Dashboard updates are sent on commit (``courses.dashboard.broadcast_on_commit``); what happens
to a submission once queued is in ``courses.grading``."""

from __future__ import annotations

import math
from datetime import UTC

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from playground.actions.errors import ActionError
from playground.actions.runs import check_code, do_start_run
from playground.models import Run
from playground.ratelimit import check_rate
from playground.devices import check_device, check_online

from . import checks as checks_source
from .dashboard import broadcast_on_commit, regrade_item, run_item, submission_item
from .grading import queue_grading
from .models import (
    INSTRUCTOR, JOIN_CODE_ALPHABET, ROLES, STUDENT, Assignment, Course, CourseRun, Membership,
    Submission, new_join_code,
)


TITLE_MAX = 200
DESCRIPTION_MAX = 20_000
# Far more than a person makes by hand; a script's runaway loop stops here.
COURSES_PER_HOUR = 30
JOINS_PER_HOUR = 30  # join codes have 40 bits; this keeps anyone from trying them in bulk


def _text(payload: dict, name: str, limit: int, *, required: bool = False, strip: bool = False) -> str | None:
    """A string field: None when absent (and not required)."""
    if name not in payload or payload[name] is None:
        if required:
            raise ActionError(f"'{name}' is required")
        return None
    value = payload[name]
    if not isinstance(value, str):
        raise ActionError(f"'{name}' must be a string")
    if strip:
        value = value.strip()
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > limit:
        raise ActionError(f"'{name}' is {size} bytes; the limit is {limit}", status=413 if limit > 1000 else 400)
    return value


def _object(payload) -> dict:
    if not isinstance(payload, dict):
        raise ActionError("the request body must be a JSON object")
    return payload


def _not_archived(course: Course) -> None:
    if course.archived_at is not None:
        raise ActionError("this course is archived: it is read-only", status=409)


# Courses ------------------------------------------------------------------------------------------

def check_create_course(payload, *, user) -> Course:
    payload = _object(payload)
    title = _text(payload, "title", TITLE_MAX, required=True, strip=True)
    if not title:
        raise ActionError("'title' must not be empty")
    check_rate("courses", str(user.pk), COURSES_PER_HOUR, 3600, "courses created")
    return do_create_course(user, title)


def do_create_course(user, title: str) -> Course:
    """A new course, taught by ``user``, with a join code no other course has."""
    for _ in range(10):
        try:
            with transaction.atomic():
                course = Course.objects.create(title=title, created_by=user, join_code=new_join_code())
                Membership.objects.create(course=course, user=user, role=INSTRUCTOR)
                return course
        except IntegrityError:  # the code is taken (1 in 10^12 per course): draw another
            continue
    raise ActionError("could not find a free join code", status=500)


def normalize_join_code(code: str) -> str:
    """As typed from a slide: any case, spaces and dashes ignored."""
    return "".join(c for c in code.upper() if c not in " -\t")


def check_join_course(payload, *, user) -> Membership:
    payload = _object(payload)
    code = _text(payload, "code", 64, required=True)
    check_rate("course-joins", str(user.pk), JOINS_PER_HOUR, 3600, "attempts to join a course")
    code = normalize_join_code(code)
    if len(code) > 16 or any(c not in JOIN_CODE_ALPHABET for c in code):
        raise ActionError("no course has this join code", status=404)
    course = Course.objects.filter(join_code=code).first()
    if course is None:
        raise ActionError("no course has this join code", status=404)
    existing = Membership.objects.select_related("course").filter(course=course, user=user).first()
    if existing is not None:
        return existing  # joining again changes nothing: instructors stay instructors
    _not_archived(course)
    return do_join_course(course, user)


def do_join_course(course: Course, user) -> Membership:
    membership, created = Membership.objects.get_or_create(course=course, user=user, defaults={"role": STUDENT})
    if created:
        _broadcast_member(course.pk, user, STUDENT)
    return membership


def _broadcast_member(course_id: int, user, role: str | None) -> None:
    """Dashboards add a new student's row, and close the socket of an instructor who is one no
    more (``role`` None: removed)."""
    broadcast_on_commit(course_id, {"kind": "member", "user": user.pk, "username": user.username, "role": role,
                                     "at": timezone.now().isoformat()})


def check_add_member(course: Course, payload) -> Membership:
    """An instructor adds someone by username: a co-instructor (the default) or a student. A
    student already in the course is promoted."""
    payload = _object(payload)
    _not_archived(course)
    username = _text(payload, "username", 150, required=True, strip=True)
    role = payload.get("role", INSTRUCTOR)
    if role not in ROLES:
        raise ActionError(f"'role' must be one of {', '.join(ROLES)}")
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise ActionError(f"no one has the username {username!r}")
    return do_set_member(course, user, role)


def do_set_member(course: Course, user, role: str) -> Membership:
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(course=course, user=user).first()
        if membership is None:
            membership = Membership.objects.create(course=course, user=user, role=role)
            _broadcast_member(course.pk, user, role)
            return membership
        if membership.role == INSTRUCTOR and role != INSTRUCTOR:
            _keep_an_instructor(course, membership)
        if membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
            _broadcast_member(course.pk, user, role)
        return membership


def _keep_an_instructor(course: Course, leaving: Membership) -> None:
    others = Membership.objects.filter(course=course, role=INSTRUCTOR).exclude(pk=leaving.pk)
    if not others.exists():
        raise ActionError("a course needs an instructor: add another one first", status=409)


def check_remove_member(acting: Membership, user_id) -> None:
    """An instructor removes a student (or a co-instructor, while another remains); a student
    may leave. Whom one may not remove is "not found", like whom one may not see."""
    from .access import _id

    course = acting.course
    target_id = _id(user_id)
    target = None if target_id is None else Membership.objects.filter(course=course, user_id=target_id).first()
    if target is None or (not acting.is_instructor and target.user_id != acting.user_id):
        raise ActionError("no such member of this course", status=404)
    _not_archived(course)
    with transaction.atomic():
        if target.role == INSTRUCTOR:
            _keep_an_instructor(course, target)
        do_remove_member(target)


def do_remove_member(membership: Membership) -> None:
    """Their submissions are kept (an instructor may add them again); they no longer see the
    course, and an open dashboard socket of theirs closes."""
    Membership.objects.filter(pk=membership.pk).delete()
    _broadcast_member(membership.course_id, membership.user, None)


def check_archive_course(course: Course, payload) -> Course:
    payload = {} if payload is None else _object(payload)
    archived = payload.get("archived", True)
    if not isinstance(archived, bool):
        raise ActionError("'archived' must be true or false")
    return do_archive_course(course, archived)


def do_archive_course(course: Course, archived: bool = True) -> Course:
    if archived and course.archived_at is None:
        course.archived_at = timezone.now()
    elif not archived:
        course.archived_at = None
    Course.objects.filter(pk=course.pk).update(archived_at=course.archived_at)
    return course


# Assignments --------------------------------------------------------------------------------------

def _parse_due(value):
    if value is None:
        return None
    if not isinstance(value, str):
        raise ActionError("'due' must be a date and time in ISO 8601 (2026-03-01T23:59:00Z) or null")
    try:
        parsed = parse_datetime(value.strip())
    except ValueError:
        parsed = None
    if parsed is None:
        raise ActionError(f"'due' is not a date and time in ISO 8601 (2026-03-01T23:59:00Z): {value!r}")
    if timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=UTC)  # without an offset, a time is UTC (the API's clock)
    return parsed


def _parse_limits(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ActionError(f"'limits' must be an object with any of {', '.join(settings.RUN_LIMITS)}")
    limits = {}
    for key, number in value.items():
        if key not in settings.RUN_LIMITS:
            raise ActionError(f"unknown limit {key!r}; an assignment may narrow {', '.join(settings.RUN_LIMITS)}")
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) or number <= 0:
            raise ActionError(f"limit {key!r} must be a positive number")
        if number > settings.RUN_LIMITS[key]:
            raise ActionError(f"limit {key!r} may be at most {settings.RUN_LIMITS[key]} (the playground's own); "
                              f"an assignment can only narrow limits")
        limits[key] = number
    return limits


def _assignment_fields(payload: dict, *, creating: bool) -> dict:
    fields: dict = {}
    title = _text(payload, "title", TITLE_MAX, required=creating, strip=True)
    if title is not None:
        if not title:
            raise ActionError("'title' must not be empty")
        fields["title"] = title
    for name, limit in (("description", DESCRIPTION_MAX), ("starter_code", settings.RUN_MAX_CODE_BYTES),
                        ("checks", checks_source.CHECKS_MAX_BYTES)):
        value = _text(payload, name, limit)
        if value is not None:
            fields[name] = value
    if "checks" in fields:
        checks_source.validate_checks(fields["checks"])
    if "device" in payload:
        fields["device"] = check_device(payload["device"])
    if "due" in payload:
        fields["due_at"] = _parse_due(payload["due"])
    if "results_before_due" in payload:
        if not isinstance(payload["results_before_due"], bool):
            raise ActionError("'results_before_due' must be true or false")
        fields["results_before_due"] = payload["results_before_due"]
    if "limits" in payload:
        fields["limits"] = _parse_limits(payload["limits"])
    return fields


def check_create_assignment(course: Course, payload) -> Assignment:
    payload = _object(payload)
    _not_archived(course)
    fields = _assignment_fields(payload, creating=True)
    fields.setdefault("device", settings.RUN_DEFAULT_DEVICE)
    return do_create_assignment(course, **fields)


def do_create_assignment(course: Course, **fields) -> Assignment:
    fields["max_score"] = checks_source.max_score(fields.get("checks", ""))
    assignment = Assignment.objects.create(course=course, **fields)
    return assignment


def check_update_assignment(assignment: Assignment, payload) -> Assignment:
    payload = _object(payload)
    _not_archived(assignment.course)
    return do_update_assignment(assignment, _assignment_fields(payload, creating=False))


def do_update_assignment(assignment: Assignment, fields: dict) -> Assignment:
    """Changed checks get a new version (submissions graded before can be regraded) and a new
    max_score; grades already given stay as they are until a regrade."""
    changed = [name for name, value in fields.items() if getattr(assignment, name) != value]
    for name in changed:
        setattr(assignment, name, fields[name])
    if "checks" in changed:
        assignment.checks_version += 1
        assignment.max_score = checks_source.max_score(assignment.checks)
        changed += ["checks_version", "max_score"]
    if changed:
        assignment.save(update_fields=[*changed, "updated_at"])
    return assignment


# Runs and submissions ----------------------------------------------------------------------------

def _check_can_run(assignment: Assignment, user) -> None:
    """A class runs from one address (a lecture hall's), so the run limit counts per account."""
    check_online(assignment.device)
    check_rate("course-runs", str(user.pk), settings.RUN_RATE_LIMIT_PER_MINUTE, 60, "runs")


def check_start_course_run(assignment: Assignment, payload, *, user) -> Run:
    """A free run of the assignment's device and limits, without its checks."""
    payload = _object(payload)
    _not_archived(assignment.course)
    code = check_code(payload.get("code"))
    _check_can_run(assignment, user)
    return do_start_course_run(assignment, user, code)


def do_start_course_run(assignment: Assignment, user, code: str) -> Run:
    with transaction.atomic():
        run = do_start_run(code, assignment.device, owner=user, limits=assignment.limits)
        course_run = CourseRun.objects.create(run=run, assignment=assignment, student=user)
        broadcast_on_commit(assignment.course_id, lambda: run_item(run, course_run.student_id, assignment.pk))
    return run


def check_submit(assignment: Assignment, payload, *, user) -> Submission:
    payload = _object(payload)
    _not_archived(assignment.course)
    code = check_code(payload.get("code"))
    _check_can_run(assignment, user)
    return do_submit(assignment, user, code)


def do_submit(assignment: Assignment, user, code: str) -> Submission:
    now = timezone.now()
    with transaction.atomic():
        submission = Submission.objects.create(assignment=assignment, student=user, code=code,
                                               late=assignment.is_past_due(now))
        grading = queue_grading(submission, assignment)
        submission.run = grading.run
        submission.save(update_fields=["run"])
        broadcast_on_commit(assignment.course_id, lambda: submission_item(submission))
    return submission


def check_regrade(assignment: Assignment) -> int:
    _not_archived(assignment.course)
    check_online(assignment.device)
    return do_regrade(assignment)


def do_regrade(assignment: Assignment) -> int:
    """Queue a grading with the current checks for the latest submission of each member who
    submitted (the one that counts: grades are the latest graded submission's). Gradings run in
    parallel, one task each on the device kind's queue. Returns how many were queued."""
    with transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(regrades=F("regrades") + 1)
        assignment.refresh_from_db(fields=["regrades", "checks", "checks_version", "device", "limits"])
        members = Membership.objects.filter(course_id=assignment.course_id).values_list("user_id", flat=True)
        latest = (Submission.objects.filter(assignment=assignment, student_id__in=members)
                  .values("student_id").annotate(latest=Max("id")).values_list("latest", flat=True))
        submissions = list(Submission.objects.filter(pk__in=list(latest)).order_by("pk"))
        for submission in submissions:
            queue_grading(submission, assignment, regrade=assignment.regrades)
        Submission.objects.filter(pk__in=[s.pk for s in submissions]).update(regrading=True)
        broadcast_on_commit(assignment.course_id, lambda: regrade_item(assignment))
    return len(submissions)
