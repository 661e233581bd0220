"""State changes of courses. ``check_*`` validates and raises ``ActionError``; ``do_*`` changes
state without validating. Callers have already checked access (``courses.access``): a check
that needs a role takes what the role gives (an instructor's course, a member's assignment).
Dashboard updates are sent on commit (``courses.dashboard.broadcast_on_commit``); what happens
to a submission once queued is in ``courses.grading``."""

from __future__ import annotations

import math
import re
import uuid
from datetime import UTC, timedelta

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from executor import registry
from playground import quotas
from playground.actions.runs import check_code, do_start_run
from playground.devices import check_device, check_online
from playground.runtimes import check_runtime
from playground.runtimes import current as current_runtime
from playground.models import Run
from web.api import text
from web.clients import client_key
from web.errors import ActionError
from web.ratelimit import check_count, check_rate, count_one

from . import checks as checks_source
from .dashboard import broadcast_on_commit, regrade_item, run_item, submission_item
from .grading import queue_grading, queue_validation
from .models import (
    INSTRUCTOR, JOIN_CODE_ALPHABET, REFERENCE, ROLES, STARTER, STUDENT, Assignment, Ban, Course, CourseRun, Grading,
    Invitation, Membership, Submission, new_join_code,
)


TITLE_MAX = 200
DESCRIPTION_MAX = 20_000
# Far more than a person makes by hand; a script's runaway loop stops here.
COURSES_PER_HOUR = 30
JOINS_PER_HOUR = 30  # join codes have 40 bits; this keeps anyone from trying them in bulk
# A course's join link as a page's ``next`` carries it (``Course.join_url``; sign-in, sign-up).
JOIN_PATH = re.compile(r"/courses/join/([^/?#]{1,64})")
# Invitations one instructor may send an hour: a class's co-instructors and a few students, not
# a way to try usernames in bulk.
INVITATIONS_PER_HOUR = 60
INVITATION_DAYS = 14
REMOVED = ("you were removed from this course by its instructors; ask one of them to invite you "
           "again or to let you back in")


def _who(user) -> str:
    """The client key every limit of a signed-in person counts against (``web.clients``)."""
    return client_key(None, user)


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
    title = text(payload, "title", TITLE_MAX, required=True, strip=True)
    if not title:
        raise ActionError("'title' must not be empty")
    check_rate("courses", _who(user), COURSES_PER_HOUR, 3600, "courses created")
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
    code = text(payload, "code", 64, required=True)
    check_join_rate(user)
    code = normalize_join_code(code)
    if len(code) > 16 or any(c not in JOIN_CODE_ALPHABET for c in code):
        raise ActionError("no course has this join code", status=404)
    course = Course.objects.filter(join_code=code).first()
    if course is None:
        raise ActionError("no course has this join code", status=404)
    existing = Membership.objects.select_related("course").filter(course=course, user=user).first()
    if existing is not None:
        return existing  # joining again changes nothing: instructors stay instructors
    check_not_banned(course, user)
    _not_archived(course)
    return do_join_course(course, user)


def check_join_rate(user) -> None:
    """Joining and looking a join code up count together (the join page shows a code's course)."""
    check_rate("course-joins", _who(user), JOINS_PER_HOUR, 3600, "attempts to join a course")


def check_join_link(code: str, *, client: str) -> Course | None:
    """The course a join link names, looked up for someone signed out (``client``: their
    address's key), or None. A link is handed to a whole room, and sixty people behind one
    address open it at once: only codes that name no course count against the address, and once
    it has tried JOINS_PER_HOUR of those this hour it is refused (429), so codes still cannot be
    tried in bulk."""
    check_count("course-join-misses", client, JOINS_PER_HOUR, 3600, "join codes that name no course")
    code = normalize_join_code(code)
    course = None
    if code and len(code) <= 16 and all(c in JOIN_CODE_ALPHABET for c in code):
        course = Course.objects.filter(join_code=code).first()
    if course is None:
        count_one("course-join-misses", client, 3600)
    return course


