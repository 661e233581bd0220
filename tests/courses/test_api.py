"""The courses API, tried by each of the three people (and the anonymous): what each may do, the
404 a stranger gets everywhere, and what a student's responses never hold (the checks)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from courses.actions.assignments import do_create_assignment
from courses.actions.courses import do_archive_course
from courses.actions.members import do_join_course, do_set_member
from courses.grading import do_record_grade
from courses.models import Assignment, CourseRun, Grading, Invitation, Membership, Submission
from playground.models import Run, RunEvent

from .conftest import client_of
from .helpers import CHECKS, CORRECT, MARKER, WRONG, bearer, make_token, patch, post, result

pytestmark = pytest.mark.django_db


def submit(client, assignment, code=CORRECT):
    response = post(client, f"/api/assignments/{assignment.pk}/submissions", {"code": code})
    assert response.status_code == 201, response.content
    return Submission.objects.get(pk=response.json()["id"])


# Courses ------------------------------------------------------------------------------------------

class TestCreateAndList:
    def test_a_signed_in_person_creates_a_course_and_teaches_it(self, outsider_client, outsider):
        response = post(outsider_client, "/api/courses", {"title": "  Autodiff  "})
        assert response.status_code == 201
        body = response.json()
        assert body["title"] == "Autodiff" and body["role"] == "instructor"
        assert len(body["join_code"]) == 8 and set(body["join_code"]) <= set("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        assert body["join_url"] == f"/courses/join/{body['join_code']}"
        assert Membership.objects.get(course_id=body["id"], user=outsider).role == "instructor"

    def test_the_anonymous_cannot_create_or_list(self, client):
        assert post(client, "/api/courses", {"title": "x"}).status_code == 401
        assert client.get("/api/courses").status_code == 401

    @pytest.mark.parametrize("body", [{"title": ""}, {"title": "  "}, {}, {"title": 3}, {"title": "x" * 201}, [1]])
    def test_a_course_needs_a_title(self, instructor_client, body):
        response = post(instructor_client, "/api/courses", body)
        assert response.status_code == 400
        assert "error" in response.json()

    def test_each_person_lists_their_own_courses(self, course, instructor_client, student_client, outsider_client):
        assert instructor_client.get("/api/courses").json()["courses"] == [
            {"id": course.pk, "title": "JAX 101", "role": "instructor", "archived": False,
             "url": f"/courses/{course.pk}/"}]
        assert student_client.get("/api/courses").json()["courses"][0]["role"] == "student"
        assert outsider_client.get("/api/courses").json()["courses"] == []


class TestJoin:
    def test_a_student_joins_with_the_code_as_typed(self, course, outsider_client, outsider):
        code = course.join_code.lower()
        response = post(outsider_client, "/api/courses/join", {"code": f" {code[:4]}-{code[4:]} "})
        assert response.status_code == 200
        assert response.json() == {"id": course.pk, "title": "JAX 101", "role": "student", "archived": False,
                                   "url": f"/courses/{course.pk}/"}
        assert Membership.objects.get(course=course, user=outsider).role == "student"

    def test_joining_again_changes_nothing(self, course, instructor_client, student_client):
        assert post(student_client, "/api/courses/join", {"code": course.join_code}).json()["role"] == "student"
        assert post(instructor_client, "/api/courses/join", {"code": course.join_code}).json()["role"] == "instructor"
        assert Membership.objects.filter(course=course).count() == 2

    @pytest.mark.parametrize("code", ["ZZZZZZZZ", "", "0OIL1", "x" * 60])
    def test_a_wrong_code_is_not_found(self, course, outsider_client, code):
        response = post(outsider_client, "/api/courses/join", {"code": code})
        assert response.status_code == 404
        assert "JAX 101" not in response.content.decode()

    def test_a_code_is_required(self, outsider_client):
        assert post(outsider_client, "/api/courses/join", {}).status_code == 400

    def test_the_anonymous_cannot_join(self, course, client):
        assert post(client, "/api/courses/join", {"code": course.join_code}).status_code == 401

    def test_an_archived_course_takes_no_one_new(self, course, outsider_client, student_client):
        do_archive_course(course)
        assert post(outsider_client, "/api/courses/join", {"code": course.join_code}).status_code == 409
        assert post(student_client, "/api/courses/join", {"code": course.join_code}).status_code == 200

    def test_guessing_codes_is_rate_limited(self, course, outsider_client):
        for _ in range(30):
            post(outsider_client, "/api/courses/join", {"code": "ZZZZZZZZ"})
        response = post(outsider_client, "/api/courses/join", {"code": course.join_code})
        assert response.status_code == 429 and response["Retry-After"]


class TestCourseDetail:
    def test_the_instructor_sees_the_code_and_the_members(self, course, assignment, instructor_client):
        body = instructor_client.get(f"/api/courses/{course.pk}").json()
        assert body["join_code"] == course.join_code and body["join_url"].endswith(course.join_code)
        assert [(m["username"], m["role"]) for m in body["members"]] == [("ines", "instructor"), ("sam", "student")]
        assert [a["id"] for a in body["assignments"]] == [assignment.pk]
        assert body["assignments"][0]["max_score"] == 5.0

    def test_a_student_sees_assignments_but_not_the_code_or_members(self, course, assignment, student_client):
        body = student_client.get(f"/api/courses/{course.pk}").json()
        assert body["role"] == "student"
        assert "join_code" not in body and "members" not in body
        assert body["assignments"][0]["title"] == "Squares" and body["assignments"][0]["mine"] is None

    def test_a_student_sees_their_latest_submission_in_the_list(self, course, assignment, student_client,
                                                                executor_online):
        submit(student_client, assignment, WRONG)
        latest = submit(student_client, assignment)
        mine = student_client.get(f"/api/courses/{course.pk}").json()["assignments"][0]["mine"]
        assert mine["id"] == latest.pk and mine["status"] == "queued"

    @pytest.mark.parametrize("course_id", ["{pk}", "999999", "abc", "-1", "0"])
    def test_an_outsider_and_the_anonymous_get_404(self, course, outsider_client, client, course_id):
        path = f"/api/courses/{course_id.format(pk=course.pk)}"
        for who in (outsider_client, client):
            response = who.get(path)
            assert response.status_code == 404
            assert response.json() == {"error": "no such course"}


class TestMembers:
    def test_an_instructor_invites_a_co_instructor_who_accepts(self, course, instructor_client, outsider,
                                                                 outsider_client):
        response = post(instructor_client, f"/api/courses/{course.pk}/members", {"username": "otto"})
        assert response.status_code == 202
        assert response.json()["status"] == "invited" and response.json()["role"] == "instructor"
        assert outsider_client.get(f"/api/courses/{course.pk}").status_code == 404  # not before accepting
        invitations = outsider_client.get("/api/me/invitations").json()["invitations"]
        assert [(i["course"]["id"], i["role"]) for i in invitations] == [(course.pk, "instructor")]
        accepted = post(outsider_client, invitations[0]["accept"])
        assert accepted.status_code == 200 and accepted.json()["role"] == "instructor"
        assert outsider_client.get(f"/api/courses/{course.pk}").json()["role"] == "instructor"
        assert outsider_client.get("/api/me/invitations").json()["invitations"] == []

    def test_an_invitation_can_be_declined_and_is_then_gone(self, course, instructor_client, outsider,
                                                            outsider_client):
        post(instructor_client, f"/api/courses/{course.pk}/members", {"username": "otto", "role": "student"})
        invitation = outsider_client.get("/api/me/invitations").json()["invitations"][0]
        assert post(outsider_client, invitation["decline"]).status_code == 204
        assert post(outsider_client, invitation["accept"]).status_code == 404
        assert not Membership.objects.filter(course=course, user=outsider).exists()

    def test_only_the_invited_may_answer(self, course, instructor_client, outsider, student_client):
        post(instructor_client, f"/api/courses/{course.pk}/members", {"username": "otto"})
        invitation = Invitation.objects.get(course=course)
        for who in (student_client, instructor_client, Client()):
            assert post(who, f"/api/invitations/{invitation.pk}/accept").status_code in (401, 404)
        assert Membership.objects.filter(course=course, role="instructor").count() == 1

    def test_the_answer_is_the_same_whether_or_not_the_username_exists(self, course, instructor_client, outsider):
        """Adding someone must not tell whether a username is taken: same status, same fields."""
        answers = []
        for name in ("otto", "nobody-has-this-name"):
            response = post(instructor_client, f"/api/courses/{course.pk}/members", {"username": name})
            body = response.json()
            answers.append((response.status_code, sorted(body), body["status"], body["role"]))
        assert answers[0] == answers[1]
        listed = instructor_client.get(f"/api/courses/{course.pk}").json()["invitations"]
        assert [i["username"] for i in listed] == ["nobody-has-this-name", "otto"]

    def test_a_name_no_one_had_is_not_inherited_by_whoever_takes_it_later(self, course, instructor_client,
                                                                          django_user_model):
        post(instructor_client, f"/api/courses/{course.pk}/members", {"username": "latecomer"})
        latecomer = django_user_model.objects.create_user("latecomer", "l@example.com", "x")
        assert client_of(latecomer).get("/api/me/invitations").json()["invitations"] == []

    def test_inviting_a_student_to_teach_promotes_them_once_they_accept(self, course, instructor_client, student,
                                                                        student_client):
        response = post(instructor_client, f"/api/courses/{course.pk}/members",
                        {"username": "sam", "role": "instructor"})
        assert response.status_code == 202
        assert Membership.objects.get(course=course, user=student).role == "student"
        post(student_client, student_client.get("/api/me/invitations").json()["invitations"][0]["accept"])
        assert Membership.objects.get(course=course, user=student).role == "instructor"

    def test_a_co_instructor_cannot_remove_or_step_down_the_creator(self, course, instructor, student):
        do_set_member(course, student, "instructor")
        co = client_of(student)
        assert co.delete(f"/api/courses/{course.pk}/members/{instructor.pk}").status_code == 403
        response = post(co, f"/api/courses/{course.pk}/members", {"username": "ines", "role": "student"})
        assert response.status_code == 403
        assert Membership.objects.get(course=course, user=instructor).role == "instructor"

    def test_the_creator_may_remove_a_co_instructor(self, course, instructor_client, student):
        do_set_member(course, student, "instructor")
        assert instructor_client.delete(f"/api/courses/{course.pk}/members/{student.pk}").status_code == 204

    def test_invitations_are_rate_limited(self, course, instructor_client):
        from courses.actions.members import INVITATIONS_PER_HOUR

        path = f"/api/courses/{course.pk}/members"
        for n in range(INVITATIONS_PER_HOUR):
            assert post(instructor_client, path, {"username": f"u{n}"}).status_code == 202
        response = post(instructor_client, f"/api/courses/{course.pk}/members", {"username": "one-more"})
        assert response.status_code == 429
        assert set(response.json()) == {"error", "limit", "retry_after"} and response["Retry-After"]

    def test_the_last_instructor_cannot_step_down(self, course, instructor_client, instructor):
        response = post(instructor_client, f"/api/courses/{course.pk}/members", {"username": "ines", "role": "student"})
        assert response.status_code == 409
        assert Membership.objects.get(course=course, user=instructor).role == "instructor"

    @pytest.mark.parametrize("body", [{"username": ""}, {"username": "otto", "role": "admin"}, {}])
    def test_bad_members_are_refused(self, course, instructor_client, outsider, body):
        assert post(instructor_client, f"/api/courses/{course.pk}/members", body).status_code == 400

    def test_students_and_outsiders_cannot_add(self, course, student_client, outsider_client, outsider):
        for who in (student_client, outsider_client):
            response = post(who, f"/api/courses/{course.pk}/members", {"username": "otto"})
            assert response.status_code == 404
        assert not Membership.objects.filter(course=course, user=outsider).exists()

    def test_an_instructor_removes_a_student_who_then_sees_nothing(self, course, assignment, instructor_client,
                                                                   student_client, student, executor_online):
        submission = submit(student_client, assignment)
        response = instructor_client.delete(f"/api/courses/{course.pk}/members/{student.pk}")
        assert response.status_code == 204
        assert not Membership.objects.filter(course=course, user=student).exists()
        for path in (f"/api/courses/{course.pk}", f"/api/assignments/{assignment.pk}",
                     f"/api/submissions/{submission.pk}"):
            assert student_client.get(path).status_code == 404, path
        assert Submission.objects.filter(pk=submission.pk).exists()

    def test_a_student_may_leave_but_not_remove_others(self, course, instructor, student, student_client):
        assert student_client.delete(f"/api/courses/{course.pk}/members/{instructor.pk}").status_code == 404
        assert student_client.delete(f"/api/courses/{course.pk}/members/{student.pk}").status_code == 204
        assert Membership.objects.filter(course=course).count() == 1

    def test_the_last_instructor_cannot_be_removed(self, course, instructor, instructor_client):
        assert instructor_client.delete(f"/api/courses/{course.pk}/members/{instructor.pk}").status_code == 409

    def test_a_co_instructor_can_leave(self, course, instructor_client, outsider, outsider_client):
        do_set_member(course, outsider, "instructor")
        assert outsider_client.delete(f"/api/courses/{course.pk}/members/{outsider.pk}").status_code == 204
        assert outsider_client.get(f"/api/courses/{course.pk}").status_code == 404

    @pytest.mark.parametrize("user_id", ["abc", "999999", "0"])
    def test_removing_no_one_is_404(self, course, instructor_client, user_id):
        assert instructor_client.delete(f"/api/courses/{course.pk}/members/{user_id}").status_code == 404

    def test_an_outsider_cannot_remove_anyone(self, course, student, outsider_client):
        assert outsider_client.delete(f"/api/courses/{course.pk}/members/{student.pk}").status_code == 404
        assert Membership.objects.filter(course=course, user=student).exists()


class TestArchive:
    def test_an_archived_course_is_read_only(self, course, assignment, instructor_client, student_client,
                                             executor_online):
        response = post(instructor_client, f"/api/courses/{course.pk}/archive")
        assert response.status_code == 200 and response.json()["archived"] is True
        for client, path, body in [
            (student_client, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT}),
            (student_client, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT}),
            (instructor_client, f"/api/courses/{course.pk}/assignments", {"title": "New"}),
            (instructor_client, f"/api/assignments/{assignment.pk}/regrade", None),
            (instructor_client, f"/api/courses/{course.pk}/members", {"username": "otto"}),
        ]:
            response = post(client, path, body)
            assert response.status_code == 409, (path, response.content)
            assert "archived" in response.json()["error"]
        assert patch(instructor_client, f"/api/assignments/{assignment.pk}", {"title": "x"}).status_code == 409
        # Still there to read.
        assert student_client.get(f"/api/courses/{course.pk}").json()["archived"] is True
        assert student_client.get(f"/api/assignments/{assignment.pk}").status_code == 200

    def test_it_can_be_reopened(self, course, instructor_client):
        post(instructor_client, f"/api/courses/{course.pk}/archive")
        response = post(instructor_client, f"/api/courses/{course.pk}/archive", {"archived": False})
        assert response.json()["archived"] is False

    def test_only_instructors_archive(self, course, student_client, outsider_client):
        for who in (student_client, outsider_client):
            assert post(who, f"/api/courses/{course.pk}/archive").status_code == 404
        course.refresh_from_db()
        assert course.archived_at is None


# Assignments --------------------------------------------------------------------------------------

NEW_ASSIGNMENT = {"title": "Gradients", "description": "Compute **grad**.\n\n<script>alert(1)</script>",
                  "starter_code": "def loss(w):\n    ...\n", "checks": CHECKS, "device": "cpu",
                  "due": "2031-01-31T23:59:00Z", "results_before_due": False, "limits": {"wall_s": 10}}


class TestAssignments:
    def test_an_instructor_creates_one_with_hidden_checks(self, course, instructor_client):
        response = post(instructor_client, f"/api/courses/{course.pk}/assignments", NEW_ASSIGNMENT)
        assert response.status_code == 201, response.content
        body = response.json()
        created = Assignment.objects.get(pk=body["id"])
        assert (created.title, created.checks, created.limits) == ("Gradients", CHECKS, {"wall_s": 10})
        assert created.due_at.isoformat() == "2031-01-31T23:59:00+00:00" and created.results_before_due is False
        assert created.max_score == 5.0 and body["max_score"] == 5.0 and body["checks"] == CHECKS

    def test_only_a_title_is_needed(self, course, instructor_client):
        response = post(instructor_client, f"/api/courses/{course.pk}/assignments", {"title": "Warm-up"})
        assert response.status_code == 201
        created = Assignment.objects.get(pk=response.json()["id"])
        assert (created.checks, created.device, created.due_at, created.max_score) == ("", "cpu", None, 0)

    @pytest.mark.parametrize("change, status", [
        ({"title": ""}, 400), ({"title": None}, 400), ({"device": "abacus"}, 400), ({"due": "next tuesday"}, 400),
        ({"due": 5}, 400), ({"results_before_due": "no"}, 400), ({"limits": {"wall_s": 10_000}}, 400),
        ({"limits": {"wall_s": 0}}, 400), ({"limits": {"memory": 1}}, 400), ({"limits": [1]}, 400),
        ({"checks": "check('a', True"}, 422), ({"checks": 3}, 400), ({"description": "x" * 30_000}, 413),
    ])
    def test_bad_fields_are_refused(self, course, instructor_client, change, status):
        response = post(instructor_client, f"/api/courses/{course.pk}/assignments", {**NEW_ASSIGNMENT, **change})
        assert response.status_code == status, response.content
        assert not Assignment.objects.exists()

    def test_it_may_run_on_a_specific_device_kind(self, course, instructor_client):
        response = post(instructor_client, f"/api/courses/{course.pk}/assignments",
                        {**NEW_ASSIGNMENT, "device": "gpu:h200"})
        assert response.status_code == 201, response.content
        assert response.json()["device"] == "gpu:h200" == Assignment.objects.get().device

    @pytest.mark.parametrize("device", ["gpu:H200", "fpga:x", "gpu:", "gpu:a/b"])
    def test_a_malformed_device_names_the_choices(self, course, instructor_client, device):
        response = post(instructor_client, f"/api/courses/{course.pk}/assignments",
                        {**NEW_ASSIGNMENT, "device": device})
        assert response.status_code == 400
        assert "choose one of cpu, gpu, tpu, or a specific device kind" in response.json()["error"]

    def test_a_syntax_error_in_the_checks_names_its_line(self, course, instructor_client):
        response = post(instructor_client, f"/api/courses/{course.pk}/assignments",
                        {"title": "x", "checks": "x = 1\ncheck('a',\n"})
        assert response.status_code == 422 and "line" in response.json()["error"]

    def test_a_due_date_without_an_offset_is_utc(self, course, instructor_client):
        body = post(instructor_client, f"/api/courses/{course.pk}/assignments",
                    {"title": "x", "due": "2031-05-01T12:00"}).json()
        assert body["due"] == "2031-05-01T12:00:00+00:00"

    def test_students_and_outsiders_cannot_create(self, course, student_client, outsider_client):
        for who in (student_client, outsider_client):
            assert post(who, f"/api/courses/{course.pk}/assignments", NEW_ASSIGNMENT).status_code == 404
        assert not Assignment.objects.exists()

    def test_a_student_reads_it_without_the_checks(self, assignment, student_client):
        response = student_client.get(f"/api/assignments/{assignment.pk}")
        assert response.status_code == 200
        body = response.json()
        assert "checks" not in body and "checks_version" not in body and "regrade" not in body
        assert MARKER not in response.content.decode()
        assert body["starter_code"] == assignment.starter_code and body["course"] == assignment.course_id
        assert body["description_html"] == "<p>Write <code>square(x)</code>.</p>\n"
        assert body["max_score"] == 5.0 and body["late"] is False and body["device"] == "cpu"

    def test_the_description_is_rendered_without_raw_html(self, course, instructor_client, student_client):
        created = post(instructor_client, f"/api/courses/{course.pk}/assignments", NEW_ASSIGNMENT).json()
        html = student_client.get(f"/api/assignments/{created['id']}").json()["description_html"]
        assert "<strong>grad</strong>" in html and "<script>" not in html and "&lt;script&gt;" in html

    def test_the_instructor_reads_it_with_the_checks(self, assignment, instructor_client):
        body = instructor_client.get(f"/api/assignments/{assignment.pk}").json()
        assert body["checks"] == CHECKS and body["checks_version"] == 1 and body["regrade"] is None

    @pytest.mark.parametrize("assignment_id", ["{pk}", "999999", "x"])
    def test_an_outsider_and_the_anonymous_get_404(self, assignment, outsider_client, client, assignment_id):
        for who in (outsider_client, client):
            response = who.get(f"/api/assignments/{assignment_id.format(pk=assignment.pk)}")
            assert response.status_code == 404 and response.json() == {"error": "no such assignment"}

    def test_changing_the_checks_gives_them_a_new_version(self, assignment, instructor_client):
        response = patch(instructor_client, f"/api/assignments/{assignment.pk}",
                         {"checks": 'check("only", True, 7)', "title": "Squares, again"})
        assert response.status_code == 200
        assignment.refresh_from_db()
        assert (assignment.checks_version, assignment.max_score, assignment.title) == (2, 7.0, "Squares, again")
        patch(instructor_client, f"/api/assignments/{assignment.pk}", {"title": "Squares"})
        assignment.refresh_from_db()
        assert assignment.checks_version == 2  # the checks did not change

    def test_patch_can_clear_the_due_date(self, assignment, instructor_client):
        patch(instructor_client, f"/api/assignments/{assignment.pk}", {"due": "2031-01-01T00:00:00Z"})
        patch(instructor_client, f"/api/assignments/{assignment.pk}", {"due": None})
        assignment.refresh_from_db()
        assert assignment.due_at is None

    def test_students_and_outsiders_cannot_change_it(self, assignment, student_client, outsider_client):
        for who in (student_client, outsider_client):
            assert patch(who, f"/api/assignments/{assignment.pk}", {"title": "mine now"}).status_code == 404
        assignment.refresh_from_db()
        assert assignment.title == "Squares"


# Runs and submissions ----------------------------------------------------------------------------

class TestRuns:
    def test_a_student_runs_code_on_the_assignment_without_its_checks(self, assignment, student_client, student,
                                                                       executor_online):
        response = post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT})
        assert response.status_code == 201
        body = response.json()
        assert body["status"] == "queued" and body["ws"] == f"/ws/runs/{body['id']}/"
        run = Run.objects.get(pk=body["id"])
        assert run.owner == student and run.code == CORRECT
        assert CourseRun.objects.get(run=run).assignment == assignment
        assert not Grading.objects.exists()

    def test_a_students_run_reads_the_input_it_was_given(self, assignment, student_client, executor_online):
        response = post(student_client, f"/api/assignments/{assignment.pk}/runs",
                        {"code": "print(input())\n", "stdin": "3 4\n"})
        assert response.status_code == 201
        assert Run.objects.get(pk=response.json()["id"]).stdin == "3 4\n"
        oversized = post(student_client, f"/api/assignments/{assignment.pk}/runs",
                         {"code": "print(1)\n", "stdin": "x" * (256 * 1024 + 1)})
        assert oversized.status_code == 400 and "input" in oversized.json()["error"]

    def test_no_executor_online_is_503(self, assignment, student_client):
        Assignment.objects.filter(pk=assignment.pk).update(device="tpu")  # none in tests
        response = post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT})
        assert response.status_code == 503
        assert not Run.objects.exists()

    def test_a_worker_is_online_as_long_as_the_sites_window_says(self, assignment, student_client, settings):
        """A heartbeat 10 s old: online under a 15 s window, gone under a 5 s one, for a course's
        runs exactly as for the playground's (EXECUTOR_ONLINE_WINDOW_S)."""
        import time

        from executor import registry
        from playground.redis import get_redis

        name = "cpu-late-beat@localhost"
        registry.beat(get_redis(), name, "cpu", {"slots": 1, "sandboxed": True})
        get_redis().zadd("executors:cpu", {name: time.time() - 10})
        try:
            settings.EXECUTOR_ONLINE_WINDOW_S = 5
            refused = post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT})
            assert refused.status_code == 503 and "no cpu executor is online" in refused.json()["error"]
            assert post(student_client, "/api/runs", {"code": CORRECT}).status_code == 503
            settings.EXECUTOR_ONLINE_WINDOW_S = 15
            assert post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT}).status_code == 201
        finally:
            registry.leave(get_redis(), name, "cpu")

    def test_a_run_on_a_specific_kind_needs_that_kind_online(self, assignment, student_client):
        from executor import registry
        from playground.redis import get_redis

        Assignment.objects.filter(pk=assignment.pk).update(device="gpu:h200")
        refused = post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT})
        assert refused.status_code == 503 and "no gpu:h200 executor is online" in refused.json()["error"]
        name = "gpu-h200-tests@localhost"
        registry.beat(get_redis(), name, "gpu", {"slots": 1, "sandboxed": True}, specific="h200")
        try:
            response = post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT})
            assert response.status_code == 201, response.content
            assert Run.objects.get(pk=response.json()["id"]).device == "gpu:h200"
        finally:
            registry.leave(get_redis(), name, "gpu", "h200")

    @pytest.mark.parametrize("body", [{}, {"code": 3}, {"code": "x" * 70_000}, [1]])
    def test_bad_code_is_refused(self, assignment, student_client, body, executor_online):
        assert post(student_client, f"/api/assignments/{assignment.pk}/runs", body).status_code == 400

    def test_an_outsider_and_the_anonymous_cannot_run(self, assignment, outsider_client, client, executor_online):
        for who in (outsider_client, client):
            assert post(who, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT}).status_code == 404
        assert not Run.objects.exists()

    def test_runs_are_limited_per_account(self, assignment, student_client, settings, executor_online):
        settings.RUN_RATE_LIMIT_PER_MINUTE = 2
        for _ in range(2):
            assert post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": "1"}).status_code == 201
        assert post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": "1"}).status_code == 429


