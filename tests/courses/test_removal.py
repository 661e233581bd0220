"""A removal sticks: a student an instructor removed cannot come back by the join code (they are
told why), until an instructor lets them back or invites them again; a student who left may."""

from __future__ import annotations

import pytest

from courses.models import Ban, Membership, Submission

from .helpers import CORRECT, post

pytestmark = pytest.mark.django_db


def join(client, course):
    return post(client, "/api/courses/join", {"code": course.join_code})


@pytest.fixture
def removed(course, instructor_client, student, student_client, assignment):
    """The student, with a submission, removed by the instructor."""
    submission = Submission.objects.create(assignment=assignment, student=student, code=CORRECT)
    assert instructor_client.delete(f"/api/courses/{course.pk}/members/{student.pk}").status_code == 204
    return submission


def test_a_removed_student_cannot_rejoin_with_the_code(course, removed, student_client):
    response = join(student_client, course)
    assert response.status_code == 403
    assert "removed from this course" in response.json()["error"]
    assert student_client.get(f"/api/submissions/{removed.pk}").status_code == 404
    assert student_client.get(f"/api/courses/{course.pk}").status_code == 404


def test_the_join_link_says_so_too(course, removed, student_client):
    page = student_client.get(f"/courses/join/{course.join_code}")
    assert page.status_code == 403
    assert "removed from this course" in page.content.decode()


def test_the_instructor_sees_whom_they_removed_and_lets_them_back(course, removed, instructor_client, student,
                                                                  student_client):
    detail = instructor_client.get(f"/api/courses/{course.pk}").json()
    assert [r["username"] for r in detail["removed"]] == ["sam"]
    assert instructor_client.delete(f"/api/courses/{course.pk}/bans/{student.pk}").status_code == 204
    assert join(student_client, course).status_code == 200
    assert student_client.get(f"/api/submissions/{removed.pk}").status_code == 200


def test_the_course_page_lets_them_back_without_a_script(course, removed, instructor_client, student):
    assert "Let back in" in instructor_client.get(f"/courses/{course.pk}/").content.decode()
    response = instructor_client.post(f"/courses/{course.pk}/removed/{student.pk}/readmit")
    assert response.status_code == 302
    assert not Ban.objects.filter(course=course, user=student).exists()


def test_only_instructors_let_anyone_back(course, removed, student, outsider_client):
    assert outsider_client.delete(f"/api/courses/{course.pk}/bans/{student.pk}").status_code == 404
    assert Ban.objects.filter(course=course, user=student).exists()


def test_an_invitation_accepted_lets_them_back(course, removed, instructor_client, student_client, student):
    post(instructor_client, f"/api/courses/{course.pk}/members", {"username": "sam", "role": "student"})
    invitation = student_client.get("/api/me/invitations").json()["invitations"][0]
    assert post(student_client, invitation["accept"]).status_code == 200
    assert Membership.objects.get(course=course, user=student).role == "student"
    assert not Ban.objects.filter(course=course, user=student).exists()


def test_the_courses_page_shows_an_invitation_to_accept(course, instructor_client, outsider, outsider_client):
    post(instructor_client, f"/api/courses/{course.pk}/members", {"username": "otto", "role": "student"})
    page = outsider_client.get("/courses/").content.decode()
    assert "Invitations" in page and "JAX 101" in page
    invitation = outsider_client.get("/api/me/invitations").json()["invitations"][0]
    response = outsider_client.post(f"/courses/invitations/{invitation['id']}/accept")
    assert response.status_code == 302 and response["Location"] == f"/courses/{course.pk}/"
    assert Membership.objects.get(course=course, user=outsider).role == "student"


def test_a_student_who_left_may_come_back(course, student, student_client):
    assert student_client.delete(f"/api/courses/{course.pk}/members/{student.pk}").status_code == 204
    assert join(student_client, course).status_code == 200
