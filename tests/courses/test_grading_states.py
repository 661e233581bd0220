"""How a submission's status and grade move, driven as the stack drives them: the recorder's
run_status_changed signal and recorder.record_grade with a result per the executor's contract.
(tests/courses/test_grading.py does the same through the live stack and the real sandbox.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from courses.grading import (
    do_grading_started, do_record_grade, do_settle_grading, do_settle_stale_gradings, grade_from_result,
)
from courses.models import Grading, Submission
from courses.receivers import on_run_status_changed
from playground.models import Run

from .helpers import CORRECT, DECLARED, MARKER, WRONG, result

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_grace(settings):
    """A run's end settles its grading at once (the stack waits COURSES_GRADE_GRACE_S first)."""
    settings.COURSES_GRADE_GRACE_S = 0


@pytest.fixture
def submission(assignment, student, executor_online):
    from courses.actions.submissions import do_submit

    return do_submit(assignment, student, CORRECT)


def run_moves(run_id, status: str, message: str = "") -> None:
    """What the recorder does when a run's status moves: store it, then send the signal."""
    fields = {"status": status, "message": message}
    if status not in ("queued", "running"):
        fields["finished_at"] = timezone.now()
    Run.objects.filter(pk=run_id).update(**fields)
    on_run_status_changed(sender=Run, run_id=str(run_id), status=status)


def fresh(submission) -> Submission:
    return Submission.objects.get(pk=submission.pk)


def test_queued_then_grading_then_graded(submission):
    assert fresh(submission).status == "queued"
    run_moves(submission.run_id, "running")
    assert fresh(submission).status == "grading"
    assert Grading.objects.get(submission=submission).status == "grading"
    do_record_grade(str(submission.run_id), result())
    graded = fresh(submission)
    assert (graded.status, graded.score, graded.max_score) == ("graded", 5.0, 5.0)
    assert graded.graded_at is not None and graded.grading.reported
    run_moves(submission.run_id, "succeeded")  # the run's end after its grade changes nothing
    assert fresh(submission).score == 5.0


def test_a_grade_that_lands_before_the_run_started_is_kept(submission):
    do_record_grade(str(submission.run_id), result())
    run_moves(submission.run_id, "running")
    assert fresh(submission).status == "graded"


def test_a_recorded_grade_is_not_recorded_twice(submission):
    do_record_grade(str(submission.run_id), result())
    do_record_grade(str(submission.run_id), result({"square of 3": False, "keeps the shape": False}))
    assert fresh(submission).score == 5.0


def test_a_grade_for_no_grading_is_dropped(submission):
    assert do_record_grade("00000000-0000-0000-0000-000000000000", result()) is None


def test_checks_the_code_never_reached_count_as_failed(submission):
    # The checks stopped midway (their time ran out while a call of the code hung).
    do_record_grade(str(submission.run_id), result({"square of 3": True}, student_status="timed_out",
                                                   outcome="incomplete"))
    graded = fresh(submission)
    assert (graded.score, graded.max_score) == (2.0, 5.0)
    assert graded.checks[1] == {"name": "keeps the shape", "passed": False, "points": 3.0,
                                "message": "not reached: the checks stopped before it", "crashed": False}
    assert graded.message == "Your code ran out of time; the checks it did not reach count as failed"


def test_a_crashing_submission_is_graded_with_its_score(submission):
    do_record_grade(str(submission.run_id), {"checks": [], "score": 0, "max_score": 0, "student_status": "failed",
                                             "error": "the code ended the run before the checks could run (failed)",
                                             "log": ""})
    graded = fresh(submission)
    assert (graded.status, graded.score, graded.max_score) == ("graded", 0.0, 5.0)
    assert [c["passed"] for c in graded.checks] == [False, False]
    assert graded.error.startswith("the code ended the run")


@pytest.mark.parametrize("status, words", [("lost", "lost"), ("cancelled", "cancelled")])
def test_a_run_that_ends_without_a_grade_is_graded_zero_saying_why(submission, status, words):
    run_moves(submission.run_id, "running")
    run_moves(submission.run_id, status, "the executor running this snippet stopped responding")
    graded = fresh(submission)
    assert (graded.status, graded.score, graded.max_score) == ("graded", 0.0, 5.0)
    assert f"the grading run ended {words}" in graded.message and "submit again" in graded.message
    assert f"no grading result came back: the run ended {status}" in graded.error
    assert graded.grading.reported is False


def test_a_real_grade_arriving_after_the_fallback_replaces_it(submission):
    run_moves(submission.run_id, "lost")
    assert fresh(submission).score == 0.0
    do_record_grade(str(submission.run_id), result())
    graded = fresh(submission)
    assert (graded.score, graded.message, graded.grading.reported) == (5.0, "", True)


def test_settling_waits_for_the_run_to_end(submission):
    grading = Grading.objects.get(submission=submission)
    do_settle_grading(grading.pk)
    assert fresh(submission).status == "queued"


