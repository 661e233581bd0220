"""What courses do when a run's status moves (``playground.signals.run_status_changed``, sent by
the recorder after its commit): a grading's run (a submission's or a validation's) moves its
grading along, and every run of a course (free runs, submissions' first runs) shows up on the
course's dashboards."""

from __future__ import annotations

from django.dispatch import receiver

from executor import events as ev
from playground.models import run_facts
from playground.signals import run_status_changed

from . import grading as gradings
from .dashboard import broadcast, run_item
from .models import GRADED, CourseRun, Grading
from .tasks import settle_grading


@receiver(run_status_changed, dispatch_uid="courses.run_status_changed")
def on_run_status_changed(sender, run_id: str, status: str, run: dict | None = None, **kwargs) -> None:
    # Most runs are no course's: the run's facts say so (two joined lookups were most of the
    # recorder's work for a print(1)).
    run = run or run_facts(run_id) or {}
    if run.get("grading") is None and run.get("course_run") is None:
        return
    grading = Grading.objects.select_related("run", "submission__assignment").filter(run_id=run_id).first()
    if grading is not None:
        if status == ev.STATUS_RUNNING:
            gradings.do_grading_started(run_id)
        elif status in ev.TERMINAL_STATUSES:
            do_grading_run_ended(grading)
        submission = grading.submission
        if submission is None:  # a validation's run: no student's doing
            return
        if submission.run_id == grading.run_id:  # a regrade's runs are not the student's doing
            broadcast(submission.assignment.course_id,
                      run_item(grading.run, submission.student_id, submission.assignment_id, submission.pk))
        return
    course_run = CourseRun.objects.select_related("run", "assignment").filter(run_id=run_id).first()
    if course_run is not None:
        broadcast(course_run.assignment.course_id, run_item(course_run.run, course_run.student_id,
                                                            course_run.assignment_id))


def do_grading_run_ended(grading: Grading) -> None:
    """The grading's run ended: its result is on its way (the executor sends it first) or will
    never come. Settle it after the grace (``grading.do_settle_grading``, as a recorder task)
    unless it lands meanwhile."""
    if grading.status == GRADED:
        return
    grace = gradings.grade_grace_s()
    if grace <= 0:
        gradings.do_settle_grading(grading.pk)
        return
    settle_grading.apply_async(args=[grading.pk], countdown=grace)
