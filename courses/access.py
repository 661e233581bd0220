"""Who may see which course, assignment and submission: one function per model, used by every
page, API call and websocket. A person who may not see an object gets None, which callers answer
as "not found": a stranger cannot tell a course that exists from one that does not.

    course       its members (instructors and students)
    assignment   the members of its course
    submission   its student while a member of the course, and the course's instructors

An archived course is still visible to its members (read-only: ``courses.actions`` refuses
changes). A student removed from a course no longer sees it, nor their submissions to it.
"""

from __future__ import annotations

from .models import INSTRUCTOR, VALIDATION_KINDS, Assignment, Course, Grading, Membership, Submission


def _id(value) -> int | None:
    """A positive integer id, or None (a URL segment like "abc" or "-1" names nothing)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18:
        number = int(value)
        return number if number > 0 else None
    return None


def _signed_in(user) -> bool:
    return user is not None and getattr(user, "is_authenticated", False) and user.is_active


def courses_for_user(user):
    """The courses the user is a member of (archived ones included), newest first."""
    if not _signed_in(user):
        return Course.objects.none()
    return Course.objects.filter(memberships__user=user).order_by("-created_at")


def access_course_for_user(course_id, user) -> Membership | None:
    """The user's membership of the course (``.course``, ``.role``), or None."""
    pk = _id(course_id)
    if pk is None or not _signed_in(user):
        return None
    return Membership.objects.select_related("course").filter(course_id=pk, user=user).first()


def access_assignment_for_user(assignment_id, user) -> tuple[Assignment, str] | None:
    """(assignment, the user's role in its course), or None."""
    pk = _id(assignment_id)
    if pk is None or not _signed_in(user):
        return None
    assignment = Assignment.objects.select_related("course").filter(pk=pk).first()
    if assignment is None:
        return None
    role = Membership.objects.filter(course_id=assignment.course_id, user=user).values_list("role", flat=True).first()
    if role is None:
        return None
    return assignment, role


def access_submission_for_user(submission_id, user) -> tuple[Submission, str] | None:
    """(submission, role): one's own submission while still in the course, or any submission of
    a course one teaches; None otherwise."""
    pk = _id(submission_id)
    if pk is None or not _signed_in(user):
        return None
    submission = Submission.objects.select_related("assignment__course", "student").filter(pk=pk).first()
    if submission is None:
        return None
    role = Membership.objects.filter(course_id=submission.assignment.course_id, user=user).values_list(
        "role", flat=True).first()
    if role == INSTRUCTOR or (role is not None and submission.student_id == user.pk):
        return submission, role
    return None


def guard_graded_run(run, user) -> bool | None:
    """A graded run is kept to whom its grading belongs: a validation run (the assignment's
    reference solution or starter code, graded) to the course's instructors, as its checks and
    reference are; a submission's run (its first grading's or a regrade's: its code, profile and
    stdin) to its student while a member of the course, and to the course's instructors. False
    for anyone else, however they came by the run's id; None for a run no grading has (a run of
    the playground, a free run on an assignment's page, a snippet's), which keeps the rules of
    any run."""
    grading = Grading.objects.filter(run_id=run.pk).values(
        "kind", "assignment__course_id", "submission__assignment__course_id", "submission__student_id").first()
    if grading is None:
        return None
    if not _signed_in(user):
        return False
    if grading["kind"] in VALIDATION_KINDS:
        course_id, student_id = grading["assignment__course_id"], None
    else:
        course_id, student_id = grading["submission__assignment__course_id"], grading["submission__student_id"]
    role = Membership.objects.filter(course_id=course_id, user=user).values_list("role", flat=True).first()
    return role == INSTRUCTOR or (role is not None and student_id is not None and student_id == user.pk)
