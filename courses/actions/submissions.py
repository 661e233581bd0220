"""A student's runs on an assignment (a free run of its device and limits, without its checks),
their submissions (graded by ``courses.grading``), and regrades. A student's run or submission
is admitted as any run a person starts, on their own share (``_admitted``); a regrade is its
instructor's, queued below every run a person waits for."""

from __future__ import annotations

import uuid
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone
from django.utils.translation import gettext_lazy

from executor import registry
from playground import quotas
from playground.actions.runs import check_code, check_stdin, do_start_run
from playground.devices import check_online
from playground.models import Run
from playground.runtimes import current as current_runtime
from web.ratelimit import check_rate

from ..dashboard import broadcast_on_commit, regrade_item, run_item, submission_item
from ..grading import queue_grading
from ..models import Assignment, CourseRun, Membership, Submission
from .common import _given_back_on_failure, _instructors_run, _not_archived, _object, _who

REGRADES = gettext_lazy("regrades")


def _check_admit(assignment: Assignment, user) -> tuple[uuid.UUID, int]:
    """A student's run or submission is a run like any other: it counts against their shares
    (``quotas.check_admit_run``: the run rate, the queue, the budget, an active slot), per
    account (a class runs from one lecture hall's address). Returns (run id, priority step)."""
    runtime = current_runtime(assignment.runtime)
    check_online(assignment.device, runtime)
    run_id = uuid.uuid4()
    return run_id, quotas.check_admit_run(_who(user), registry.route(assignment.device, runtime), str(run_id))


def _admitted(assignment: Assignment, payload, user, start):
    """Validate the code, admit the run on the person's share (``_check_admit``), and start it:
    ``start(assignment, user, code, run_id=..., priority=...)``. Should starting fail, the slot
    is given back."""
    payload = _object(payload)
    _not_archived(assignment.course)
    code = check_code(payload.get("code"))
    run_id, priority = _check_admit(assignment, user)
    with _given_back_on_failure(run_id):
        return start(assignment, user, code, run_id=run_id, priority=priority)


def check_start_course_run(assignment: Assignment, payload, *, user) -> Run:
    """A free run of the assignment's device and limits, without its checks, reading the
    ``stdin`` it was given (a submission reads none: the checks call the code)."""
    stdin = check_stdin(_object(payload).get("stdin"))
    return _admitted(assignment, payload, user, partial(do_start_course_run, stdin=stdin))


def do_start_course_run(assignment: Assignment, user, code: str, *, run_id: uuid.UUID | None = None,
                        priority: int = 0, stdin: str = "") -> Run:
    with transaction.atomic():
        # What a student's run compiles is not offered to the node's compile cache (it still loads
        # from it): an entry's name can be tested for, and a student's modules hold their answers.
        run = do_start_run(code, assignment.device, owner=user, limits=assignment.limits, run_id=run_id,
                           priority=priority, runtime=assignment.runtime, options={"private_compiles": True},
                           stdin=stdin)
        course_run = CourseRun.objects.create(run=run, assignment=assignment, student=user)
        broadcast_on_commit(assignment.course_id, lambda: run_item(run, course_run.student_id, assignment.pk))
    return run


def check_submit(assignment: Assignment, payload, *, user) -> Submission:
    return _admitted(assignment, payload, user, do_submit)


def do_submit(assignment: Assignment, user, code: str, *, run_id: uuid.UUID | None = None,
              priority: int = 0) -> Submission:
    """The submission and its first grading, whose run takes the admission's id and priority
    (None: a new id, at the first step)."""
    now = timezone.now()
    with transaction.atomic():
        submission = Submission.objects.create(assignment=assignment, student=user, code=code,
                                               late=assignment.is_past_due(now))
        grading = queue_grading(submission, assignment, run_id=run_id, priority=priority)
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
        check_rate("regrades", who, settings.REGRADE_RATE_LIMIT_PER_HOUR, 3600, REGRADES)
        # len(), not count(): Django 6.1 on SQLite counts a grouped values_list with an empty SELECT.
        runs = len(_latest_submissions(assignment))
        quotas.check_admit_regrade(who, registry.route(assignment.device, current_runtime(assignment.runtime)), runs)
    return do_regrade(assignment, by=who)


def do_regrade(assignment: Assignment, *, by: str | None = None) -> int:
    """Queue a grading with the current checks for the latest submission of each member who
    submitted. Gradings run in parallel, one task each on the device kind's queue, at the regrade
    priority step; ``by``: the client key their seconds count against. Returns how many were
    queued."""
    with _given_back_on_failure() as admitted, transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(regrades=F("regrades") + 1)
        assignment.refresh_from_db(fields=["regrades", "checks", "checks_version", "device", "runtime", "limits"])
        submissions = list(Submission.objects.filter(pk__in=list(_latest_submissions(assignment))).order_by("pk"))
        for submission in submissions:
            run_id = uuid.uuid4()
            queue_grading(submission, assignment, run_id=run_id, priority=_instructors_run(by, run_id, admitted),
                          regrade=assignment.regrades)
        Submission.objects.filter(pk__in=[s.pk for s in submissions]).update(regrading=True)
        broadcast_on_commit(assignment.course_id, lambda: regrade_item(assignment))
    return len(submissions)