class TestSubmit:
    def test_a_submission_is_queued_for_grading_with_the_checks(self, assignment, student_client, student,
                                                                executor_online):
        response = post(student_client, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT})
        assert response.status_code == 201
        body = response.json()
        submission = Submission.objects.get(pk=body["id"])
        assert body["run"] == str(submission.run_id) and body["ws"] == f"/ws/runs/{submission.run_id}/"
        assert (submission.student, submission.code, submission.status, submission.late) == (
            student, CORRECT, "queued", False)
        grading = Grading.objects.get(submission=submission)
        assert grading.run_id == submission.run_id and grading.checks_version == 1
        assert grading.declared == [{"name": "square of 3", "points": 2.0}, {"name": "keeps the shape", "points": 3.0}]
        # The run holds the student's code only: the checks travel in the task's message.
        run = Run.objects.get(pk=submission.run_id)
        assert run.code == CORRECT and MARKER not in repr(run.__dict__)
        assert all(MARKER not in str(e.data) for e in RunEvent.objects.filter(run=run))

    def test_every_submission_is_kept(self, assignment, student_client, executor_online):
        first, second = submit(student_client, assignment, WRONG), submit(student_client, assignment)
        assert first.pk != second.pk and Submission.objects.count() == 2

    def test_a_submission_after_the_due_date_is_late(self, assignment, student_client, executor_online):
        Assignment.objects.filter(pk=assignment.pk).update(due_at=timezone.now() - timedelta(minutes=1))
        assert submit(student_client, assignment).late is True

    def test_an_instructor_may_submit_too(self, assignment, instructor_client, executor_online):
        assert submit(instructor_client, assignment).status == "queued"

    def test_an_outsider_and_the_anonymous_cannot_submit(self, assignment, outsider_client, client,
                                                         executor_online):
        for who in (outsider_client, client):
            response = post(who, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT})
            assert response.status_code == 404
        assert not Submission.objects.exists()

    def test_no_executor_online_is_503_and_nothing_is_kept(self, assignment, student_client):
        Assignment.objects.filter(pk=assignment.pk).update(device="tpu")  # none in tests
        response = post(student_client, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT})
        assert response.status_code == 503
        assert not Submission.objects.exists()


