"""The one grade rule (executor/runner/grades.py), which the executor, ``executor.local`` and the
courses app all use: a table of results and the grade each gives."""

from __future__ import annotations

import math

import pytest

from executor.runner import grades, protocol

DECLARED = [{"name": "a", "points": 2.0}, {"name": "b", "points": 3.0}]


def check(name, passed=True, points=1.0, message=""):
    return {"name": name, "passed": passed, "points": points, "message": message}


# (what happened, reported checks, outcome, student status) → (score, max score, {name: (passed, points)})
TABLE = [
    ("every declared check passes", [check("a", points=2), check("b", points=3)], "checked", "succeeded",
     (5.0, 5.0, {"a": (True, 2.0), "b": (True, 3.0)})),
    ("a declared check is missing", [check("a", points=2)], "checked", "succeeded",
     (2.0, 5.0, {"a": (True, 2.0), "b": (False, 3.0)})),
    ("points that are not a number count 0", [check("x", points="10"), check("y", points=True),
                                              check("z", points=None)], "checked", "succeeded",
     (0.0, 5.0, {"x": (True, 0.0), "y": (True, 0.0), "z": (True, 0.0), "a": (False, 2.0), "b": (False, 3.0)})),
    ("negative and non-finite points count 0", [check("x", points=-4), check("y", points=math.inf),
                                                check("z", points=math.nan)], "checked", "succeeded",
     (0.0, 5.0, {"x": (True, 0.0), "y": (True, 0.0), "z": (True, 0.0), "a": (False, 2.0), "b": (False, 3.0)})),
    ("a declared check is worth its declared points, whatever it claims", [check("a", points=100),
                                                                          check("b", points=0)], "checked", "succeeded",
     (5.0, 5.0, {"a": (True, 2.0), "b": (True, 3.0)})),
    ("a computed check is capped", [check("big", points=1e9)], "checked", "succeeded",
     (1000.0, 1005.0, {"big": (True, 1000.0), "a": (False, 2.0), "b": (False, 3.0)})),
    ("only a declared check's first report counts", [check("a", False, 2), check("a", True, 2),
                                                     check("b", points=3)], "checked", "succeeded",
     (3.0, 5.0, {"a": (False, 2.0), "b": (True, 3.0)})),
    ("only True passes", [check("a", "yes", 2), check("b", 1, 3)], "checked", "succeeded",
     (0.0, 5.0, {"a": (False, 2.0), "b": (False, 3.0)})),
    ("the student's code crashed; the checks still ran", [check("a", points=2)], "checked", "failed",
     (2.0, 5.0, {"a": (True, 2.0), "b": (False, 3.0)})),
    ("a timeout before the checks", [], "not_run", "timed_out",
     (0.0, 5.0, {"a": (False, 2.0), "b": (False, 3.0)})),
    ("the checks ran out of time midway", [check("a", points=2)], "incomplete", "succeeded",
     (2.0, 5.0, {"a": (True, 2.0), "b": (False, 3.0)})),
    ("a forgery", [check("a", points=2), check("b", points=3)], "interfered", "succeeded",
     (0.0, 5.0, {"a": (False, 2.0), "b": (False, 3.0)})),
    ("an unknown outcome is a forgery", [check("a", points=2)], "perfect", "succeeded",
     (0.0, 5.0, {"a": (False, 2.0), "b": (False, 3.0)})),
    ("what is not a check is dropped", ["a", None, 7, {"passed": True, "points": 9}, check("a", points=2)],
     "checked", "succeeded", (2.0, 5.0, {"a": (True, 2.0), "b": (False, 3.0)})),
]


@pytest.mark.parametrize("what, reported, outcome, status, expected", TABLE, ids=[row[0] for row in TABLE])
def test_the_grade_of(what, reported, outcome, status, expected):
    grade = grades.grade(reported, DECLARED, outcome=outcome, student_status=status)
    score, max_score, checks = expected
    assert (grade["score"], grade["max_score"]) == (score, max_score), grade
    assert {c["name"]: (c["passed"], c["points"]) for c in grade["checks"]} == checks, grade


def test_the_messages_say_why_without_the_checks():
    assert grades.grade([], DECLARED, outcome="not_run", student_status="timed_out")["checks"][0]["message"] \
        == "not reached: your code ran out of time"
    forged = grades.grade([check("a", points=2)], DECLARED, outcome="interfered", student_status="succeeded")
    assert forged["message"] == "Not graded: the submission interfered with grading"
    assert {c["message"] for c in forged["checks"]} == {"the submission interfered with grading"}
    assert "interfered with grading" in forged["error"]
    cut = grades.grade([check("n" * 500, message="m" * 5000)], [], outcome="checked")["checks"][0]
    assert len(cut["name"]) == grades.CHECK_NAME_MAX and len(cut["message"]) == grades.CHECK_MESSAGE_MAX


def test_the_executor_builds_the_result_with_the_protocol():
    fields = protocol.grade_fields([check("a")], "checked", student_status="succeeded", error=None, log="a\x00b")
    assert fields == {"checks": [check("a")], "outcome": "checked", "student_status": "succeeded", "error": None,
                      "log": "a\u2400b"}
    with pytest.raises(ValueError):
        protocol.grade_fields([], "full marks", student_status=None, error=None)


def test_declared_checks_are_the_same_on_both_sides():
    from courses.checks import declared_checks

    source = 'check("a", ok, 2)\nwith check("b", points=3):\n    pass\ncheck(f"c{i}", True)\n'
    assert declared_checks(source) == grades.declared_checks(source) == DECLARED


def test_a_check_whose_code_crashed_fails_and_the_grade_needs_a_regrade():
    crashed = {"name": "a", "passed": True, "points": 2, "message": "TypeError at line 3", "crashed": True}
    grade = grades.grade([crashed, check("b", points=3)], DECLARED, outcome="checked", student_status="succeeded")
    assert grade["needs_regrade"] is True and (grade["score"], grade["max_score"]) == (3.0, 5.0)
    a = grade["checks"][0]
    assert (a["passed"], a["crashed"], a["message"]) == (False, True, grades.CHECK_CRASHED_MESSAGE)
    assert grade["message"].startswith("Provisional") and "'a'" in grade["error"].splitlines()[0]
    # The checker's words for it are the same report.
    said = grades.check_result(check("a", False, 2, grades.CHECK_CRASHED_MESSAGE))
    assert said["crashed"] is True
    # A forgery is no score, and no regrade makes it one.
    forged = grades.grade([crashed], DECLARED, outcome="interfered", student_status="succeeded")
    assert forged["needs_regrade"] is False and not any(c["crashed"] for c in forged["checks"])
    assert grades.grade([check("a", points=2)], DECLARED, outcome="checked")["needs_regrade"] is False