def course_of_join_link(url: str, *, client: str) -> Course | None:
    """The course that takes members through the join link ``url`` ("/courses/join/<code>", a
    sign-up's ``next``), looked up as ``check_join_link`` does; None for any other URL, a code
    that names no course, an archived course, or an address over its limit of misses."""
    match = JOIN_PATH.fullmatch(url or "")
    if match is None:
        return None
    try:
        course = check_join_link(match.group(1), client=client)
    except (ActionError, redis.RedisError):  # the page opens all the same, as any sign-up's
        return None
    return course if course is not None and not course.archived else None


def check_not_banned(course: Course, user) -> None:
    """A removal sticks: someone an instructor removed cannot come back by the join code."""
    if Ban.objects.filter(course=course, user=user).exists():
        raise ActionError(REMOVED, status=403)


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


def check_add_member(acting: Membership, payload) -> dict:
    """An instructor adds someone by username, as a co-instructor (the default) or a student: an
    invitation that makes them a member once they accept it, answered the same whether or not
    anyone has the username (``{"username", "role", "status": "invited", "expires_at"}``), so the
    answer tells no one who has an account. A member's role changes at once instead (members are
    no secret to an instructor): stepping down to student, or, to become an instructor, an
    invitation too. The course's creator is never stepped down by someone else."""
    payload = _object(payload)
    course = acting.course
    _not_archived(course)
    username = text(payload, "username", 150, required=True, strip=True)
    if not username:
        raise ActionError("'username' must not be empty")
    role = payload.get("role", INSTRUCTOR)
    if role not in ROLES:
        raise ActionError(f"'role' must be one of {', '.join(ROLES)}")
    check_rate("course-invitations", _who(acting.user), INVITATIONS_PER_HOUR, 3600, "invitations")
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    member = None if user is None else Membership.objects.filter(course=course, user=user).first()
    if member is not None and (role == STUDENT or member.role == INSTRUCTOR):
        if member.role != role:
            _check_not_the_creator(acting, member)
        member = do_set_member(course, user, role)
        return {"username": user.username, "role": member.role, "status": "member", "id": user.pk}
    invitation = do_invite(course, username, user, role, by=acting.user)
    return invitation_for_instructors(invitation)


def invitation_for_instructors(invitation: Invitation) -> dict:
    """What instructors see of an invitation: the same for a name no one has."""
    return {"username": invitation.username, "role": invitation.role, "status": "invited",
            "expires_at": invitation.expires_at.isoformat()}


def do_invite(course: Course, username: str, user, role: str, *, by) -> Invitation:
    """Invite ``username`` (``user``: who has it, None for no one); inviting again renews it."""
    invitation, _ = Invitation.objects.update_or_create(course=course, username=username, defaults={
        "user": user, "role": role, "invited_by": by,
        "expires_at": timezone.now() + timedelta(days=INVITATION_DAYS)})
    return invitation


def pending_invitations(user):
    """The invitations ``user`` may still accept, newest first."""
    return (Invitation.objects.filter(user=user, expires_at__gt=timezone.now(), course__archived_at__isnull=True)
            .select_related("course", "invited_by"))


def check_answer_invitation(invitation_id, user, *, accept: bool) -> Membership | None:
    """Accept (a member, with the invitation's role; a removal of theirs is lifted: an instructor
    asked them back) or decline. One's own pending invitations only; any other is "not found"."""
    from .access import _id

    pk = _id(invitation_id)
    invitation = None if pk is None else pending_invitations(user).filter(pk=pk).first()
    if invitation is None:
        raise ActionError("no such invitation of yours (it may have lapsed or been answered)", status=404)
    if not accept:
        Invitation.objects.filter(pk=invitation.pk).delete()
        return None
    _not_archived(invitation.course)
    return do_accept_invitation(invitation)


def do_accept_invitation(invitation: Invitation) -> Membership:
    with transaction.atomic():
        Ban.objects.filter(course=invitation.course, user=invitation.user).delete()
        existing = Membership.objects.filter(course=invitation.course, user=invitation.user).first()
        role = INSTRUCTOR if existing is not None and existing.role == INSTRUCTOR else invitation.role
        membership = do_set_member(invitation.course, invitation.user, role)
        Invitation.objects.filter(pk=invitation.pk).delete()
    return membership


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


def _check_not_the_creator(acting: Membership, target: Membership) -> None:
    """A co-instructor cannot remove or step down the course's creator (who may leave)."""
    if target.user_id == acting.course.created_by_id and target.user_id != acting.user_id:
        raise ActionError("the course's creator cannot be removed or made a student by another instructor",
                          status=403)