class TestReadSubmissions:
    @pytest.fixture
    def classmate(self, course, django_user_model):
        user = django_user_model.objects.create_user("cleo", "cleo@example.com", "x")
        do_join_course(course, user)
        return user

    def test_a_student_lists_only_their_own(self, assignment, student_client, classmate, executor_online):
        mine = submit(student_client, assignment)
        submit(client_of(classmate), assignment)
        body = student_client.get(f"/api/assignments/{assignment.pk}/submissions").json()
        assert [s["id"] for s in body["submissions"]] == [mine.pk] and body["next_page"] is None

    def test_the_instructor_lists_everyones_latest_first(self, assignment, student_client, instructor_client,
                                                         classmate, executor_online):
        first = submit(student_client, assignment)
        second = submit(client_of(classmate), assignment)
        body = instructor_client.get(f"/api/assignments/{assignment.pk}/submissions").json()
        assert [s["id"] for s in body["submissions"]] == [second.pk, first.pk]
        assert body["submissions"][0]["student"] == {"id": classmate.pk, "username": "cleo"}
        only = instructor_client.get(f"/api/assignments/{assignment.pk}/submissions?student={classmate.pk}").json()
        assert [s["id"] for s in only["submissions"]] == [second.pk]

    def test_an_outsider_lists_nothing(self, assignment, outsider_client, client):
        for who in (outsider_client, client):
            assert who.get(f"/api/assignments/{assignment.pk}/submissions").status_code == 404

    def test_a_student_reads_their_graded_submission_without_instructor_fields(self, assignment, student_client,
                                                                              executor_online):
        submission = submit(student_client, assignment, WRONG)
        do_record_grade(str(submission.run_id), result({"square of 3": False, "keeps the shape": True},
                                                       error=f"Traceback: {MARKER}", log=f"checks saw {MARKER}"))
        response = student_client.get(f"/api/submissions/{submission.pk}")
        assert response.status_code == 200
        body = response.json()
        assert (body["status"], body["score"], body["max_score"], body["results"]) == ("graded", 3.0, 5.0, "shown")
        assert body["checks"] == [
            {"name": "square of 3", "passed": False, "points": 2.0, "message": "wrong", "crashed": False},
            {"name": "keeps the shape", "passed": True, "points": 3.0, "message": "", "crashed": False}]
        assert body["code"] == WRONG
        assert not {"error", "log", "gradings", "checks_version"} & set(body)
        assert MARKER not in response.content.decode()

    def test_the_instructor_reads_it_with_error_and_log(self, assignment, student_client, instructor_client,
                                                        executor_online):
        submission = submit(student_client, assignment)
        do_record_grade(str(submission.run_id), result(error="a check raised", log="checks saw it"))
        body = instructor_client.get(f"/api/submissions/{submission.pk}").json()
        assert (body["error"], body["log"], body["code"]) == ("a check raised", "checks saw it", CORRECT)
        assert body["gradings"][0]["status"] == "graded" and body["checks_version"] == 1

    def test_another_students_submission_is_not_found(self, assignment, student_client, classmate, executor_online):
        theirs = submit(client_of(classmate), assignment)
        assert student_client.get(f"/api/submissions/{theirs.pk}").status_code == 404

    def test_a_submissions_run_is_its_students_and_the_instructors_alone(
            self, assignment, student, student_client, instructor_client, outsider_client, client, classmate,
            executor_online):
        """Its code, profile and stdin: whoever else holds the run's id (a classmate it was shown
        to, a link pasted in a chat) finds no such run, as for a run that does not exist."""
        from courses.models import Membership

        submission = submit(student_client, assignment, WRONG)
        path = f"/api/runs/{submission.run_id}"
        for who in (student_client, instructor_client):
            response = who.get(path)
            assert response.status_code == 200 and response.json()["code"] == WRONG
        for who in (client_of(classmate), outsider_client, client):
            for url in (path, f"{path}/profile"):
                response = who.get(url)
                assert response.status_code == 404 and WRONG not in response.content.decode(), url
            # Nor can it be shared as a snippet by someone else, which would publish its code.
            shared = post(who, "/api/snippets", {"code": "x", "run": str(submission.run_id)})
            assert shared.status_code in (400, 404) and WRONG not in shared.content.decode()
        # A student removed from the course no longer reads it, as they no longer read the submission.
        Membership.objects.filter(course=assignment.course, user=student).delete()
        assert student_client.get(path).status_code == 404
        assert instructor_client.get(path).status_code == 200

    def test_a_free_run_on_the_assignments_page_keeps_the_rules_of_any_run(self, assignment, student_client,
                                                                            outsider_client, client, executor_online):
        made = post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": "print(7)"})
        assert made.status_code == 201
        for who in (outsider_client, client):
            assert who.get(f"/api/runs/{made.json()['id']}").status_code == 200

    @pytest.mark.parametrize("submission_id", ["{pk}", "999999", "x"])
    def test_an_outsider_and_the_anonymous_get_404(self, assignment, student_client, outsider_client, client,
                                                   submission_id, executor_online):
        submission = submit(student_client, assignment)
        for who in (outsider_client, client):
            response = who.get(f"/api/submissions/{submission_id.format(pk=submission.pk)}")
            assert response.status_code == 404 and response.json() == {"error": "no such submission"}

    def test_results_wait_for_the_due_date_when_the_instructor_says_so(self, assignment, student_client,
                                                                       instructor_client, executor_online):
        Assignment.objects.filter(pk=assignment.pk).update(results_before_due=False,
                                                           due_at=timezone.now() + timedelta(days=1))
        submission = submit(student_client, assignment)
        do_record_grade(str(submission.run_id), result())
        for path in (f"/api/submissions/{submission.pk}", f"/api/assignments/{assignment.pk}/submissions"):
            text = student_client.get(path).content.decode()
            assert '"score": 5.0' not in text and '"score": null' in text and '"results": "after_due"' in text
        body = student_client.get(f"/api/submissions/{submission.pk}").json()
        assert body["status"] == "graded" and body["checks"] is None and body["message"] is None
        mine = student_client.get(f"/api/courses/{assignment.course_id}").json()["assignments"][0]["mine"]
        assert mine["score"] is None and mine["results"] == "after_due"
        assert instructor_client.get(f"/api/submissions/{submission.pk}").json()["score"] == 5.0
        # Once due, they are shown.
        Assignment.objects.filter(pk=assignment.pk).update(due_at=timezone.now() - timedelta(seconds=1))
        body = student_client.get(f"/api/submissions/{submission.pk}").json()
        assert (body["score"], body["results"]) == (5.0, "shown") and len(body["checks"]) == 2


