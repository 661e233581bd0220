"""One access function per model, answering None to whoever may not see: a stranger, the
anonymous, a removed student, an id that is not one."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from courses.access import (
    access_assignment_for_user, access_course_for_user, access_submission_for_user, courses_for_user,
)
from courses.actions.courses import do_archive_course, do_create_course
from courses.actions.members import do_join_course, do_remove_member
from courses.models import Membership, Submission

pytestmark = pytest.mark.django_db

NOT_IDS = ["abc", "", "-1", "0", "1.0", " 1", "١", "9" * 40, None, True, 1.5, [1]]


def submit(assignment, user, code="def square(x):\n    return x * x\n") -> Submission:
    return Submission.objects.create(assignment=assignment, student=user, code=code)


def test_members_see_the_course_with_their_role(course, instructor, student):
    assert access_course_for_user(course.pk, instructor).role == "instructor"
    assert access_course_for_user(str(course.pk), student).role == "student"
    assert access_course_for_user(course.pk, student).course == course


def test_an_outsider_and_the_anonymous_see_no_course(course, outsider):
    assert access_course_for_user(course.pk, outsider) is None
    assert access_course_for_user(course.pk, AnonymousUser()) is None
    assert access_course_for_user(course.pk, None) is None


@pytest.mark.parametrize("bad", NOT_IDS)
def test_an_id_that_is_not_one_names_nothing(course, assignment, instructor, bad):
    assert access_course_for_user(bad, instructor) is None
    assert access_assignment_for_user(bad, instructor) is None
    assert access_submission_for_user(bad, instructor) is None


def test_a_missing_id_names_nothing(course, assignment, instructor):
    assert access_course_for_user(course.pk + 1000, instructor) is None
    assert access_assignment_for_user(assignment.pk + 1000, instructor) is None
    assert access_submission_for_user(12345, instructor) is None


def test_members_see_assignments_and_outsiders_do_not(assignment, instructor, student, outsider):
    assert access_assignment_for_user(assignment.pk, instructor) == (assignment, "instructor")
    assert access_assignment_for_user(assignment.pk, student) == (assignment, "student")
    assert access_assignment_for_user(assignment.pk, outsider) is None
    assert access_assignment_for_user(assignment.pk, AnonymousUser()) is None


def test_a_student_sees_their_own_submissions_only(assignment, course, instructor, student, django_user_model):
    classmate = django_user_model.objects.create_user("cleo", "cleo@example.com", "x")
    do_join_course(course, classmate)
    mine, theirs = submit(assignment, student), submit(assignment, classmate)
    assert access_submission_for_user(mine.pk, student) == (mine, "student")
    assert access_submission_for_user(theirs.pk, student) is None
    assert access_submission_for_user(theirs.pk, classmate) == (theirs, "student")


def test_instructors_see_every_submission_of_their_course(assignment, instructor, student, outsider):
    submission = submit(assignment, student)
    assert access_submission_for_user(submission.pk, instructor) == (submission, "instructor")
    assert access_submission_for_user(submission.pk, outsider) is None
    assert access_submission_for_user(submission.pk, AnonymousUser()) is None


def test_an_instructor_of_another_course_sees_nothing_of_this_one(assignment, student, outsider):
    do_create_course(outsider, "Another course")  # outsider teaches something else
    submission = submit(assignment, student)
    assert access_course_for_user(assignment.course_id, outsider) is None
    assert access_assignment_for_user(assignment.pk, outsider) is None
    assert access_submission_for_user(submission.pk, outsider) is None


def test_a_removed_student_no_longer_sees_the_course_nor_their_work(assignment, course, student):
    submission = submit(assignment, student)
    do_remove_member(Membership.objects.get(course=course, user=student))
    assert access_course_for_user(course.pk, student) is None
    assert access_assignment_for_user(assignment.pk, student) is None
    assert access_submission_for_user(submission.pk, student) is None
    assert Submission.objects.filter(pk=submission.pk).exists()  # kept


def test_an_archived_course_stays_visible_to_its_members(course, assignment, student):
    do_archive_course(course)
    assert access_course_for_user(course.pk, student) is not None
    assert access_assignment_for_user(assignment.pk, student) is not None


def test_a_disabled_account_sees_nothing(course, student):
    student.is_active = False
    student.save()
    assert access_course_for_user(course.pk, student) is None


def test_courses_for_user_lists_ones_own(course, instructor, student, outsider):
    other = do_create_course(outsider, "Other")
    assert list(courses_for_user(instructor)) == [course]
    assert list(courses_for_user(student)) == [course]
    assert list(courses_for_user(outsider)) == [other]
    assert list(courses_for_user(AnonymousUser())) == []
