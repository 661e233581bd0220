"""One set of shares for every run: a student's free runs and submissions count against the same
active-run cap, run rate and budget as POST /api/runs (per account, whichever endpoint), with the
same 429; a regrade is the instructor's: rate-limited, its seconds on their budget, its runs queued
below every run a person is waiting for; and the dashboard's snapshot is bounded and limited."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from courses import dashboard
from courses.actions.submissions import do_start_course_run, do_submit
from courses.models import CourseRun
from executor import submit as executor_submit
from playground import quotas
from playground.models import RunEvent
from playground.redis import get_redis

from .conftest import client_of
from .helpers import CORRECT, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def shares(settings, student, instructor):
    """Fair shares on, as deployed but small: 2 runs at once, 100 s an hour."""
    settings.RUN_QUOTAS = {kind: {"active": 2, "per_hour_s": 100, "per_day_s": 0, "queue_max": 0}
                           for kind in settings.RUN_DEVICE_KINDS}
    redis = get_redis()
    for user in (student, instructor):
        for key in redis.scan_iter(f"quota:*user:{user.pk}*"):
            redis.delete(key)
    yield settings.RUN_QUOTAS
    for user in (student, instructor):
        for key in redis.scan_iter(f"quota:*user:{user.pk}*"):
            redis.delete(key)


@pytest.fixture
def sent(monkeypatch):
    """The runs sent to the executors' queues, with their priority (on commit)."""
    runs = []
    monkeypatch.setattr(executor_submit, "send_run",
                        lambda redis, device, message, priority=0: runs.append((message["run_id"], priority)))
    return runs


def refused_the_same_way(response, limit: str) -> None:
    assert response.status_code == 429, response.content
    body = response.json()
    assert set(body) == {"error", "limit", "retry_after"}
    assert body["limit"] == limit and int(response["Retry-After"]) == body["retry_after"] >= 1


def test_free_runs_count_against_the_active_cap(assignment, student_client, shares, executor_online):
    path = f"/api/assignments/{assignment.pk}/runs"
    assert [post(student_client, path, {"code": "1"}).status_code for _ in range(2)] == [201, 201]
    refused_the_same_way(post(student_client, path, {"code": "1"}), "active_runs")
    assert CourseRun.objects.count() == 2


def test_submissions_runs_and_playground_runs_share_one_cap(assignment, student_client, shares, executor_online):
    assert post(student_client, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT}).status_code == 201
    assert post(student_client, "/api/runs", {"code": "print(1)"}).status_code == 201
    refused_the_same_way(post(student_client, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT}),
                         "active_runs")
    refused_the_same_way(post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": "1"}),
                         "active_runs")
    refused_the_same_way(post(student_client, "/api/runs", {"code": "print(1)"}), "active_runs")


def test_a_run_that_ended_gives_its_slot_back(assignment, student_client, shares, executor_online):
    path = f"/api/assignments/{assignment.pk}/runs"
    first = post(student_client, path, {"code": "1"}).json()
    post(student_client, path, {"code": "1"})
    quotas.release(first["id"], wall_ms=1000, device="cpu")
    assert post(student_client, path, {"code": "1"}).status_code == 201


def test_the_hourly_budget_counts_course_runs(assignment, student, student_client, shares, executor_online):
    key = quotas._budget_key(f"user:{student.pk}", "cpu", 3600, time.time())
    get_redis().set(key, 100, ex=3600)
    refused_the_same_way(post(student_client, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT}),
                         "hourly_budget")
    refused_the_same_way(post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": "1"}),
                         "hourly_budget")


def test_the_run_rate_is_one_for_every_endpoint(assignment, student_client, settings, executor_online):
    settings.RUN_RATE_LIMIT_PER_MINUTE = 2
    assert post(student_client, "/api/runs", {"code": "1"}).status_code == 201
    assert post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": "1"}).status_code == 201
    refused_the_same_way(post(student_client, f"/api/assignments/{assignment.pk}/submissions", {"code": CORRECT}),
                         "rate")


def test_a_students_runs_are_queued_at_their_share_priority(assignment, student, shares, executor_online, sent,
                                                            django_capture_on_commit_callbacks):
    from courses.actions.submissions import check_start_course_run, check_submit

    with django_capture_on_commit_callbacks(execute=True):
        first = check_start_course_run(assignment, {"code": "1"}, user=student)
    with django_capture_on_commit_callbacks(execute=True):
        second = check_submit(assignment, {"code": CORRECT}, user=student)
    assert sent == [(str(first.id), 0), (str(second.run_id), 3)]
    assert quotas.client_of(str(second.run_id)) == f"user:{student.pk}"