# Regrade, grades, dashboard -----------------------------------------------------------------------

class TestRegrade:
    def test_it_regrades_each_students_latest_submission_and_keeps_old_grades(
            self, assignment, student_client, instructor_client, executor_online):
        old = submit(student_client, assignment, WRONG)
        latest = submit(student_client, assignment)
        do_record_grade(str(old.run_id), result({"square of 3": False, "keeps the shape": True}))
        do_record_grade(str(latest.run_id), result())
        patch(instructor_client, f"/api/assignments/{assignment.pk}", {"checks": CHECKS + "\ncheck('extra', True)\n"})
        response = post(instructor_client, f"/api/assignments/{assignment.pk}/regrade")
        assert response.status_code == 202
        assert response.json() == {"queued": 1, "regrade": 1}
        latest.refresh_from_db()
        assert (latest.status, latest.score, latest.regrading) == ("graded", 5.0, True)  # kept meanwhile
        newest = Grading.objects.filter(submission=latest).order_by("-id").first()
        assert (newest.checks_version, newest.regrade, newest.status) == (2, 1, "queued")
        assert instructor_client.get(f"/api/assignments/{assignment.pk}").json()["regrade"] == {
            "regrade": 1, "queued": 1, "done": 0}
        do_record_grade(str(newest.run_id), result({"square of 3": True, "keeps the shape": True, "extra": True}))
        latest.refresh_from_db()
        assert (latest.score, latest.max_score, latest.regrading) == (6.0, 6.0, False)
        assert instructor_client.get(f"/api/assignments/{assignment.pk}").json()["regrade"]["done"] == 1
        old.refresh_from_db()
        assert old.score == 3.0 and Grading.objects.filter(submission=old).count() == 1

    def test_students_and_outsiders_cannot_regrade(self, assignment, student_client, outsider_client,
                                                   executor_online):
        submit(student_client, assignment)
        for who in (student_client, outsider_client):
            assert post(who, f"/api/assignments/{assignment.pk}/regrade").status_code == 404
        assert Grading.objects.count() == 1

    def test_regrading_needs_an_executor(self, assignment, instructor_client):
        Assignment.objects.filter(pk=assignment.pk).update(device="tpu")  # none in tests
        assert post(instructor_client, f"/api/assignments/{assignment.pk}/regrade").status_code == 503