def check_remove_member(acting: Membership, user_id) -> None:
    """An instructor removes a student (or a co-instructor, while another remains, never the
    course's creator), who cannot come back by the join code (a ban, until an instructor lifts
    it); a student may leave (and join again). Whom one may not remove is "not found", like whom
    one may not see."""
    from .access import _id

    course = acting.course
    target_id = _id(user_id)
    target = None if target_id is None else Membership.objects.filter(course=course, user_id=target_id).first()
    if target is None or (not acting.is_instructor and target.user_id != acting.user_id):
        raise ActionError("no such member of this course", status=404)
    _not_archived(course)
    _check_not_the_creator(acting, target)
    with transaction.atomic():
        if target.role == INSTRUCTOR:
            _keep_an_instructor(course, target)
        do_remove_member(target, banned_by=acting.user if target.user_id != acting.user_id else None)


def do_remove_member(membership: Membership, *, banned_by=None) -> None:
    """Their submissions are kept (an instructor may let them back); they no longer see the
    course, and an open dashboard socket of theirs closes. Removed by someone else (``banned_by``),
    they are banned: the join code no longer lets them in."""
    with transaction.atomic():
        Membership.objects.filter(pk=membership.pk).delete()
        if banned_by is not None:
            Ban.objects.get_or_create(course_id=membership.course_id, user_id=membership.user_id,
                                      defaults={"banned_by": banned_by})
    _broadcast_member(membership.course_id, membership.user, None)


def check_lift_ban(course: Course, user_id) -> None:
    """An instructor lets a removed person back: they may join by the code again."""
    from .access import _id

    target_id = _id(user_id)
    if target_id is None or not Ban.objects.filter(course=course, user_id=target_id).exists():
        raise ActionError("no one removed from this course has this id", status=404)
    Ban.objects.filter(course=course, user_id=target_id).delete()


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
    title = text(payload, "title", TITLE_MAX, required=creating, strip=True)
    if title is not None:
        if not title:
            raise ActionError("'title' must not be empty")
        fields["title"] = title
    for name, limit in (("description", DESCRIPTION_MAX), ("starter_code", settings.RUN_MAX_CODE_BYTES),
                        ("reference_solution", settings.RUN_MAX_CODE_BYTES),
                        ("checks", checks_source.CHECKS_MAX_BYTES)):
        # A long field over its limit is a body too large (413); a short one, bad input.
        value = text(payload, name, limit, status=413 if limit > 1000 else 400)
        if value is not None:
            fields[name] = value
    if "checks" in fields:
        checks_source.validate_checks(fields["checks"])
    if "device" in payload:
        fields["device"] = check_device(payload["device"])
    if "runtime" in payload or creating:
        fields["runtime"] = check_runtime(payload.get("runtime"))[0]
    if "due" in payload:
        fields["due_at"] = _parse_due(payload["due"])
    if "results_before_due" in payload:
        if not isinstance(payload["results_before_due"], bool):
            raise ActionError("'results_before_due' must be true or false")
        fields["results_before_due"] = payload["results_before_due"]
    if "limits" in payload:
        fields["limits"] = _parse_limits(payload["limits"])
    return fields


# What a validation grades: a change to any of these makes the last one out of date.
VALIDATED_FIELDS = ("checks", "reference_solution", "starter_code", "device", "runtime", "limits")


def check_create_assignment(course: Course, payload, *, user=None) -> Assignment:
    """A new assignment, validated (``check_validate_assignment``) as ``user`` (its instructor)."""
    payload = _object(payload)
    _not_archived(course)
    fields = _assignment_fields(payload, creating=True)
    fields.setdefault("device", settings.RUN_DEFAULT_DEVICE)
    assignment = do_create_assignment(course, **fields)
    check_validate_assignment(assignment, user=user)
    return assignment


def do_create_assignment(course: Course, **fields) -> Assignment:
    fields["max_score"] = checks_source.max_score(fields.get("checks", ""))
    assignment = Assignment.objects.create(course=course, **fields)
    return assignment


