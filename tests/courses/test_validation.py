"""An assignment's reference solution and its validation: saving an assignment (through the API,
as its page does) grades the reference solution and the starter code with the checks, in graded
runs like a submission's, and the instructor sees both scores before anyone submits, a reference
that misses points flagged; the newest validation replaces the older. The reference is hidden as
the checks are. The first tests need only the database and Redis (a result lands as the recorder
lands it); the last runs the live stack and the sandbox."""

from __future__ import annotations

import time

import pytest

from courses.grading import do_record_grade
from courses.models import Grading

from .helpers import CHECKS, CORRECT, MARKER, STARTER, WRONG, patch, post, result

# In the reference solution only: a response or page a student gets that holds it leaked it.
REFERENCE_MARKER = "REFERENCE_SOLUTION_8812"
REFERENCE = f"# {REFERENCE_MARKER}\n" + CORRECT
WRONG_REFERENCE = f"# {REFERENCE_MARKER}\n" + WRONG


def create(client, course, **fields) -> dict:
    body = {"title": "Squares", "starter_code": STARTER, "checks": CHECKS, "reference_solution": REFERENCE, **fields}
    response = post(client, f"/api/courses/{course.pk}/assignments", body)
    assert response.status_code == 201, response.content
    return response.json()


def validations(assignment_id) -> dict[str, Grading]:
    return {g.kind: g for g in Grading.objects.filter(assignment_id=assignment_id).select_related("run")}


@pytest.mark.django_db
class TestSaving:
    def test_it_grades_the_reference_and_the_starter_code_with_the_checks(self, course, instructor_client,
                                                                         executor_online):
        made = create(instructor_client, course)
        assert made["reference_solution"] == REFERENCE
        assert {k: (v or {}).get("status") for k, v in made["validation"].items()} == {
            "reference": "queued", "starter": "queued", "skipped": None}
        runs = validations(made["id"])
        assert (runs["reference"].run.code, runs["starter"].run.code) == (REFERENCE, STARTER)
        assert all(g.submission_id is None and g.checks_version == 1 for g in runs.values())
        # Graded runs of no one's: they are the instructor's, and no course's dashboard shows them.
        assert all(g.run.owner_id is None for g in runs.values())

    def test_a_reference_missing_points_is_flagged_and_a_starter_with_every_point_too(
            self, course, instructor_client, executor_online):
        made = create(instructor_client, course, reference_solution=WRONG_REFERENCE, starter_code=CORRECT)
        runs = validations(made["id"])
        do_record_grade(str(runs["reference"].run_id), result({"square of 3": False, "keeps the shape": True}))
        do_record_grade(str(runs["starter"].run_id), result())
        validation = instructor_client.get(f"/api/assignments/{made['id']}").json()["validation"]
        reference, starter = validation["reference"], validation["starter"]
        assert (reference["status"], reference["score"], reference["max_score"]) == ("graded", 3.0, 5.0)
        assert reference["ok"] is False and reference["full_marks"] is False
        assert [c["name"] for c in reference["checks"] if not c["passed"]] == ["square of 3"]
        assert (starter["score"], starter["full_marks"], starter["ok"]) == (5.0, True, False)

    def test_a_good_reference_and_starter_are_ok(self, course, instructor_client, executor_online):
        made = create(instructor_client, course)
        runs = validations(made["id"])
        do_record_grade(str(runs["reference"].run_id), result())
        do_record_grade(str(runs["starter"].run_id), result({"square of 3": False, "keeps the shape": False}))
        validation = instructor_client.get(f"/api/assignments/{made['id']}").json()["validation"]
        assert (validation["reference"]["ok"], validation["reference"]["score"]) == (True, 5.0)
        assert (validation["starter"]["ok"], validation["starter"]["score"]) == (True, 0.0)

    def test_only_a_change_to_what_is_graded_validates_again(self, course, instructor_client, executor_online):
        made = create(instructor_client, course)
        first = {k: g.pk for k, g in validations(made["id"]).items()}
        url = f"/api/assignments/{made['id']}"
        retitled = patch(instructor_client, url, {"title": "Squares again", "description": "Now in words."})
        assert retitled.status_code == 200
        assert {k: g.pk for k, g in validations(made["id"]).items()} == first
        for change in ({"reference_solution": WRONG_REFERENCE}, {"starter_code": "def square(x):\n    return 0\n"},
                       {"checks": CHECKS + "\n# again\n"}):
            before = validations(made["id"])
            assert patch(instructor_client, url, change).status_code == 200
            after = validations(made["id"])
            # The newest validation replaces the older one.
            assert set(after) == {"reference", "starter"}
            assert not {g.pk for g in before.values()} & {g.pk for g in after.values()}
        assert after["reference"].run.code == WRONG_REFERENCE and after["reference"].checks_version == 2
        # A result of a replaced validation that still lands is dropped.
        assert do_record_grade(str(before["reference"].run_id), result()) is None
        assert validations(made["id"])["reference"].status == "queued"

    def test_without_a_reference_only_the_starter_code_is_graded(self, course, instructor_client, executor_online):
        made = create(instructor_client, course, reference_solution="")
        assert made["validation"]["reference"] is None and made["validation"]["starter"]["status"] == "queued"

    def test_without_checks_there_is_nothing_to_validate(self, course, instructor_client, executor_online):
        made = create(instructor_client, course, checks="")
        assert made["validation"] is None and not validations(made["id"])

    def test_the_save_stands_and_says_why_when_no_executor_is_online(self, course, instructor_client):
        made = create(instructor_client, course, device="gpu")  # no GPU worker beats in these tests
        assert made["validation"] == {"reference": None, "starter": None,
                                      "skipped": made["validation"]["skipped"]}
        assert "no gpu executor is online" in made["validation"]["skipped"]
        assert not validations(made["id"])