class TestGradesCsv:
    def test_one_row_per_student_with_the_latest_graded_score(self, course, assignment, student_client,
                                                              instructor_client, django_user_model,
                                                              executor_online):
        second = do_create_assignment(course, title="=HYPERLINK(\"x\")", checks='check("a", True, 10)')
        cleo = django_user_model.objects.create_user("cleo", "cleo@example.com", "x", first_name="Cleo",
                                                     last_name="Ray")
        do_join_course(course, cleo)
        first = submit(student_client, assignment)
        do_record_grade(str(first.run_id), result())
        later = submit(student_client, assignment, WRONG)
        do_record_grade(str(later.run_id), result({"square of 3": False, "keeps the shape": True}))
        submit(student_client, assignment)  # not graded yet: the latest graded one counts
        on_second = submit(student_client, second)
        result_a = {"outcome": "checked", "checks": [{"name": "a", "passed": True, "points": 10}]}
        do_record_grade(str(on_second.run_id), result_a)
        response = instructor_client.get(f"/api/courses/{course.pk}/grades.csv")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/csv")
        assert "attachment" in response["Content-Disposition"]
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert rows[0] == ["username", "name", "email", "Squares (latest graded, of 5)",
                           "'=HYPERLINK(\"x\") (latest graded, of 10)", "total (of 15)"]
        sam = django_user_model.objects.get(username="sam")
        assert rows[1:] == [["cleo", "Cleo Ray", "cleo@example.com", "", "", "0"],
                            ["sam", sam.get_full_name(), sam.email, "3", "10", "13"]]

    def test_students_and_outsiders_get_404(self, course, student_client, outsider_client, client):
        for who in (student_client, outsider_client, client):
            assert who.get(f"/api/courses/{course.pk}/grades.csv").status_code == 404


