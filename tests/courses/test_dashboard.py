"""The dashboard's snapshot: a cell per student and assignment, the feed, the class's common
errors and the score histograms, from what is in the database."""

from __future__ import annotations

import pytest
from django.utils import timezone

from courses.actions.members import do_join_course
from courses.actions.submissions import do_start_course_run, do_submit
from courses.dashboard import run_item, snapshot
from courses.grading import do_record_grade
from playground.models import Run, RunEvent

from .helpers import CORRECT, WRONG, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def cleo(course, django_user_model):
    user = django_user_model.objects.create_user("cleo", "cleo@example.com", "x")
    do_join_course(course, user)
    return user


def fail_with(run: Run, exc_type: str, line: int, message: str = "boom") -> None:
    RunEvent.objects.create(run=run, seq=2, type="error", data={
        "seq": 2, "type": "error", "exc_type": exc_type, "message": message, "line": line, "traceback": "..."})
    Run.objects.filter(pk=run.pk).update(status="failed", finished_at=timezone.now())


def test_an_empty_course(course, assignment, student):
    snap = snapshot(course)
    assert snap["students"] == [{"id": student.pk, "username": "sam"}]
    assert snap["assignments"] == [{"id": assignment.pk, "title": "Squares", "max_score": 5.0, "due": None}]
    assert snap["cells"] == {} and snap["errors"] == []
    # The feed a page open since would show: sam joined.
    assert [item | {"at": None} for item in snap["feed"]] == [
        {"kind": "member", "user": student.pk, "username": "sam", "role": "student", "at": None}]
    assert snap["histograms"] == {str(assignment.pk): [0] * 10}


def test_a_cell_shows_the_latest_submission_and_run(course, assignment, student, cleo, executor_online):
    first = do_submit(assignment, student, WRONG)
    do_record_grade(str(first.run_id), result({"square of 3": False, "keeps the shape": True}))
    latest = do_submit(assignment, student, CORRECT)
    free = do_start_course_run(assignment, cleo, "print(1)")
    cells = snapshot(course)["cells"]
    assert cells[f"{student.pk}:{assignment.pk}"] | {"at": None} == {
        "status": "queued", "score": None, "max_score": None, "late": False, "submission": latest.pk,
        "regrading": False, "needs_regrade": False, "run": str(latest.run_id), "run_status": "queued", "at": None}
    assert cells[f"{cleo.pk}:{assignment.pk}"]["status"] is None  # ran, never submitted
    assert cells[f"{cleo.pk}:{assignment.pk}"]["run"] == str(free.pk)


def test_a_free_run_after_a_submission_is_the_cells_run(course, assignment, student, executor_online):
    submission = do_submit(assignment, student, CORRECT)
    do_record_grade(str(submission.run_id), result())
    free = do_start_course_run(assignment, student, "print(2)")
    cell = snapshot(course)["cells"][f"{student.pk}:{assignment.pk}"]
    assert (cell["status"], cell["score"], cell["run"]) == ("graded", 5.0, str(free.pk))


def test_the_feed_is_newest_first(course, assignment, student, cleo, executor_online):
    run = do_start_course_run(assignment, student, "1/0")
    fail_with(run, "ZeroDivisionError", 1)
    submission = do_submit(assignment, cleo, CORRECT)
    feed = snapshot(course)["feed"]
    assert [item["kind"] for item in feed] == ["submission", "run", "run", "member", "member"]
    assert feed[0]["submission"] == submission.pk and feed[0]["student"] == cleo.pk
    assert feed[2] | {"at": None} == {"kind": "run", "run": str(run.pk), "student": student.pk,
                                      "assignment": assignment.pk, "submission": None, "status": "failed",
                                      "exc_type": "ZeroDivisionError", "line": 1, "at": None}


def test_a_reloaded_feed_has_what_the_live_one_had(course, assignment, student, cleo, executor_online):
    """What the socket sent as it happened (a submission's run, its grade, a student joining) is
    there again after a reload, rebuilt from the rows: not only the submissions and free runs."""
    submission = do_submit(assignment, student, WRONG)
    fail_with(Run.objects.get(pk=submission.run_id), "NameError", 2)
    do_record_grade(str(submission.run_id), result({"square of 3": False, "keeps the shape": True}))
    feed = snapshot(course)["feed"]
    ran = [item for item in feed if item["kind"] == "run"]
    assert len(ran) == 1 and ran[0]["submission"] == submission.pk and ran[0]["status"] == "failed"
    assert (ran[0]["exc_type"], ran[0]["line"]) == ("NameError", 2)
    graded = [item for item in feed if item["kind"] == "submission"]
    assert len(graded) == 1 and graded[0]["status"] == "graded" and graded[0]["score"] == 3.0
    joined = [(item["username"], item["role"]) for item in feed if item["kind"] == "member"]
    assert joined == [("cleo", "student"), ("sam", "student")]  # newest first
    assert feed.index(graded[0]) < feed.index(ran[0])


def test_common_errors_group_by_type_and_line(course, assignment, student, cleo, executor_online):
    for user, exc_type, line in [(student, "NameError", 3), (student, "NameError", 3), (cleo, "NameError", 3),
                                 (cleo, "TypeError", 7)]:
        fail_with(do_start_course_run(assignment, user, "x"), exc_type, line)
    submission = do_submit(assignment, cleo, "x")  # a submission's run counts too
    fail_with(Run.objects.get(pk=submission.run_id), "TypeError", 7)
    errors = snapshot(course)["errors"]
    assert [(e["exc_type"], e["line"], e["count"], e["students"]) for e in errors] == [
        ("NameError", 3, 3, 2), ("TypeError", 7, 2, 1)]
    assert errors[0]["assignment"] == assignment.pk and errors[0]["message"] == "boom"


def test_histograms_count_each_students_latest_graded_score(course, assignment, student, cleo, executor_online):
    for user, passed in [(student, {"square of 3": True, "keeps the shape": True}),
                         (cleo, {"square of 3": True, "keeps the shape": False})]:
        submission = do_submit(assignment, user, CORRECT)
        do_record_grade(str(submission.run_id), result(passed))
    do_submit(assignment, cleo, WRONG)  # not graded yet: cleo's 2/5 stays
    histogram = snapshot(course)["histograms"][str(assignment.pk)]
    assert histogram[9] == 1 and histogram[4] == 1 and sum(histogram) == 2


def test_instructors_and_removed_students_are_not_rows(course, assignment, instructor, student, executor_online):
    from courses.actions.members import do_remove_member

    do_submit(assignment, instructor, CORRECT)
    do_remove_member(course.memberships.get(user=student))
    snap = snapshot(course)
    assert snap["students"] == [] and snap["cells"] == {} and snap["feed"] == []


def test_a_run_item_of_a_failed_run_names_its_error(assignment, student, executor_online):
    run = do_start_course_run(assignment, student, "1/0")
    fail_with(run, "ZeroDivisionError", 1)
    run.refresh_from_db()
    item = run_item(run, student.pk, assignment.pk)
    assert (item["status"], item["exc_type"], item["line"]) == ("failed", "ZeroDivisionError", 1)