@pytest.mark.django_db
def test_a_student_never_gets_the_reference_solution_nor_its_validation(course, instructor_client, student_client,
                                                                       executor_online):
    made = create(instructor_client, course)
    runs = validations(made["id"])
    do_record_grade(str(runs["reference"].run_id), result())
    seen = student_client.get(f"/api/assignments/{made['id']}")
    assert seen.status_code == 200
    assert not {"reference_solution", "validation", "check_errors", "checks"} & set(seen.json())
    pages = [seen.content.decode()] + [student_client.get(url).content.decode() for url in (
        f"/assignments/{made['id']}/", f"/courses/{course.pk}/", f"/api/courses/{course.pk}")]
    assert not [p[:200] for p in pages if REFERENCE_MARKER in p or MARKER in p]
    # The instructor's page renders neither either: its script asks the API.
    assert REFERENCE_MARKER not in instructor_client.get(f"/assignments/{made['id']}/").content.decode()


@pytest.mark.django_db
def test_a_validation_run_is_its_instructors_alone_even_to_whoever_holds_its_id(
        course, instructor_client, student_client, outsider_client, executor_online):
    from django.test import Client

    made = create(instructor_client, course)
    runs = validations(made["id"])
    for kind in ("reference", "starter"):
        path = f"/api/runs/{runs[kind].run_id}"
        assert instructor_client.get(path).status_code == 200
        for someone in (student_client, outsider_client, Client()):
            response = someone.get(path)
            assert response.status_code == 404 and REFERENCE_MARKER not in response.content.decode()


# On the live stack: the validation's graded runs land ----------------------------------------------

def wait_validated(client, assignment_id: int, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        validation = client.get(f"/api/assignments/{assignment_id}").json()["validation"]
        runs = [r for r in (validation["reference"], validation["starter"]) if r]
        if runs and all(r["status"] == "graded" for r in runs):
            return validation
        assert time.monotonic() < deadline, validation
        time.sleep(0.3)


def test_saving_validates_in_the_sandbox_and_the_newest_validation_replaces_the_older(
        live_stack, course, instructor_client):
    made = create(instructor_client, course)
    validation = wait_validated(instructor_client, made["id"])
    reference, starter = validation["reference"], validation["starter"]
    assert (reference["score"], reference["max_score"], reference["ok"]) == (5.0, 5.0, True), reference
    assert (starter["score"], starter["max_score"], starter["ok"]) == (0.0, 5.0, True), starter
    assert MARKER in reference["log"]  # what the checks printed, the instructor's

    assert patch(instructor_client, f"/api/assignments/{made['id']}",
                 {"reference_solution": WRONG_REFERENCE}).status_code == 200
    validation = wait_validated(instructor_client, made["id"])
    reference = validation["reference"]
    assert (reference["score"], reference["ok"], reference["full_marks"]) == (3.0, False, False), reference
    assert [c["name"] for c in reference["checks"] if not c["passed"]] == ["square of 3"]
    assert validation["starter"]["ok"] is True
