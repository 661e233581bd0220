"""A check that crashes is the instructor's error, never the student's grade: on the live stack
(tests/conftest.py: the executor, the sandboxed checker, the recorder, daphne), the grade says
the check could not run and needs a regrade, the instructor reads the traceback on the
assignment's API and on the dashboard's socket at once, and a regrade after the fix makes the
grade final. What the student's own code did stays the student's."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

from websockets.sync.client import connect

from courses.actions.assignments import do_create_assignment
from courses.models import Submission

from .helpers import CORRECT, STARTER, bearer, make_token, patch, post
from .test_grading import GRADED_WITHIN_S, student_view, submit, wait_graded

# The helper above the checks calls what no one defines (a typo of the instructor's): the check
# that needs `expected` cannot run, whatever the student wrote.
HELPER_CRASHES = """
from jaxplay.grading import allclose, check
expected = undefined_helper(3)
check("value", allclose(square(3.0), expected), 2)
check("shape", allclose(square(1.0), 1.0), 1)
"""
HELPER_FIXED = HELPER_CRASHES.replace("undefined_helper(3)", "3.0 ** 2")
# A declared check whose own code raises (len of a number), whatever the student returned.
CHECK_CRASHES = """
from jaxplay.grading import allclose, check
check("value", allclose(square(3.0), 9.0) and len(9.0) > 0, 2)
check("shape", allclose(square(1.0), 1.0), 1)
"""
CHECK_FIXED = CHECK_CRASHES.replace(" and len(9.0) > 0", "")
# What the student reads of a check that could not run.
CHECK_CRASHED_MESSAGE = "this check could not run; your instructor has been told"


@contextmanager
def dashboard(live_stack, course, instructor):
    """The course's dashboard socket, as an instructor's script opens it, past its snapshot."""
    with connect(f"{live_stack.ws_url}/ws/courses/{course.pk}/",
                 additional_headers={"Authorization": bearer(make_token(instructor))["HTTP_AUTHORIZATION"]},
                 open_timeout=10) as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "snapshot"
        yield ws


def wait_for_item(ws, kind: str, submission_id: int, timeout: float = GRADED_WITHIN_S) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        message = json.loads(ws.recv(timeout=max(deadline - time.monotonic(), 0.1)))
        item = message.get("item") or {}
        if item.get("kind") == kind and item.get("submission") == submission_id:
            return item


def regrade(instructor_client, assignment) -> None:
    response = post(instructor_client, f"/api/assignments/{assignment.pk}/regrade")
    assert response.status_code == 202, response.content
    deadline = time.monotonic() + GRADED_WITHIN_S
    while True:
        progress = instructor_client.get(f"/api/assignments/{assignment.pk}").json()["regrade"]
        if progress["done"] == progress["queued"]:
            return
        assert time.monotonic() < deadline, progress
        time.sleep(0.2)


def assert_the_instructor_is_told(live_stack, course, instructor_client, assignment, submission_id, item, words):
    """The traceback on the assignment's API, the submission's and the dashboard's item alike."""
    detail = instructor_client.get(f"/api/assignments/{assignment.pk}").json()
    crash = detail["check_errors"]
    assert crash["submissions"] == 1 and crash["checks"] == ["value"] and crash["submission"] == submission_id
    submission = instructor_client.get(f"/api/submissions/{submission_id}").json()
    for text in (crash["error"], item["error"], submission["error"]):
        assert "Traceback" in text and all(w in text for w in words), text
    assert item["checks"] == ["value"] and item["assignment"] == assignment.pk
    snapshot = instructor_client.get(f"/api/courses/{course.pk}/dashboard").json()
    assert [e["assignment"] for e in snapshot["check_errors"]] == [assignment.pk]