def test_a_regrade_is_queued_below_every_interactive_run(course, assignment, student, instructor, shares,
                                                         executor_online, sent, django_capture_on_commit_callbacks,
                                                         django_user_model):
    from courses.actions.members import do_join_course
    from courses.actions.submissions import check_regrade

    for n in range(3):  # more students than the instructor's cap of active runs
        classmate = django_user_model.objects.create_user(f"c{n}", f"c{n}@example.com", "x")
        do_join_course(course, classmate)
        do_submit(assignment, classmate, CORRECT)
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert check_regrade(assignment, user=instructor) == 3
    assert [priority for _, priority in sent] == [quotas.REGRADE_STEP] * 3
    assert quotas.REGRADE_STEP > max(quotas.INTERACTIVE_STEPS)
    # Its seconds are the instructor's; it took none of their slots.
    assert {quotas.client_of(run_id) for run_id, _ in sent} == {f"user:{instructor.pk}"}
    assert get_redis().zcard(quotas._active_key(f"user:{instructor.pk}")) == 0


def test_regrades_are_rate_limited(assignment, instructor_client, settings, executor_online):
    settings.REGRADE_RATE_LIMIT_PER_HOUR = 1
    assert post(instructor_client, f"/api/assignments/{assignment.pk}/regrade").status_code == 202
    refused_the_same_way(post(instructor_client, f"/api/assignments/{assignment.pk}/regrade"), "rate")


def test_a_regrade_waits_for_the_instructors_budget(assignment, instructor, instructor_client, shares,
                                                   executor_online):
    key = quotas._budget_key(f"user:{instructor.pk}", "cpu", 3600, time.time())
    get_redis().set(key, 100, ex=3600)
    refused_the_same_way(post(instructor_client, f"/api/assignments/{assignment.pk}/regrade"), "hourly_budget")


def test_regrade_runs_do_not_fill_the_queue_people_are_refused_at(assignment, student_client, settings,
                                                                  executor_online):
    from executor import registry

    settings.RUN_QUOTAS = {kind: {"active": 0, "per_hour_s": 0, "per_day_s": 0, "queue_max": 3}
                           for kind in settings.RUN_DEVICE_KINDS}
    regrades = registry.queue_lists("cpu")[-1]
    redis = get_redis()
    redis.delete(regrades)
    redis.rpush(regrades, *[b"{}"] * 5)
    try:
        assert post(student_client, f"/api/assignments/{assignment.pk}/runs", {"code": "1"}).status_code == 201
    finally:
        redis.delete(regrades)


# The dashboard ---------------------------------------------------------------------------------

def queries_of_a_snapshot(course) -> int:
    with CaptureQueriesContext(connection) as captured:
        dashboard.snapshot(course)
    return len(captured)


def test_a_snapshot_costs_the_same_however_many_runs_the_course_had(course, assignment, student, monkeypatch,
                                                                   executor_online):
    monkeypatch.setattr(dashboard, "RUNS_SCANNED", 5)
    do_start_course_run(assignment, student, "1/0")
    few = queries_of_a_snapshot(course)
    old = [do_start_course_run(assignment, student, "1/0") for _ in range(10)]
    for run in old[:5]:  # older than the last RUNS_SCANNED (5): not counted
        RunEvent.objects.create(run=run, seq=2, type="error", data={"exc_type": "ZeroDivisionError", "line": 1})
    assert queries_of_a_snapshot(course) == few
    assert dashboard.snapshot(course)["errors"] == []
    snap = dashboard.snapshot(course)
    assert snap["cells"][f"{student.pk}:{assignment.pk}"]["run"] == str(old[-1].id)


def test_snapshots_are_rate_limited_per_client(course, instructor_client, settings):
    settings.DASHBOARD_RATE_LIMIT_PER_MINUTE = 2
    path = f"/api/courses/{course.pk}/dashboard"
    assert [instructor_client.get(path).status_code for _ in range(2)] == [200, 200]
    refused_the_same_way(instructor_client.get(path), "rate")


def test_a_students_view_of_the_rate_is_their_own(course, instructor, settings, student_client):
    """Only instructors get snapshots: a student's 404 costs no one's limit."""
    settings.DASHBOARD_RATE_LIMIT_PER_MINUTE = 1
    for _ in range(3):
        assert student_client.get(f"/api/courses/{course.pk}/dashboard").status_code == 404
    assert client_of(instructor).get(f"/api/courses/{course.pk}/dashboard").status_code == 200
