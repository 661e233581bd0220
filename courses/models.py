"""Courses: a course has members (instructors and students) and assignments; a student's
submission to an assignment is graded by one or more gradings, each a graded run in the sandbox.

    Course ─┬─ Membership (user, role)
            ├─ Invitation (username, role): a member only once they accept it
            ├─ Ban (user): removed by an instructor, the join code no longer lets them in
            └─ Assignment (description, starter code, HIDDEN checks ─┬─ Submission ── Grading (one per run)
                           and reference solution)                    ├─ Grading (a validation: the checks on the
                                                                      │  reference solution, on the starter code)
                                                                      └─ CourseRun (a free run on its page)

Public ids are integers: every URL and socket looks them up through ``courses.access``, which
answers "not found" to anyone who is not a member, so an id tells an outsider nothing.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

from executor import runtimes
from django.utils import timezone

from playground.models import Run

# No 0/O, 1/I/L: a code read aloud in a lecture hall or copied from a slide is typed right.
JOIN_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
JOIN_CODE_LENGTH = 8

INSTRUCTOR = "instructor"
STUDENT = "student"
ROLES = (INSTRUCTOR, STUDENT)

QUEUED = "queued"
GRADING = "grading"
GRADED = "graded"
GRADE_STATUSES = (QUEUED, GRADING, GRADED)

# What a grading grades: a submission, or (a validation) the assignment's reference solution or
# its starter code, with the checks as saved.
SUBMISSION = "submission"
REFERENCE = "reference"
STARTER = "starter"
GRADING_KINDS = (SUBMISSION, REFERENCE, STARTER)
VALIDATION_KINDS = (REFERENCE, STARTER)


def new_join_code() -> str:
    return "".join(secrets.choice(JOIN_CODE_ALPHABET) for _ in range(JOIN_CODE_LENGTH))


class Course(models.Model):
    """A class. Archived: its members still see everything, nothing changes any more (no joins,
    runs, submissions or edits)."""

    title = models.CharField(max_length=200)
    join_code = models.CharField(max_length=JOIN_CODE_LENGTH, unique=True, default=new_join_code)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="courses_created")
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.title

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    def get_absolute_url(self) -> str:
        return f"/courses/{self.pk}/"

    @property
    def join_url(self) -> str:
        return f"/courses/join/{self.join_code}"


class Membership(models.Model):
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="course_memberships")
    role = models.CharField(max_length=16, choices=[(r, r) for r in ROLES])
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["joined_at"]
        constraints = [models.UniqueConstraint(fields=["course", "user"], name="one_membership_per_course")]

    def __str__(self):
        return f"{self.user} ({self.role}) in {self.course}"

    @property
    def is_instructor(self) -> bool:
        return self.role == INSTRUCTOR


class Invitation(models.Model):
    """An instructor asked someone, by username, to join as an instructor or a student: they
    become a member only when they accept it (``courses.actions.members.check_answer_invitation``).
    ``user`` is None when no one had the username: the instructor sees such an invitation as any
    other (their answer never says who exists), and no one can accept it (a name taken later does
    not inherit it). It lapses at ``expires_at``."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="invitations")
    username = models.CharField(max_length=150)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="course_invitations")
    role = models.CharField(max_length=16, choices=[(r, r) for r in ROLES])
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["course", "username"], name="one_invitation_per_name")]

    def __str__(self):
        return f"{self.username} invited as {self.role} to {self.course}"