class TestDashboardSnapshot:
    def test_the_instructor_gets_it(self, course, assignment, instructor_client):
        body = instructor_client.get(f"/api/courses/{course.pk}/dashboard").json()
        assert body["students"] == [{"id": course.memberships.get(role="student").user_id, "username": "sam"}]
        assert set(body) >= {"students", "assignments", "cells", "feed", "errors", "histograms"}

    def test_students_and_outsiders_get_404(self, course, student_client, outsider_client, client):
        for who in (student_client, outsider_client, client):
            assert who.get(f"/api/courses/{course.pk}/dashboard").status_code == 404


# Across the API -----------------------------------------------------------------------------------

def test_a_student_never_receives_the_checks(course, assignment, student_client, student, executor_online):
    """Every endpoint a student can call, in every state of a submission: no response holds the
    checks' source (nor what the checks printed, nor their traceback)."""
    texts = []

    def seen(response):
        texts.append(response.content.decode())
        return response

    submission = submit(student_client, assignment)
    seen(post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": CORRECT}))
    do_record_grade(str(submission.run_id), result({"square of 3": False, "keeps the shape": True},
                                                   error=f"NameError in check: {MARKER}", log=MARKER))
    other = do_create_assignment(course, title="Other", checks=CHECKS)
    for path in ["/api/courses", f"/api/courses/{course.pk}", f"/api/assignments/{assignment.pk}",
                 f"/api/assignments/{other.pk}", f"/api/assignments/{assignment.pk}/submissions",
                 f"/api/submissions/{submission.pk}", f"/api/runs/{submission.run_id}",
                 f"/api/courses/{course.pk}/dashboard", f"/api/courses/{course.pk}/grades.csv",
                 "/api/openapi.json", "/me/runs/",
                 # The pages, as the browser gets them.
                 "/courses/", f"/courses/{course.pk}/", f"/assignments/{assignment.pk}/",
                 f"/courses/{course.pk}/dashboard"]:
        seen(student_client.get(path))
    for path, body in [(f"/api/courses/{course.pk}/assignments", {"title": "x"}),
                       (f"/api/assignments/{assignment.pk}/regrade", None),
                       (f"/api/assignments/{assignment.pk}/submissions", {"code": 5}),
                       ("/api/courses/join", {"code": course.join_code})]:
        seen(post(student_client, path, body))
    seen(patch(student_client, f"/api/assignments/{assignment.pk}", {"checks": "x"}))
    leaked = [t[:200] for t in texts if MARKER in t or "EXPECTED_NOTE" in t]
    assert not leaked
    assert len(texts) == 21


def test_a_script_uses_the_api_with_a_token(course, assignment, student, executor_online):
    script = Client(**bearer(make_token(student)))
    assert script.get(f"/api/courses/{course.pk}").json()["role"] == "student"
    response = post(script, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT})
    assert response.status_code == 201
    assert Submission.objects.get(pk=response.json()["id"]).student == student
    assert Client(**bearer("jpg_" + "x" * 43)).get(f"/api/courses/{course.pk}").status_code == 401