def test_a_helper_that_crashes_is_the_instructors_until_the_fixed_checks_regrade(
        live_stack, course, instructor, instructor_client, student_client):
    assignment = do_create_assignment(course, title="Squares", starter_code=STARTER, checks=HELPER_CRASHES)
    with dashboard(live_stack, course, instructor) as ws:
        submission_id = submit(student_client, assignment, CORRECT)
        item = wait_for_item(ws, "check_error", submission_id)
    wait_graded(submission_id)

    body = student_view(student_client, submission_id)
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["value"] == {"name": "value", "passed": False, "points": 2.0, "message": CHECK_CRASHED_MESSAGE,
                               "crashed": True}
    assert checks["shape"]["passed"] is True and checks["shape"]["crashed"] is False
    # Not a final score: the grade says so, in the API and on the student's pages.
    assert body["needs_regrade"] is True and body["message"].startswith("Provisional")
    assert "undefined_helper" not in json.dumps(body)  # nothing of the checks reaches the student
    course_page = student_client.get(f"/courses/{course.pk}/").content.decode()
    assert "provisional" in course_page and "undefined_helper" not in course_page

    assert_the_instructor_is_told(live_stack, course, instructor_client, assignment, submission_id, item,
                                  ("undefined_helper", "'expected' is not defined", "line 3 of the checks"))

    # The instructor fixes the checks and regrades: the grade is final, and full.
    assert patch(instructor_client, f"/api/assignments/{assignment.pk}", {"checks": HELPER_FIXED}).status_code == 200
    regrade(instructor_client, assignment)
    body = student_view(student_client, submission_id)
    assert (body["score"], body["max_score"], body["needs_regrade"]) == (3.0, 3.0, False)
    assert all(c["passed"] and not c["crashed"] for c in body["checks"]) and body["message"] == ""
    assert instructor_client.get(f"/api/assignments/{assignment.pk}").json()["check_errors"] is None
    assert "provisional" not in student_client.get(f"/courses/{course.pk}/").content.decode()


def test_a_check_whose_own_code_raises_could_not_run(live_stack, course, instructor, instructor_client,
                                                     student_client):
    assignment = do_create_assignment(course, title="Squares", starter_code=STARTER, checks=CHECK_CRASHES)
    with dashboard(live_stack, course, instructor) as ws:
        submission_id = submit(student_client, assignment, CORRECT)
        item = wait_for_item(ws, "check_error", submission_id)
    submission = wait_graded(submission_id)[submission_id]
    assert submission.needs_regrade and submission.grading.needs_regrade
    body = student_view(student_client, submission_id)
    assert {c["name"]: (c["passed"], c["message"]) for c in body["checks"]} == {
        "value": (False, CHECK_CRASHED_MESSAGE), "shape": (True, "")}
    assert body["needs_regrade"] is True and "TypeError" not in json.dumps(body)
    assert_the_instructor_is_told(live_stack, course, instructor_client, assignment, submission_id, item,
                                  ("TypeError", "len(9.0)"))

    assert patch(instructor_client, f"/api/assignments/{assignment.pk}", {"checks": CHECK_FIXED}).status_code == 200
    regrade(instructor_client, assignment)
    assert Submission.objects.filter(pk=submission_id, needs_regrade=False, score=3.0, max_score=3.0).exists()


def test_the_students_own_errors_stay_the_students(live_stack, course, instructor, instructor_client, student_client):
    assignment = do_create_assignment(course, title="Squares", starter_code=STARTER, checks=CHECK_FIXED)
    with dashboard(live_stack, course, instructor) as ws:
        raises = submit(student_client, assignment, "def square(x):\n    return {}[x]\n")
        nothing = submit(student_client, assignment, "print('no square here')\n")
        seen = []
        while {raises, nothing} - {i["submission"] for i in seen if i.get("status") == "graded"}:
            item = json.loads(ws.recv(timeout=GRADED_WITHIN_S))["item"]
            if item.get("kind") in ("submission", "check_error"):
                seen.append(item)
    assert not [i for i in seen if i["kind"] == "check_error"], seen
    wait_graded(raises, nothing)
    body = student_view(student_client, raises)
    assert {c["message"] for c in body["checks"]} == {"square raised KeyError at line 2 of your code"}
    assert (body["score"], body["needs_regrade"]) == (0.0, False)
    assert not any(c["crashed"] for c in body["checks"])
    body = student_view(student_client, nothing)
    assert {c["message"] for c in body["checks"]} == {"your code does not define square"}
    assert body["needs_regrade"] is False
    assert instructor_client.get(f"/api/assignments/{assignment.pk}").json()["check_errors"] is None