class Ban(models.Model):
    """Someone an instructor removed from the course: its join code no longer lets them in (they
    are told so), until an instructor lets them back (lifts it) or invites them and they accept."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="bans")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="course_bans")
    banned_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["course", "user"], name="one_ban_per_course")]

    def __str__(self):
        return f"{self.user} removed from {self.course}"


class Assignment(models.Model):
    """``checks`` is hidden: Python run after a submission's code, in a process of its own (the
    checker, a sandboxed runner that no student code ever runs in), reporting named checks. It is
    sent to the executor in the grading task's message and shown to instructors;
    nothing a student can reach serializes it. So is ``reference_solution``: a solution that
    should get full marks, graded with the checks (with the starter code, which should not) each
    time either changes (``courses.actions.assignments.check_validate_assignment``)."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="assignments")
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)  # Markdown, rendered by snippets.markdown
    starter_code = models.TextField(blank=True)
    checks = models.TextField(blank=True)
    reference_solution = models.TextField(blank=True)
    device = models.CharField(max_length=40, default="cpu")
    # The runtime its runs and gradings use (runtimes/runtimes.toml), pinned when it is made, so
    # that the course's grades do not move when the site's default does.
    runtime = models.CharField(max_length=40, default=runtimes.FIRST)
    # Narrowing RUN_LIMITS only (playground.actions.runs.run_limits): {"wall_s": 20}.
    limits = models.JSONField(default=dict, blank=True)
    due_at = models.DateTimeField(null=True, blank=True)
    results_before_due = models.BooleanField(default=True)
    # The points of the checks the source declares (courses.checks.declared_checks).
    max_score = models.FloatField(default=0)
    # +1 each time the checks change: a submission graded by older checks can be regraded.
    checks_version = models.PositiveIntegerField(default=1)
    # +1 at each regrade; the gradings it queued carry its number (progress of the last one).
    regrades = models.PositiveIntegerField(default=0)
    # Why the last save that changed what is graded queued no validation (its runs were refused:
    # the instructor's budget, a full queue, no executor online); "" when it did.
    validation_skipped = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["due_at", "created_at"]

    def __str__(self):
        return self.title

    def get_absolute_url(self) -> str:
        return f"/assignments/{self.pk}/"

    def is_past_due(self, now=None) -> bool:
        return self.due_at is not None and (now or timezone.now()) > self.due_at

    def results_hidden_from_students(self, now=None) -> bool:
        return not self.results_before_due and self.due_at is not None and not self.is_past_due(now)


class Submission(models.Model):
    """Every submission is kept. Its result is that of its newest landed grading (``grading``);
    a regrade's grading replaces it only once it lands, so the earlier grade stays meanwhile."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="submissions")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    code = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    late = models.BooleanField(default=False)
    # The run of its first grading (the one the student watches).
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=16, choices=[(s, s) for s in GRADE_STATUSES], default=QUEUED)
    score = models.FloatField(null=True, blank=True)
    max_score = models.FloatField(null=True, blank=True)
    checks = models.JSONField(default=list, blank=True)  # [{name, passed, points, message}]
    message = models.TextField(blank=True)  # student-safe: why checks were not reached
    error = models.TextField(blank=True)  # instructors only: a check's traceback, why grading failed
    log = models.TextField(blank=True)  # instructors only: what the checks printed
    graded_at = models.DateTimeField(null=True, blank=True)
    grading = models.ForeignKey("Grading", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    regrading = models.BooleanField(default=False)  # a newer grading is pending
    # A check of its grade crashed (the checks' fault): the score is not final until a regrade.
    needs_regrade = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["assignment", "student", "-created_at"])]

    def __str__(self):
        return f"submission {self.pk} of {self.student} to {self.assignment}"


class Grading(models.Model):
    """One graded run of a submission (its first, or a regrade's), or of the assignment's
    reference solution or starter code (a validation: ``assignment`` set, no submission; a newer
    validation replaces it)."""

    kind = models.CharField(max_length=16, choices=[(k, k) for k in GRADING_KINDS], default=SUBMISSION)
    submission = models.ForeignKey(Submission, null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="gradings")
    assignment = models.ForeignKey(Assignment, null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="validations")
    run = models.OneToOneField(Run, on_delete=models.PROTECT, related_name="grading")
    checks_version = models.PositiveIntegerField()
    regrade = models.PositiveIntegerField(default=0)  # the assignment's regrade that queued it; 0: a submission
    # What the checks source declared when it was queued: [{name, points}] (the checks it does
    # not report, because the code ended before them, count as failed).
    declared = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=[(s, s) for s in GRADE_STATUSES], default=QUEUED)
    # True once the executor's result landed; a result made up because none came (the run was
    # lost or cancelled) leaves it False, and a real result arriving late still replaces it.
    reported = models.BooleanField(default=False)
    score = models.FloatField(null=True, blank=True)
    max_score = models.FloatField(null=True, blank=True)
    checks = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True)
    error = models.TextField(blank=True)
    log = models.TextField(blank=True)
    needs_regrade = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.CheckConstraint(
            condition=(models.Q(kind=SUBMISSION, submission__isnull=False, assignment__isnull=True)
                       | models.Q(kind__in=VALIDATION_KINDS, submission__isnull=True, assignment__isnull=False)),
            name="grading_of_a_submission_or_a_validation")]

    def __str__(self):
        if self.kind != SUBMISSION:
            return f"validation {self.pk} of assignment {self.assignment_id}'s {self.kind} ({self.status})"
        return f"grading {self.pk} of submission {self.submission_id} ({self.status})"


class CourseRun(models.Model):
    """A free run made on an assignment's page: the dashboard's feed and errors see it."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="course_run")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="runs")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="course_runs")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["assignment", "student", "-created_at"])]

    def __str__(self):
        return f"run {self.run_id} of {self.student} on {self.assignment}"