def test_with_a_grace_the_run_end_leaves_the_grade_to_come(submission, settings):
    settings.COURSES_GRADE_GRACE_S = 3600  # a settle task is queued for an hour from now
    run_moves(submission.run_id, "succeeded")
    assert fresh(submission).status == "queued"
    do_record_grade(str(submission.run_id), result())
    assert fresh(submission).score == 5.0


def test_the_sweep_settles_gradings_whose_settle_was_lost(submission):
    Run.objects.filter(pk=submission.run_id).update(status="lost", finished_at=timezone.now() - timedelta(minutes=5))
    assert do_settle_stale_gradings() == [Grading.objects.get(submission=submission).pk]
    assert fresh(submission).status == "graded"
    assert do_settle_stale_gradings() == []


class TestRegradeOrder:
    @pytest.fixture
    def graded(self, submission):
        do_record_grade(str(submission.run_id), result({"square of 3": False, "keeps the shape": True}))
        return fresh(submission)

    def regrade(self, assignment) -> Grading:
        from courses.actions.submissions import do_regrade

        assert do_regrade(assignment) == 1
        return Grading.objects.order_by("-id").first()

    def test_a_regrade_keeps_the_earlier_grade_until_it_lands(self, graded, assignment):
        newer = self.regrade(assignment)
        run_moves(newer.run_id, "running")
        kept = fresh(graded)
        assert (kept.status, kept.score, kept.regrading) == ("graded", 3.0, True)
        do_record_grade(str(newer.run_id), result())
        assert (fresh(graded).score, fresh(graded).regrading) == (5.0, False)

    def test_an_older_grading_landing_late_does_not_replace_a_newer_one(self, graded, assignment):
        second, third = self.regrade(assignment), self.regrade(assignment)
        assert fresh(graded).regrading is True
        do_record_grade(str(third.run_id), result())
        # The second, still out, is older than what landed: nothing newer is pending.
        assert (fresh(graded).score, fresh(graded).regrading) == (5.0, False)
        do_record_grade(str(second.run_id), result({"square of 3": False, "keeps the shape": False}))
        assert (fresh(graded).score, fresh(graded).grading_id) == (5.0, third.pk)
        assert Grading.objects.get(pk=second.pk).score == 0.0  # kept on its grading

    def test_a_regrade_lost_on_the_way_keeps_nothing_pending(self, graded, assignment):
        newer = self.regrade(assignment)
        run_moves(newer.run_id, "lost")
        # The fallback is a grade like any other: the newest landed one shows, saying why.
        assert (fresh(graded).score, fresh(graded).regrading) == (0.0, False)

    def test_a_regrade_queues_only_each_students_latest(self, assignment, student, executor_online):
        from courses.actions.submissions import do_regrade, do_submit

        do_submit(assignment, student, WRONG)
        latest = do_submit(assignment, student, CORRECT)
        assert do_regrade(assignment) == 1
        assert Grading.objects.filter(regrade=1).get().submission_id == latest.pk

    def test_a_removed_students_work_is_not_regraded(self, assignment, course, student, executor_online):
        from courses.actions.members import do_remove_member
        from courses.actions.submissions import do_regrade, do_submit

        do_submit(assignment, student, CORRECT)
        do_remove_member(course.memberships.get(user=student))
        assert do_regrade(assignment) == 0


class TestResultCleaning:
    """A result comes from the executor; the web side turns it into a grade by the one rule
    (executor.runner.grades, whose table is tests/unit/test_grades.py)."""

    def test_the_score_is_the_sum_of_passed_checks_whatever_the_result_claims(self):
        grade = grade_from_result({**result({"square of 3": False, "keeps the shape": True}), "score": 1000,
                                   "max_score": 1}, DECLARED)
        assert (grade["score"], grade["max_score"]) == (3.0, 5.0)

    @pytest.mark.parametrize("bad", [None, "text", [], {"checks": "no"}, {"checks": [{"name": "square of 3",
                                                                                      "passed": True}]}])
    def test_a_garbled_result_is_no_score_and_says_so(self, bad):
        grade = grade_from_result(bad, DECLARED)
        assert (grade["score"], grade["max_score"], grade["outcome"]) == (0.0, 5.0, "interfered")
        assert "interfered with grading" in grade["error"] and "interfered" in grade["message"]

    def test_a_check_reported_under_a_declared_name_is_not_counted_twice(self):
        grade = grade_from_result(result(), DECLARED)
        assert [c["name"] for c in grade["checks"]] == ["square of 3", "keeps the shape"]

    def test_checks_with_computed_names_count_once_reported(self):
        grade = grade_from_result({"outcome": "checked", "checks": [
            {"name": f"case {i}", "passed": i % 2 == 0, "points": 1} for i in range(4)]}, [])
        assert (grade["score"], grade["max_score"]) == (2.0, 4.0)

    def test_the_student_message_never_quotes_the_error(self):
        grade = grade_from_result({**result(), "error": f"Traceback ... {MARKER}"}, DECLARED)
        assert MARKER not in grade["message"] and MARKER not in str(grade["checks"])


def test_starting_a_run_that_is_no_grading_does_nothing(assignment, student_client, executor_online):
    assert do_grading_started("00000000-0000-0000-0000-000000000000") is None