def test_a_session_needs_its_csrf_token_to_change_anything(course, assignment, student, executor_online):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(student)
    response = post(browser, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT})
    assert response.status_code == 403
    assert not Submission.objects.exists()
    assert browser.get(f"/api/courses/{course.pk}").status_code == 200


def test_responses_match_the_openapi_schema(course, assignment, instructor_client, student_client, executor_online):
    from tests.integration.test_openapi import assert_matches, resolve_ref, response_schema

    doc = instructor_client.get("/api/openapi.json").json()

    def check(client, method, path, doc_path, status, body=None):
        response = post(client, path, body) if method == "post" else client.get(path)
        assert response.status_code == status, response.content
        assert_matches(doc, response_schema(doc, doc_path, method, status), response.json())
        return response.json()

    created = check(instructor_client, "post", "/api/courses", "/api/courses", 201, {"title": "Another"})
    check(instructor_client, "get", "/api/courses", "/api/courses", 200)
    check(student_client, "post", "/api/courses/join", "/api/courses/join", 200, {"code": created["join_code"]})
    detail = check(instructor_client, "get", f"/api/courses/{course.pk}", "/api/courses/{course_id}", 200)
    for item in detail["assignments"]:
        assert_matches(doc, resolve_ref(doc, {"$ref": "#/components/schemas/AssignmentSummary"}), item)
    check(instructor_client, "post", f"/api/courses/{course.pk}/assignments", "/api/courses/{course_id}/assignments",
          201, {"title": "x"})
    check(student_client, "get", f"/api/assignments/{assignment.pk}", "/api/assignments/{assignment_id}", 200)
    made = check(student_client, "post", f"/api/assignments/{assignment.pk}/submissions",
                 "/api/assignments/{assignment_id}/submissions", 201, {"code": CORRECT})
    do_record_grade(made["run"], result())
    check(student_client, "get", f"/api/submissions/{made['id']}", "/api/submissions/{submission_id}", 200)
    check(instructor_client, "get", f"/api/submissions/{made['id']}", "/api/submissions/{submission_id}", 200)
    check(student_client, "get", f"/api/assignments/{assignment.pk}/submissions",
          "/api/assignments/{assignment_id}/submissions", 200)
    check(instructor_client, "get", f"/api/courses/{course.pk}/dashboard", "/api/courses/{course_id}/dashboard", 200)
    check(instructor_client, "post", f"/api/assignments/{assignment.pk}/regrade",
          "/api/assignments/{assignment_id}/regrade", 202)
    check(student_client, "get", f"/api/courses/{course.pk}/dashboard", "/api/courses/{course_id}/dashboard", 404)