def check_update_assignment(assignment: Assignment, payload, *, user=None) -> Assignment:
    """A change, validated again when it changes what is graded (``VALIDATED_FIELDS``)."""
    payload = _object(payload)
    _not_archived(assignment.course)
    fields = _assignment_fields(payload, creating=False)
    revalidate = any(name in VALIDATED_FIELDS and getattr(assignment, name) != value for name, value in fields.items())
    assignment = do_update_assignment(assignment, fields)
    if revalidate:
        check_validate_assignment(assignment, user=user)
    return assignment


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


def check_validate_assignment(assignment: Assignment, *, user=None) -> None:
    """Grade the reference solution and the starter code with the checks, as nbgrader's validate
    does: the reference should get full marks, the starter code should not. Two graded runs like a
    submission's, which are the instructor's (``user``) as a regrade's are: their seconds count
    against the instructor's budget and they are queued below every run a person waits for. When
    they are refused (the budget, a full queue, no executor online), the save still stands and the
    assignment says why it was not validated. Without checks, or with neither code, there is
    nothing to validate."""
    runs = [(kind, code) for kind, code in ((REFERENCE, assignment.reference_solution),
                                            (STARTER, assignment.starter_code)) if code.strip()]
    if not assignment.checks.strip() or not runs:
        do_validate_assignment(assignment, [])
        return
    who = _who(user) if user is not None else None
    runtime = current_runtime(assignment.runtime)
    try:
        check_online(assignment.device, runtime)
        if who is not None:
            quotas.check_admit_regrade(who, registry.route(assignment.device, runtime), len(runs))
    except ActionError as exc:
        do_validate_assignment(assignment, [], skipped=exc.message)
        return
    do_validate_assignment(assignment, runs, by=who)



def _instructors_run(by: str | None, run_id, admitted: list[str]) -> int:
    """The priority of a graded run an instructor's action queues (a regrade's, a validation's):
    the regrade step, its seconds counted against ``by`` (their client key; None: no one's), its
    id added to ``admitted`` so that a failure releases it."""
    if by is None:
        return quotas.REGRADE_STEP
    admitted.append(str(run_id))
    return quotas.admit_regrade(by, str(run_id))

def do_validate_assignment(assignment: Assignment, runs: list[tuple[str, str]], *, by: str | None = None,
                           skipped: str = "") -> None:
    """Replace the assignment's validation with a graded run of each ``(kind, code)`` (none: no
    validation, ``skipped`` saying why); ``by``: the client key their seconds count against. A
    run of the replaced validation still going ends as any run; its result is dropped."""
    run_ids: list[str] = []
    try:
        with transaction.atomic():
            Grading.objects.filter(assignment=assignment).delete()
            for kind, code in runs:
                run_id = uuid.uuid4()
                with quotas.starting(run_id, _instructors_run(by, run_id, run_ids)):
                    queue_validation(assignment, kind, code)
            if assignment.validation_skipped != skipped:
                assignment.validation_skipped = skipped
                Assignment.objects.filter(pk=assignment.pk).update(validation_skipped=skipped)
    except BaseException:
        for run_id in run_ids:
            quotas.release(run_id)
        raise


# Runs and submissions ----------------------------------------------------------------------------

def _check_admit(assignment: Assignment, user) -> tuple[uuid.UUID, int]:
    """A student's run or submission is a run like any other: it counts against their shares
    (``quotas.check_admit_run``: the run rate, the queue, the budget, an active slot), per
    account (a class runs from one lecture hall's address). Returns (run id, priority step)."""
    runtime = current_runtime(assignment.runtime)
    check_online(assignment.device, runtime)
    run_id = uuid.uuid4()
    return run_id, quotas.check_admit_run(_who(user), registry.route(assignment.device, runtime), str(run_id))


def check_start_course_run(assignment: Assignment, payload, *, user) -> Run:
    """A free run of the assignment's device and limits, without its checks."""
    payload = _object(payload)
    _not_archived(assignment.course)
    code = check_code(payload.get("code"))
    run_id, priority = _check_admit(assignment, user)
    try:
        return do_start_course_run(assignment, user, code, run_id=run_id, priority=priority)
    except BaseException:
        quotas.release(str(run_id))
        raise


