"""The dashboard's websocket, /ws/courses/<id>/, through the whole ASGI application: instructors
only (a session cookie as a browser sends it, or a token as a script does), everyone else closed
with 4404; a snapshot first, then live updates through the channel layer (Redis)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from courses.actions.courses import do_create_course
from courses.actions.members import do_remove_member, do_set_member
from courses.grading import do_record_grade
from courses.models import CourseRun, Grading, Submission
from courses.receivers import on_run_status_changed
from playground.models import Run
from web.asgi import application

from .helpers import CORRECT, DECLARED, make_token, result

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1")


def session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(course_id, *headers) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(application, f"/ws/courses/{course_id}/", headers=list(headers))
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert connected
    return comm


async def receive(comm, timeout: float = 5) -> dict:
    message = await comm.receive_output(timeout)
    if message["type"] == "websocket.close":
        return message
    return json.loads(message["text"])


async def assert_refused(course_id, *headers) -> None:
    comm = await connect(course_id, *headers)
    closed = await comm.receive_output(5)
    assert closed == {"type": "websocket.close", "code": 4404, "reason": "no such course"}
    await comm.disconnect()


async def test_an_instructor_in_a_browser_gets_the_snapshot(course, assignment, instructor, student):
    comm = await connect(course.pk, ORIGIN, await sync_to_async(session_cookie)(instructor))
    try:
        snap = await receive(comm)
        assert snap["type"] == "snapshot"
        assert snap["students"] == [{"id": student.pk, "username": "sam"}]
        assert [a["id"] for a in snap["assignments"]] == [assignment.pk]
    finally:
        await comm.disconnect()


async def test_an_instructors_script_gets_it_with_a_token(course, instructor):
    secret = await sync_to_async(make_token)(instructor)
    comm = await connect(course.pk, (b"authorization", f"Bearer {secret}".encode()))
    try:
        assert (await receive(comm))["type"] == "snapshot"
    finally:
        await comm.disconnect()


async def test_a_student_an_outsider_and_the_anonymous_are_closed_with_4404(course, student, outsider):
    await assert_refused(course.pk, ORIGIN, await sync_to_async(session_cookie)(student))
    await assert_refused(course.pk, ORIGIN, await sync_to_async(session_cookie)(outsider))
    await assert_refused(course.pk)
    student_token = await sync_to_async(make_token)(student)
    await assert_refused(course.pk, (b"authorization", f"Bearer {student_token}".encode()))


async def test_a_bad_token_is_refused_even_beside_an_instructors_session(course, instructor):
    # The token decides, not the session beside it; and a token that is not valid is said to be
    # so (4401, as the API's 401), on this socket as on every other.
    comm = await connect(course.pk, (b"authorization", b"Bearer jpg_" + b"x" * 43),
                         await sync_to_async(session_cookie)(instructor))
    closed = await comm.receive_output(5)
    assert closed["type"] == "websocket.close" and closed["code"] == 4401
    await comm.disconnect()


async def test_a_course_that_does_not_exist_is_refused_the_same(course, instructor, outsider):
    other = await sync_to_async(do_create_course)(outsider, "Someone else's")
    cookie = await sync_to_async(session_cookie)(instructor)
    await assert_refused(other.pk, cookie)
    await assert_refused(other.pk + 1000, cookie)


async def test_another_sites_page_cannot_open_it(course, instructor):
    comm = WebsocketCommunicator(application, f"/ws/courses/{course.pk}/",
                                 headers=[(b"origin", b"https://evil.example"),
                                          await sync_to_async(session_cookie)(instructor)])
    connected, _ = await comm.connect(10)  # 1 s by default: short for a loaded machine
    assert not connected


def graded_submission_without_a_queue(assignment, student) -> Submission:
    """A submission and its grading run as do_submit makes them, without queueing the run (no
    executor here to take it)."""
    run = Run.objects.create(code=CORRECT, device="cpu")
    submission = Submission.objects.create(assignment=assignment, student=student, code=CORRECT, run=run)
    Grading.objects.create(submission=submission, run=run, checks_version=1, declared=DECLARED)
    return submission


async def test_updates_arrive_live_as_students_run_and_get_graded(course, assignment, instructor, student):
    comm = await connect(course.pk, await sync_to_async(session_cookie)(instructor))
    try:
        assert (await receive(comm))["type"] == "snapshot"
        submission = await sync_to_async(graded_submission_without_a_queue)(assignment, student)

        def starts_then_grades():
            Run.objects.filter(pk=submission.run_id).update(status="running")
            on_run_status_changed(sender=Run, run_id=str(submission.run_id), status="running")
            do_record_grade(str(submission.run_id), result())

        await sync_to_async(starts_then_grades)()
        updates = [await receive(comm) for _ in range(3)]
        assert all(u["type"] == "update" for u in updates)
        items = [u["item"] for u in updates]
        by_kind = {(i["kind"], i["status"]) for i in items}
        assert by_kind == {("submission", "grading"), ("run", "running"), ("submission", "graded")}
        graded = next(i for i in items if i["status"] == "graded")
        assert (graded["submission"], graded["student"], graded["score"], graded["max_score"]) == (
            submission.pk, student.pk, 5.0, 5.0)

        def free_run_fails():
            run = Run.objects.create(code="1/0", device="cpu", owner=student, status="failed")
            CourseRun.objects.create(run=run, assignment=assignment, student=student)
            on_run_status_changed(sender=Run, run_id=str(run.pk), status="failed")
            return run

        run = await sync_to_async(free_run_fails)()
        item = (await receive(comm))["item"]
        assert (item["kind"], item["run"], item["status"], item["submission"]) == ("run", str(run.pk), "failed", None)
    finally:
        await comm.disconnect()


async def test_another_courses_updates_do_not_arrive(course, assignment, instructor, student, outsider):
    other = await sync_to_async(do_create_course)(instructor, "Another")
    comm = await connect(other.pk, await sync_to_async(session_cookie)(instructor))
    try:
        assert (await receive(comm))["type"] == "snapshot"
        submission = await sync_to_async(graded_submission_without_a_queue)(assignment, student)
        await sync_to_async(do_record_grade)(str(submission.run_id), result())
        assert await comm.receive_nothing(1)
    finally:
        await comm.disconnect()


async def test_a_co_instructor_who_is_removed_is_disconnected(course, instructor, outsider):
    await sync_to_async(do_set_member)(course, outsider, "instructor")
    comm = await connect(course.pk, await sync_to_async(session_cookie)(outsider))
    watcher = await connect(course.pk, await sync_to_async(session_cookie)(instructor))
    try:
        assert (await receive(comm))["type"] == "snapshot"
        assert (await receive(watcher))["type"] == "snapshot"
        await sync_to_async(lambda: do_remove_member(course.memberships.get(user=outsider)))()
        closed = await comm.receive_output(5)
        assert closed == {"type": "websocket.close", "code": 4404, "reason": "no such course"}
        item = (await receive(watcher))["item"]
        assert item | {"at": None} == {"kind": "member", "user": outsider.pk, "username": "otto", "role": None,
                                       "at": None}
    finally:
        await comm.disconnect()
        await watcher.disconnect()


async def test_a_student_joining_appears_live(course, instructor, outsider):
    from courses.actions.members import do_join_course

    comm = await connect(course.pk, await sync_to_async(session_cookie)(instructor))
    try:
        assert (await receive(comm))["type"] == "snapshot"
        await sync_to_async(do_join_course)(course, outsider)
        item = (await receive(comm))["item"]
        assert (item["kind"], item["user"], item["username"], item["role"]) == ("member", outsider.pk, "otto",
                                                                                "student")
    finally:
        await comm.disconnect()