def do_start_course_run(assignment: Assignment, user, code: str, *, run_id: uuid.UUID | None = None,
                        priority: int = 0) -> Run:
    with transaction.atomic():
        # What a student's run compiles is not offered to the node's compile cache (it still loads
        # from it): an entry's name can be tested for, and a student's modules hold their answers.
        run = do_start_run(code, assignment.device, owner=user, limits=assignment.limits, run_id=run_id,
                           priority=priority, runtime=assignment.runtime, options={"private_compiles": True})
        course_run = CourseRun.objects.create(run=run, assignment=assignment, student=user)
        broadcast_on_commit(assignment.course_id, lambda: run_item(run, course_run.student_id, assignment.pk))
    return run


def check_submit(assignment: Assignment, payload, *, user) -> Submission:
    payload = _object(payload)
    _not_archived(assignment.course)
    code = check_code(payload.get("code"))
    run_id, priority = _check_admit(assignment, user)
    try:
        return do_submit(assignment, user, code, run_id=run_id, priority=priority)
    except BaseException:
        quotas.release(str(run_id))
        raise


def do_submit(assignment: Assignment, user, code: str, *, run_id: uuid.UUID | None = None,
              priority: int = 0) -> Submission:
    """The submission and its first grading; its run takes the admission's id and priority
    (``quotas.starting``: ``queue_grading`` starts it)."""
    now = timezone.now()
    with transaction.atomic():
        submission = Submission.objects.create(assignment=assignment, student=user, code=code,
                                               late=assignment.is_past_due(now))
        with quotas.starting(run_id, priority):
            grading = queue_grading(submission, assignment)
        submission.run = grading.run
        submission.save(update_fields=["run"])
        broadcast_on_commit(assignment.course_id, lambda: submission_item(submission))
    return submission


def _latest_submissions(assignment: Assignment):
    """The latest submission of each member who submitted (the one that counts: grades are the
    latest graded submission's)."""
    members = Membership.objects.filter(course_id=assignment.course_id).values_list("user_id", flat=True)
    return (Submission.objects.filter(assignment=assignment, student_id__in=members)
            .values("student_id").annotate(latest=Max("id")).values_list("latest", flat=True))


def check_regrade(assignment: Assignment, *, user=None) -> int:
    """A regrade is the instructor's (``user``): at most REGRADE_RATE_LIMIT_PER_HOUR an hour, its
    runs' seconds count against their budget (refused while it is used up), and they are queued
    below every run a person is waiting for, so regrading a class never delays anyone's Run."""
    _not_archived(assignment.course)
    check_online(assignment.device, current_runtime(assignment.runtime))
    who = _who(user) if user is not None else None
    if who is not None:
        check_rate("regrades", who, settings.REGRADE_RATE_LIMIT_PER_HOUR, 3600, "regrades")
        # len(), not count(): Django 6.1 on SQLite counts a grouped values_list with an empty SELECT.
        runs = len(_latest_submissions(assignment))
        quotas.check_admit_regrade(who, registry.route(assignment.device, current_runtime(assignment.runtime)), runs)
    return do_regrade(assignment, by=who)


def do_regrade(assignment: Assignment, *, by: str | None = None) -> int:
    """Queue a grading with the current checks for the latest submission of each member who
    submitted. Gradings run in parallel, one task each on the device kind's queue, at the regrade
    priority step; ``by``: the client key their seconds count against. Returns how many were
    queued."""
    run_ids: list[str] = []
    try:
        with transaction.atomic():
            Assignment.objects.filter(pk=assignment.pk).update(regrades=F("regrades") + 1)
            assignment.refresh_from_db(fields=["regrades", "checks", "checks_version", "device", "runtime", "limits"])
            submissions = list(Submission.objects.filter(pk__in=list(_latest_submissions(assignment))).order_by("pk"))
            for submission in submissions:
                run_id = uuid.uuid4()
                with quotas.starting(run_id, _instructors_run(by, run_id, run_ids)):
                    queue_grading(submission, assignment, regrade=assignment.regrades)
            Submission.objects.filter(pk__in=[s.pk for s in submissions]).update(regrading=True)
            broadcast_on_commit(assignment.course_id, lambda: regrade_item(assignment))
    except BaseException:
        for run_id in run_ids:
            quotas.release(run_id)
        raise
    return len(submissions)
